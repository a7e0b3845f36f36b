package kinds

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/lock"
)

// A node that is down at the first contact cannot be identified then; the
// quorum carries on without it, and a later operation asks it again. When
// it comes up as a second path to a server already among the nodes (here a
// TCP forwarder to plain master 0 on another port), the next operations
// fail with the duplicate, naming both; a lock taken before can still be
// released.
func TestDuplicateFoundWhenALateNodeAnswers(t *testing.T) {
	require.NoError(t, plain.FlushAll(testCtx(t, 10*time.Second)))
	ctx := testCtx(t, 30*time.Second)

	// A loopback port nothing listens on yet.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	lateAddr := l.Addr().String()
	require.NoError(t, l.Close())

	s0, s1 := plain.List[0], plain.List[1]
	late := redis.NewClient(fixture.ClientOptions(lateAddr))
	closeLater(t, late)
	c := newLockClient(t, lock.Options{Nodes: universal(s0.Direct(), s1.Direct(), late)})

	held := c.NewMutex("kinds-late-before")
	require.NoError(t, held.Lock(ctx), "two of three nodes are a quorum")

	fwd := forward(t, lateAddr, s0.Addr())
	defer fwd()

	// The next operations trigger a new round (at most one a second);
	// within a few seconds one of them fails with the duplicate.
	var dupErr error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		m := c.NewMutex("kinds-late-after")
		ok, err := m.TryLock(ctx)
		if ok {
			require.NoError(t, m.Unlock(ctx))
		}
		if dupErr = err; errors.Is(err, lock.ErrInvalidArgument) {
			break
		}
	}
	require.ErrorIs(t, dupErr, lock.ErrInvalidArgument, "the late node was never identified")
	require.Contains(t, dupErr.Error(), "nodes 0 ("+s0.Addr()+") and 2 ("+lateAddr+") are the same server (run_id ")

	require.NoError(t, held.Unlock(ctx), "a lock taken before is still released")
	n, err := s0.Direct().Exists(ctx, lockKey("kinds-late-before")).Result()
	require.NoError(t, err)
	require.Zero(t, n)
}

// forward listens on from and copies every connection to and from to,
// until the returned stop is called.
func forward(t *testing.T, from, to string) (stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", from)
	require.NoError(t, err)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	track := func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		conns = append(conns, c)
	}
	wg.Go(func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.DialTimeout("tcp", to, time.Second)
			if err != nil {
				_ = in.Close()
				continue
			}
			track(in)
			track(out)
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				_ = dst.Close()
				_ = src.Close()
			}
			wg.Go(func() { pipe(out, in) })
			wg.Go(func() { pipe(in, out) })
		}
	})
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = l.Close()
			mu.Lock()
			for _, c := range conns {
				_ = c.Close()
			}
			mu.Unlock()
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	return stop
}

package integration_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/lock"
)

// These tests run relock with DEFAULT options (adaptive per-node timeouts),
// against a far, jittery node and on a loaded machine: no Lock or Unlock may
// fail where the node merely is slow.

// jitteryNode puts a proxy of its own in front of node 0 that delays every
// reply by latency ± jitter (uniform), and returns a go-redis client through
// it with go-redis's default settings, as a user would make one. The
// fixture's links have no jitter; this proxy is closed with the test.
func jitteryNode(t *testing.T, latency, jitter time.Duration) *redis.Client {
	t.Helper()
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	p := toxiproxy.NewProxy(server, name, "127.0.0.1:0", cluster.Nodes[0].Addr())
	require.NoError(t, p.Start())
	body := fmt.Sprintf(`{"name":"jitter","type":"latency","stream":"downstream","toxicity":1,"attributes":{"latency":%d,"jitter":%d}}`,
		latency.Milliseconds(), jitter.Milliseconds())
	_, err := p.Toxics.AddToxicJson(strings.NewReader(body))
	require.NoError(t, err)
	rdb := redis.NewClient(&redis.Options{Addr: p.Listen})
	t.Cleanup(func() {
		_ = rdb.Close()
		p.Stop()
	})
	return rdb
}

// cycles runs n sequential Lock/Unlock cycles of m and returns the errors,
// each Lock bounded by wait.
func cycles(m *lock.Mutex, n int, wait time.Duration) []error {
	var errs []error
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		if err := m.Lock(ctx); err != nil {
			errs = append(errs, fmt.Errorf("cycle %d: Lock: %w", i, err))
			cancel()
			continue
		}
		cancel()
		if err := m.Unlock(context.Background()); err != nil {
			errs = append(errs, fmt.Errorf("cycle %d: Unlock: %w", i, err))
		}
	}
	return errs
}

// TestSlowMasterDefaultOptions: a single master 100–200 ms away (and one
// 20–220 ms away, the harsher case of issue 9), reached by a new Client with
// default options: 40 Lock/Unlock cycles, none fails.
func TestSlowMasterDefaultOptions(t *testing.T) {
	for _, tc := range []struct{ latency, jitter time.Duration }{
		{150 * time.Millisecond, 50 * time.Millisecond},
		{120 * time.Millisecond, 100 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("%v±%v", tc.latency, tc.jitter), func(t *testing.T) {
			reset(t)
			rdb := jitteryNode(t, tc.latency, tc.jitter)
			c, err := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			m := c.NewMutex("far")
			start := time.Now()
			errs := cycles(m, 40, 10*time.Second)
			st := c.Stats()
			t.Logf("40 cycles in %v; attempts %d, acquired %d", time.Since(start).Round(time.Millisecond), st.Attempts, st.Acquired)
			require.Empty(t, errs, "no Lock or Unlock fails against a slow node")
			requireFree(t, 1, "far", 3*time.Second)
		})
	}
}

// TestSlowMinorityDefaultOptions: three masters, one of them 100–200 ms away
// behind a new Client with default options: 40 cycles without an error, and
// every node, the slow one included, ends free.
func TestSlowMinorityDefaultOptions(t *testing.T) {
	reset(t)
	require.NoError(t, cluster.Warm(t.Context()))
	nodes := cluster.Clients()[:3]
	nodes[0] = jitteryNode(t, 150*time.Millisecond, 50*time.Millisecond)
	c, err := lock.New(lock.Options{Nodes: nodes})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	m := c.NewMutex("far-minority")
	require.Empty(t, cycles(m, 40, 10*time.Second))
	requireFree(t, 3, "far-minority", 3*time.Second)
}

// TestNodeThatGotSlowerDefaultOptions: a node first answers at loopback
// speed (its timeout falls to the floor), then takes 300 ms per reply. The
// timeouts back off and learn the new round trip: no call fails for good.
func TestNodeThatGotSlowerDefaultOptions(t *testing.T) {
	c := reset(t)
	require.NoError(t, c.Warm(t.Context()))
	lc, err := lock.New(lock.Options{Nodes: c.Clients()[:1]})
	require.NoError(t, err)
	t.Cleanup(func() { _ = lc.Close() })
	m := lc.NewMutex("slower")
	require.Empty(t, cycles(m, 20, 10*time.Second))

	require.NoError(t, c.Nodes[0].Slow(300*time.Millisecond)) // below the fixture's 500 ms IOTimeout
	require.NoError(t, c.Warm(t.Context()))
	require.Empty(t, cycles(m, 10, 10*time.Second))
	st := lc.Stats()
	t.Logf("attempts %d, acquired %d", st.Attempts, st.Acquired)
	require.NoError(t, c.Nodes[0].Heal())
	requireFree(t, 1, "slower", 3*time.Second)
}

// TestLoadedClientDefaultOptions: one Client with default options on 3
// masters, with CPU burners in the same process (one per CPU, busy until the
// workers finish, and never beyond 50 s), completes 1,000 Lock/Unlock cycles
// over 8 goroutines without an error.
func TestLoadedClientDefaultOptions(t *testing.T) {
	c := reset(t)
	require.NoError(t, c.Warm(t.Context()))
	lc, err := lock.New(lock.Options{Nodes: c.Clients()[:3]})
	require.NoError(t, err)
	t.Cleanup(func() { _ = lc.Close() })

	var stop atomic.Bool
	burnUntil := time.Now().Add(50 * time.Second)
	var burners sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		burners.Go(func() {
			x := uint64(1)
			for i := 0; !stop.Load() && (i%1024 != 0 || time.Now().Before(burnUntil)); i++ {
				x = x*6364136223846793005 + 1442695040888963407 // busy, not optimized away
			}
			runtime.KeepAlive(x)
		})
	}
	defer burners.Wait()
	defer stop.Store(true)

	const workers, perWorker = 8, 125
	var (
		mu   sync.Mutex
		errs []error
		done atomic.Int64
		wg   sync.WaitGroup
	)
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			m := lc.NewMutex(fmt.Sprintf("loaded-%d", w))
			e := cycles(m, perWorker, 20*time.Second)
			done.Add(int64(perWorker - len(e)))
			mu.Lock()
			errs = append(errs, e...)
			mu.Unlock()
		})
	}
	wg.Wait()
	took := time.Since(start)
	stop.Store(true)
	st := lc.Stats()
	t.Logf("%d cycles in %v with %d burners; attempts %d, acquired %d", workers*perWorker, took.Round(time.Millisecond),
		runtime.GOMAXPROCS(0), st.Attempts, st.Acquired)
	require.Empty(t, errs, "no Lock or Unlock fails on a loaded client: %v", errors.Join(errs...))
	require.EqualValues(t, workers*perWorker, done.Load())
	for w := range workers {
		requireFree(t, 3, fmt.Sprintf("loaded-%d", w), 3*time.Second)
	}
}

// TestManyClientsDefaultOptions: the cell of issue 9 where relock alone
// failed (48 Unlock errors in 5 s with NodeTimeout 100 ms): 64 goroutines,
// each with its own Client and go-redis client, distinct names, 1 master,
// for 5 s, now with default options: no Lock or Unlock fails. (With the
// previous fixed 50 ms default it collapsed here: 9 cycles in 5 s.) The
// go-redis clients have go-redis's defaults, as a user's would: the
// fixture's 200 ms dial and 500 ms read timeouts are test settings that
// -race on two busy cores exceeds on its own, whatever relock waits.
func TestManyClientsDefaultOptions(t *testing.T) {
	c := reset(t)
	const goroutines = 64
	run, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var (
		mu     sync.Mutex
		errs   []error
		cycled atomic.Int64
		wg     sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for g := range goroutines {
		rdb := redis.NewClient(&redis.Options{Addr: c.Nodes[0].Link().Addr()})
		lc, err := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = lc.Close(); _ = rdb.Close() })
		wg.Go(func() {
			m := lc.NewMutex(fmt.Sprintf("many-%d", g))
			for run.Err() == nil {
				if err := m.Lock(run); err != nil {
					if run.Err() == nil {
						fail(fmt.Errorf("Lock: %w", err))
					}
					return
				}
				if err := m.Unlock(context.Background()); err != nil {
					fail(fmt.Errorf("Unlock: %w", err))
				}
				cycled.Add(1)
			}
		})
	}
	wg.Wait()
	t.Logf("%d cycles in 5s over %d Clients", cycled.Load(), goroutines)
	require.Empty(t, errs, "no Lock or Unlock fails: %v", errors.Join(errs...))
	require.Positive(t, cycled.Load())
}

// warmDefaultsMutex returns a Mutex named name of a Client with default
// options over the first n nodes, each through a go-redis client with
// go-redis's defaults, after 20 lock cycles: the nodes answered in ms, so
// their estimates sit at the 100 ms floor.
func warmDefaultsMutex(t *testing.T, n int, name string) (*lock.Client, *lock.Mutex) {
	t.Helper()
	reset(t)
	lc, err := lock.New(lock.Options{Nodes: defaultClients(t, n)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = lc.Close() })
	ctx := ctxFor(t, 10*time.Second)
	m := lc.NewMutex(name)
	for range 20 {
		require.NoError(t, m.Lock(ctx))
		require.NoError(t, m.Unlock(ctx))
	}
	return lc, m
}

// stallNode runs CLIENT PAUSE ALL on node 0 for d: it answers nothing until
// then. The test's clean-up waits until the pause is over.
func stallNode(t *testing.T, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	require.NoError(t, cluster.Nodes[0].Direct().Do(ctxFor(t, 5*time.Second), "CLIENT", "PAUSE", d.Milliseconds(), "ALL").Err())
	t.Cleanup(func() { time.Sleep(time.Until(end)) })
}

// TestUnlockWaitsOutAStalledNode: a node whose answers taught the Client
// the 100 ms floor stalls for 800 ms (CLIENT PAUSE) just as Unlock goes
// out, as a loopback node was seen to on two loaded cores. Unlock, with
// default options and go-redis's default client, waits it out and
// releases: a release waits a tenth of the lease, not a multiple of the
// node's usual round trip (4 × 100 ms ran out before the node answered).
func TestUnlockWaitsOutAStalledNode(t *testing.T) {
	_, m := warmDefaultsMutex(t, 1, "stalled-unlock")
	ctx := ctxFor(t, 20*time.Second)
	require.NoError(t, m.Lock(ctx))

	const stall = 800 * time.Millisecond
	stallNode(t, stall)
	start := time.Now()
	require.NoError(t, m.Unlock(ctx), "Unlock waits for a node that stalled for %v", stall)
	t.Logf("Unlock took %v across the %v stall", time.Since(start).Round(time.Millisecond), stall)
	require.Zero(t, m.HoldCount())
	requireFree(t, 1, "stalled-unlock", 2*time.Second)
}

// TestInspectWaitsOutAStalledNode: an operator's read shows every node's
// state, so Inspect and List wait for a stalled node as Unlock does, on 3
// masters whose other two answered at once: the node that stalled for
// 800 ms is read, not reported unreachable (a fresh relock CLI on a loaded
// machine showed a node "did not answer in time" after ~100 ms).
func TestInspectWaitsOutAStalledNode(t *testing.T) {
	lc, m := warmDefaultsMutex(t, 3, "stalled-inspect")
	ctx := ctxFor(t, 20*time.Second)
	require.NoError(t, m.Lock(ctx))
	defer func() { require.NoError(t, m.Unlock(ctx)) }()

	const stall = 800 * time.Millisecond
	stallNode(t, stall)
	start := time.Now()
	states, err := lc.Inspect(ctx, "stalled-inspect")
	require.NoError(t, err)
	t.Logf("Inspect took %v across the %v stall", time.Since(start).Round(time.Millisecond), stall)
	for _, s := range states {
		require.NoError(t, s.Err, "node %d is read, not reported unreachable", s.Node)
		require.Equal(t, map[string]int64{m.Owner(): 1}, s.Info.Holders, "node %d", s.Node)
	}

	time.Sleep(time.Until(start.Add(stall)))
	stallNode(t, stall)
	listing, err := lc.List(ctx, "stalled-*", 0)
	require.NoError(t, err)
	require.Empty(t, listing.Failed, "List reads the stalled node too")
	require.Equal(t, []string{"stalled-inspect"}, listing.Names)
}

// TestInspectPastASilentNodeIsQuick: a node that does not answer for
// longer than an operator's read waits (CLIENT PAUSE, 5 s) is reported
// unreachable after that wait once; from then on, until it answers again,
// it costs a read only its usual round trip, so reading many locks past
// it stays quick (relock ls reads each lock found).
func TestInspectPastASilentNodeIsQuick(t *testing.T) {
	lc, _ := warmDefaultsMutex(t, 3, "silent-inspect")
	ctx := ctxFor(t, 20*time.Second)

	const silent = 5 * time.Second
	stallNode(t, silent)
	for try, within := range []time.Duration{silent, time.Second, time.Second} {
		at := time.Now()
		states, err := lc.Inspect(ctx, "silent-inspect")
		took := time.Since(at)
		require.NoError(t, err)
		require.ErrorIs(t, states[0].Err, lock.ErrNodeTimeout, "read %d", try)
		require.NoError(t, states[1].Err)
		require.Less(t, took, within, "read %d of the silent node", try)
		t.Logf("read %d of the silent node took %v", try, took.Round(time.Millisecond))
	}
}

// TestFirstCallThroughASlowLinkTakesOneRoundTrip: a node never reached
// before, behind a link whose round trip is more than half the node
// timeout, takes the first TryLock: the acquire goes with its script's
// source (EVAL) in one round trip. Asked by SHA first, as before
// 2026-12-06, the NOSCRIPT reply and the EVAL after it took two, past the
// wait, and the TryLock failed.
func TestFirstCallThroughASlowLinkTakesOneRoundTrip(t *testing.T) {
	c := reset(t)
	ctx := ctxFor(t, 20*time.Second)
	const slow, nodeTimeout = 200 * time.Millisecond, 350 * time.Millisecond
	require.NoError(t, c.Nodes[0].Direct().ScriptFlush(ctx).Err())
	// Connections that send nothing of their own when made (no HELLO):
	// each call is one delayed reply.
	client := redis.NewClient(fixture.FixtureOptions(c.Nodes[0].Link().Addr()))
	t.Cleanup(func() { _ = client.Close() })
	require.NoError(t, c.Nodes[0].Slow(slow))
	t.Cleanup(func() { _ = c.Nodes[0].Heal() })
	require.NoError(t, client.Ping(ctx).Err()) // a connection in the pool

	lc := newLockClientOver(t, []redis.UniversalClient{client}, lock.Options{NodeTimeout: nodeTimeout})
	m := lc.NewMutex("first-call-slow-link")
	ok, err := m.TryLock(ctx)
	require.NoError(t, err)
	require.True(t, ok, "the first acquire through the slow link failed")
	require.NoError(t, m.Unlock(ctx))
}

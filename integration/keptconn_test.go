package integration_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/reentrant"
)

// A Node's round trips go over connections it keeps out of its client's
// pool between trips (reentrant/pipeline.go, keptConn): go-redis checks
// every connection it hands out with a system call, which a connection a
// trip just used does not need.

// keptConnNode returns a Node over a client of its own to node 0, named
// name (CLIENT SETNAME) so that the test can find its connections on the
// server, that client, and the node's direct client. set, when not nil,
// changes the client's options first. The node is closed, and then the
// client, when the test ends.
func keptConnNode(t *testing.T, name string, set func(*redis.Options)) (*reentrant.Node, *redis.Client, *redis.Client) {
	t.Helper()
	c := reset(t)
	opts := fixture.FixtureOptions(c.Nodes[0].Link().Addr())
	opts.ClientName = name
	if set != nil {
		set(opts)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	node := reentrant.NewNode(rdb, 0)
	t.Cleanup(node.Close)
	return node, rdb, c.Nodes[0].Direct()
}

// poolGets is how many connections rdb's pool has handed out.
func poolGets(rdb *redis.Client) uint32 {
	s := rdb.PoolStats()
	return s.Hits + s.Misses
}

// cycle takes and releases key once through node, as owner.
func cycle(t *testing.T, node *reentrant.Node, key reentrant.Key, owner string, seq *int64) error {
	t.Helper()
	a, err := node.Acquire(t.Context(), opFor(key, owner, 1, seq))
	if err != nil {
		return err
	}
	require.True(t, a.Acquired)
	r, err := node.Release(t.Context(), opFor(key, owner, 0, seq), "r")
	if err != nil {
		return err
	}
	require.Equal(t, reentrant.Released, r)
	return nil
}

func TestReentrantNodeKeepsItsConnectionBetweenTrips(t *testing.T) {
	node, rdb, _ := keptConnNode(t, "kept-between-trips", nil)
	key := mustKey(t, "kept-between-trips")
	var seq int64

	before := poolGets(rdb)
	const cycles = 50
	for range cycles {
		require.NoError(t, cycle(t, node, key, "c:kept", &seq))
	}
	gets := poolGets(rdb) - before
	// One get for the first trip, and one after each stall of the loop
	// longer than keptIdle on a loaded machine; through the pool alone,
	// one per call.
	require.Less(t, gets, uint32(cycles/2), "%d sequential calls took %d connections from the pool", 2*cycles, gets)

	// Kept between trips, and given back by Close (one cycle right
	// before each look, so the idle timer has not given it back already).
	inUse := func() uint32 { s := rdb.PoolStats(); return s.TotalConns - s.IdleConns }
	require.Eventually(t, func() bool {
		require.NoError(t, cycle(t, node, key, "c:kept", &seq))
		return inUse() == 1
	}, 10*time.Second, time.Millisecond, "the node keeps the connection it used")
	node.Close()
	require.Zero(t, inUse(), "Close gives the kept connection back to the pool")
}

func TestReentrantNodeGivesBackAnIdleConnection(t *testing.T) {
	node, rdb, _ := keptConnNode(t, "kept-given-back", nil)
	key := mustKey(t, "kept-given-back")
	var seq int64
	require.NoError(t, cycle(t, node, key, "c:idle", &seq))
	require.Eventually(t, func() bool { s := rdb.PoolStats(); return s.TotalConns == s.IdleConns },
		10*time.Second, 10*time.Millisecond, "a node that went quiet keeps no connection out of the pool")
}

func TestReentrantNodeRedialsAfterItsConnectionIsKilled(t *testing.T) {
	const name = "kept-killed"
	node, _, direct := keptConnNode(t, name, nil)
	key := mustKey(t, name)
	var seq int64
	require.NoError(t, cycle(t, node, key, "c:killed", &seq))

	ids := clientIDsNamed(t, direct, name)
	require.Len(t, ids, 1, "the node's one kept connection")
	require.NoError(t, direct.ClientKillByFilter(t.Context(), "ID", ids[0]).Err())

	// The kept connection fails its next trip (nothing checks it before
	// it is used, as nothing checks a connection that breaks in use), and
	// is dropped: the trip after it dials anew.
	first := cycle(t, node, key, "c:killed", &seq)
	if first != nil {
		var server redis.Error
		require.NotErrorAs(t, first, &server, "a broken connection, not the server's answer: %v", first)
	}
	require.NoError(t, cycle(t, node, key, "c:killed", &seq), "the trip after a broken one goes over a new connection")
	ids = clientIDsNamed(t, direct, name)
	require.Len(t, ids, 1, "the killed connection was dropped, one new one kept")
}

// A connection answered READONLY (the node was demoted) goes back to the
// pool, which drops it, as go-redis does: go-redis marks such a Conn bad,
// and before 2026-12-04 the node kept it, and every trip on it failed
// with the READONLY wrapped until it went 100 ms unused, also once the
// node was a master again.
func TestReentrantNodeDropsAConnectionAnsweredReadOnly(t *testing.T) {
	const name = "kept-readonly"
	node, _, direct := keptConnNode(t, name, nil)
	key := mustKey(t, name)
	var seq int64
	require.NoError(t, cycle(t, node, key, "c:readonly", &seq))

	// A replica of a master that is not there: it answers writes READONLY.
	require.NoError(t, direct.Do(t.Context(), "REPLICAOF", "127.0.0.1", "1").Err())
	t.Cleanup(func() { _ = direct.Do(context.Background(), "REPLICAOF", "NO", "ONE").Err() })
	_, err := node.Acquire(t.Context(), opFor(key, "c:readonly", 1, &seq))
	require.True(t, redis.IsReadOnlyError(err), "a demoted node's answer: %v", err)
	require.NoError(t, direct.Do(t.Context(), "REPLICAOF", "NO", "ONE").Err())
	require.NoError(t, cycle(t, node, key, "c:readonly", &seq), "a master again, it takes the next trip")
}

func TestReentrantNodeGivesBackAConnectionIdleTooLong(t *testing.T) {
	// Redis closes a client idle for its timeout (CONFIG SET timeout, in
	// whole seconds); a kept connection idle for keptIdle (well under a
	// second) went back to the pool, whose check finds it closed and dials
	// another.
	const name = "kept-idle"
	node, rdb, direct := keptConnNode(t, name, nil)
	ctx := t.Context()
	old, err := direct.ConfigGet(ctx, "timeout").Result()
	require.NoError(t, err)
	require.NoError(t, direct.ConfigSet(ctx, "timeout", "1").Err())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = direct.ConfigSet(ctx, "timeout", old["timeout"]).Err()
	})

	key := mustKey(t, name)
	var seq int64
	require.NoError(t, cycle(t, node, key, "c:idle", &seq))
	// A connection through the same link, opened after the node's last
	// trip: the server closes it for its idleness no sooner than the
	// node's.
	probe, err := net.Dial("tcp", cluster.Nodes[0].Link().Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = probe.Close() })
	require.Eventually(t, func() bool {
		s := rdb.PoolStats()
		return s.TotalConns > 0 && s.IdleConns == s.TotalConns
	}, 5*time.Second, 10*time.Millisecond, "the node gives its idle connection back to the pool")
	require.Eventually(t, func() bool { return len(clientIDsNamed(t, direct, name)) == 0 },
		10*time.Second, 50*time.Millisecond, "the server closes the idle connection")
	// The close reaches this process through the link's proxy and
	// Docker's, each passing it on in its own time (under load, after the
	// node's next trip had left: "connection reset by peer"). The probe's
	// close, no sooner than the node's, tells when it has come through.
	require.Eventually(t, func() bool { return closedByPeer(probe) }, 10*time.Second, 20*time.Millisecond,
		"the server's close reaches this process")
	require.NoError(t, cycle(t, node, key, "c:idle", &seq), "a connection idle past its server's timeout is not used")
}

// closedByPeer reports whether conn's peer has closed it: a read finds the
// end of the stream (or a reset) rather than waiting.
func closedByPeer(conn net.Conn) bool {
	if err := conn.SetReadDeadline(time.Now().Add(time.Millisecond)); err != nil {
		return true
	}
	_, err := conn.Read(make([]byte, 1))
	var netErr net.Error
	return err != nil && !(errors.As(err, &netErr) && netErr.Timeout())
}

// clientIDsNamed returns the ids of the connections named name on rdb's
// server (CLIENT LIST).
func clientIDsNamed(t *testing.T, rdb *redis.Client, name string) []string {
	t.Helper()
	list, err := rdb.ClientList(t.Context()).Result()
	require.NoError(t, err)
	var ids []string
	sc := bufio.NewScanner(strings.NewReader(list))
	for sc.Scan() {
		fields := map[string]string{}
		for _, f := range strings.Fields(sc.Text()) {
			if k, v, ok := strings.Cut(f, "="); ok {
				fields[k] = v
			}
		}
		if fields["name"] == name {
			ids = append(ids, fields["id"])
		}
	}
	return ids
}

func TestReentrantNodeKeepsNothingOfAPoolOfOne(t *testing.T) {
	// The one connection serves the node's trips and everyone else's in
	// turn, as the pool hands it out: the node never holds it between
	// trips.
	node, rdb, _ := keptConnNode(t, "kept-pool-of-one", func(o *redis.Options) { o.PoolSize = 1 })
	key := mustKey(t, "kept-pool-of-one")
	var seq int64
	for range 3 {
		require.NoError(t, cycle(t, node, key, "c:one", &seq))
		s := rdb.PoolStats()
		require.Equal(t, s.TotalConns, s.IdleConns, "nothing kept out of a pool of one")
	}
}

func TestReentrantNodeKeepsConnectionsOfAFreshRESP3ClientWithoutARace(t *testing.T) {
	// go-redis lets a Conn write the client's Options while the client
	// sets up a connection of its own (see keptConns, warm): run under
	// -race, a node's first trips at once, beside a Pub/Sub connection
	// being set up, must not make Conns before a trip of the client's own.
	// The race is in a client's first moments, and the detector sees it
	// in some of them: each round starts a fresh client.
	for round := range 8 {
		t.Run(strconv.Itoa(round), firstTripsOfAFreshRESP3Client)
	}
}

// firstTripsOfAFreshRESP3Client makes a fresh RESP3 client's node take
// and release 16 locks five times each, at once, while the client sets up
// a Pub/Sub connection.
func firstTripsOfAFreshRESP3Client(t *testing.T) {
	node, rdb, _ := keptConnNode(t, "fresh-resp3", func(o *redis.Options) {
		o.Protocol = 3 // go-redis's default, under which it writes
	})
	ps := rdb.Subscribe(t.Context())
	t.Cleanup(func() { _ = ps.Close() })
	var wg sync.WaitGroup
	wg.Go(func() { _ = ps.Ping(t.Context()) })
	for g := range 16 {
		wg.Go(func() {
			key := mustKey(t, "fresh-resp3:"+strconv.Itoa(g))
			var seq int64
			for range 5 {
				if err := cycle(t, node, key, "c:"+strconv.Itoa(g), &seq); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

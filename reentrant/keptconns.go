package reentrant

import (
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// keptConns holds the connections a node's round trips keep out of its
// go-redis client's pool between trips. go-redis checks each connection
// its pool hands out, with a system call (a peek for a close by the
// server) and three allocations, and a lone call through the pool pays
// for that every time; a connection a trip used a moment ago needs no such
// check, for Redis closes an idle client only after a timeout of whole
// seconds.
//
// What keeps the pool usable for everyone else: a node keeps at most half
// of the pool's size (none of a pool of one) and DefaultPipelines; it gives
// back every connection unused for keptIdle, on a timer, so a node gone
// quiet holds none a moment later; its own renewal batches and changes
// (Apply) go over its kept connections too, so they never wait in the pool
// behind them. Several lock Clients over one go-redis client each keep
// their own: its pool should have room for what they keep together
// besides the application's own commands (go-redis's default, ten per
// CPU, has). A connection that may have broken (any failure but the
// server's answer) is given back, and the pool drops it as it would have.
//
// Only a *redis.Client's connections are kept: other clients (a cluster's,
// a ring's) route each call, and trips go through them as before.
//
// A node keeps none until one of its trips through the client itself came
// back (warm). go-redis (v9.23) gives a Conn the client's own Options but a
// lock of its own, and the first connections a RESP3 client (its default)
// sets up to a server without maintenance notifications (Redis before 8)
// switch them off by writing those Options: a Conn setting up a connection
// then races with the client setting up another (the race detector caught
// it, with a Pub/Sub connection). Once a connection of the client's own is
// set up, the setting is final and nothing writes it again, so Conns made
// after that trip, and ordered after it by mu, only read it.
type keptConns struct {
	client *redis.Client // nil: nothing is kept
	max    int           // connections kept at most

	mu     sync.Mutex
	kept   []keptConn // most recently used last
	warm   bool       // a trip through the client came back: Conns may be made
	idle   *time.Timer
	armed  bool // idle will fire
	closed bool
}

// keptConn is a kept connection and when its last trip came back.
type keptConn struct {
	conn *redis.Conn
	used time.Time
}

// keptIdle is how long a kept connection may go unused before it goes
// back to the pool: well below the shortest timeout Redis closes an idle
// client after (1 s), so a kept connection is never one the server closed
// for idleness, and short enough that a caller of the pool's waiting for
// one (a small pool shared with the application) waits no longer. A busy
// node reuses its connections within microseconds. A hook added to the
// client reaches a kept connection's calls once it has gone back.
const keptIdle = 100 * time.Millisecond

// newKeptConns returns the kept connections of a node over rdb.
func newKeptConns(rdb redis.UniversalClient) *keptConns {
	k := &keptConns{}
	if c, ok := rdb.(*redis.Client); ok {
		k.client = c
		k.max = min(DefaultPipelines, c.Options().PoolSize/2)
	}
	return k
}

// with runs trip over a kept connection (see take), or over rdb when the
// node keeps none. trip reports whether its connection may have broken.
func (k *keptConns) with(rdb sender, trip func(to sender) (broken bool)) {
	conn := k.take()
	if conn == nil {
		if !trip(rdb) && k.max > 0 {
			k.mu.Lock()
			k.warm = true
			k.mu.Unlock()
		}
		return
	}
	k.put(conn, trip(conn))
}

// take returns a connection for a trip: the one kept most recently, or a
// new one out of the pool; nil when the node keeps none, or none yet (the
// trip then goes through the client as it is).
func (k *keptConns) take() *redis.Conn {
	if k.max == 0 {
		return nil
	}
	k.mu.Lock()
	if !k.warm {
		k.mu.Unlock()
		return nil
	}
	if n := len(k.kept); n > 0 && time.Since(k.kept[n-1].used) < keptIdle {
		conn := k.kept[n-1].conn
		k.kept[n-1] = keptConn{}
		k.kept = k.kept[:n-1]
		k.mu.Unlock()
		return conn
	}
	k.mu.Unlock()
	// None, or only idle ones the timer has yet to give back (it runs
	// late on a loaded machine): the pool's check serves this trip.
	return k.client.Conn()
}

// put keeps conn, back from a trip, for the next one; or gives it back to
// the pool when broken says the trip may have broken it, the node keeps
// its most already, or Close ran.
func (k *keptConns) put(conn *redis.Conn, broken bool) {
	k.mu.Lock()
	if broken || k.closed || len(k.kept) >= k.max {
		k.mu.Unlock()
		_ = conn.Close() // back to the pool, which drops it if go-redis marked it bad
		return
	}
	k.kept = append(k.kept, keptConn{conn: conn, used: time.Now()})
	if !k.armed {
		k.armed = true
		if k.idle == nil {
			k.idle = time.AfterFunc(keptIdle, k.giveBackIdle)
		} else {
			k.idle.Reset(keptIdle)
		}
	}
	k.mu.Unlock()
}

// giveBackIdle runs on the timer: the connections unused for keptIdle go
// back to the pool, and the timer is set again for the others.
func (k *keptConns) giveBackIdle() {
	k.mu.Lock()
	now := time.Now()
	i := 0 // kept[:i] are idle: kept is in the order of use
	for i < len(k.kept) && now.Sub(k.kept[i].used) >= keptIdle {
		i++
	}
	idle := make([]keptConn, i)
	copy(idle, k.kept[:i])
	k.kept = append(k.kept[:0], k.kept[i:]...)
	k.armed = len(k.kept) > 0
	if k.armed {
		k.idle.Reset(keptIdle - now.Sub(k.kept[0].used))
	}
	k.mu.Unlock()
	giveBack(idle)
}

// close gives every kept connection back to the pool, and keeps none from
// now on.
func (k *keptConns) close() {
	k.mu.Lock()
	kept := k.kept
	k.kept, k.closed = nil, true
	if k.idle != nil {
		k.idle.Stop()
	}
	k.armed = false
	k.mu.Unlock()
	giveBack(kept)
}

// giveBack returns kept connections to the pool.
func giveBack(kept []keptConn) {
	for _, c := range kept {
		_ = c.conn.Close()
	}
}

// brokeConn reports whether err, a call's failure, may have left its
// connection unusable: any failure but the server's own answer (a shortfall
// of replicas included, see shortfallError), and the one
// answer go-redis drops a connection after, READONLY (the node was demoted:
// an address by name may lead elsewhere now). go-redis marks a Conn that got
// it bad, and the Conn then fails every later call with it wrapped, so one
// kept failed each call until it went 100 ms unused.
func brokeConn(err error) bool {
	if err == nil {
		return false // first: the errors.As targets below escape, an allocation each
	}
	var short *shortfallError
	if errors.As(err, &short) {
		// Too few replicas is the node's answer; a WAIT that failed, the
		// WAIT's own failure.
		return short.cause != nil && brokeConn(short.cause)
	}
	var server redis.Error
	return !errors.As(err, &server) || redis.IsReadOnlyError(err)
}

package lock

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/relock-go/relock/reentrant"
)

func TestNameOfKeyUndoesNewKey(t *testing.T) {
	for _, name := range []string{"a", "orders:42", "}", "%", "%7D", "%25}", "{x}", "a b\nc", "ünï"} {
		for _, prefix := range []string{"relock", "app:{x", "p*"} {
			key, err := reentrant.NewKey(prefix, name)
			if err != nil {
				t.Fatal(err)
			}
			sem, err := reentrant.NewSemaphoreKey(prefix, name)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{key.Lock, key.Readers(), sem.Lock} {
				got, ok := nameOfKey(prefix, k)
				if !ok || got != name {
					t.Errorf("nameOfKey(%q, %q) = %q, %v; want %q", prefix, k, got, ok, name)
				}
			}
			for _, other := range []string{key.Fence, key.Tombstone("c:o"), key.Channel, key.Queue, key.ReadLeases(), key.ReadTombstone("c:o"), key.WriterWaiting(), sem.Leases, sem.Tombstone("c:o"), sem.Channel} {
				if got, ok := nameOfKey(prefix, other); ok {
					t.Errorf("nameOfKey(%q, %q) = %q: not a lock hash", prefix, other, got)
				}
			}
		}
	}
	if got, ok := nameOfKey("relock", "other:{a}"); ok {
		t.Errorf("a key of another prefix gave %q", got)
	}
}

func TestGlobEscaperKeepsPrefixLiteral(t *testing.T) {
	if got, want := globEscaper.Replace(`a*b?[c]\`), `a\*b\?\[c\]\\`; got != want {
		t.Fatalf("globEscaper = %q; want %q", got, want)
	}
}

func state(node int, ttl time.Duration, holders map[string]int64) NodeState {
	return NodeState{Node: node, Info: reentrant.Info{Holders: holders, TTL: ttl}}
}

func TestQuorumHolder(t *testing.T) {
	down := NodeState{Node: 2, Err: errors.New("down")}
	for _, tc := range []struct {
		name   string
		states []NodeState
		quorum int
		want   Holder
		held   bool
	}{
		{"free", []NodeState{state(0, -2, nil), state(1, -2, nil), state(2, -2, nil)}, 2, Holder{}, false},
		{"one node", []NodeState{state(0, 5*time.Second, map[string]int64{"a": 2})}, 1,
			Holder{Owner: "a", Count: 2, TTL: 5 * time.Second, Nodes: 1}, true},
		{"quorum-th lease and count", []NodeState{
			state(0, 9*time.Second, map[string]int64{"a": 3}),
			state(1, 5*time.Second, map[string]int64{"a": 2}),
			state(2, 7*time.Second, map[string]int64{"a": 2}),
		}, 2, Holder{Owner: "a", Count: 2, TTL: 7 * time.Second, Nodes: 3}, true},
		{"minority only", []NodeState{
			state(0, time.Second, map[string]int64{"a": 1}),
			state(1, time.Second, map[string]int64{"b": 1}),
			down,
		}, 2, Holder{}, false},
		{"unreadable node counts for no one", []NodeState{
			state(0, time.Second, map[string]int64{"a": 1}),
			state(1, -2, nil),
			down,
		}, 2, Holder{}, false},
		{"no expiry", []NodeState{
			state(0, NoExpiry, map[string]int64{"a": 1}),
			state(1, NoExpiry, map[string]int64{"a": 1}),
			state(2, time.Second, map[string]int64{"a": 1}),
		}, 2, Holder{Owner: "a", Count: 1, TTL: NoExpiry, Nodes: 3}, true},
	} {
		got, held := QuorumHolder(tc.states, tc.quorum)
		if got != tc.want || held != tc.held {
			t.Errorf("%s: QuorumHolder = %+v, %v; want %+v, %v", tc.name, got, held, tc.want, tc.held)
		}
	}
}

func readers(node int, holds map[string]reentrant.LeasedHold) NodeState {
	return NodeState{Node: node, Info: reentrant.Info{TTL: -2, Readers: holds}}
}

func TestQuorumReaders(t *testing.T) {
	hold := func(count int64, ttl time.Duration) reentrant.LeasedHold {
		return reentrant.LeasedHold{Count: count, TTL: ttl}
	}
	states := []NodeState{
		readers(0, map[string]reentrant.LeasedHold{"a": hold(2, 9*time.Second), "b": hold(1, time.Second), "c": hold(1, time.Second)}),
		readers(1, map[string]reentrant.LeasedHold{"a": hold(1, 5*time.Second), "b": hold(1, 2*time.Second)}),
		readers(2, map[string]reentrant.LeasedHold{"a": hold(2, 7*time.Second)}),
		{Node: 3, Err: errors.New("down")},
		{Node: 4, Info: reentrant.Info{TTL: time.Second, Holders: map[string]int64{"w": 1}}},
	}
	// quorum 3 of 5: a on three nodes, b on two (a minority), c on one; the
	// writer w is QuorumHolder's, not a reader.
	want := []Holder{{Owner: "a", Count: 1, TTL: 5 * time.Second, Nodes: 3}}
	if got := QuorumReaders(states, 3); !slices.Equal(got, want) {
		t.Errorf("QuorumReaders(quorum 3) = %+v; want %+v", got, want)
	}
	// quorum 2: b too, with the lease both its copies still have; sorted by owner.
	want = []Holder{{Owner: "a", Count: 2, TTL: 7 * time.Second, Nodes: 3}, {Owner: "b", Count: 1, TTL: time.Second, Nodes: 2}}
	if got := QuorumReaders(states, 2); !slices.Equal(got, want) {
		t.Errorf("QuorumReaders(quorum 2) = %+v; want %+v", got, want)
	}
	if h, held := QuorumHolder(states, 2); held {
		t.Errorf("QuorumHolder counted readers: %+v", h)
	}
}

func TestQuorumPermits(t *testing.T) {
	hold := func(permits int64, ttl time.Duration) reentrant.LeasedHold {
		return reentrant.LeasedHold{Count: permits, TTL: ttl}
	}
	permits := func(node int, holds map[string]reentrant.LeasedHold) NodeState {
		return NodeState{Node: node, Info: reentrant.Info{TTL: -2, Permits: holds}}
	}
	states := []NodeState{
		permits(0, map[string]reentrant.LeasedHold{"a": hold(2, 4*time.Second), "b": hold(1, time.Second)}),
		permits(1, map[string]reentrant.LeasedHold{"a": hold(2, 6*time.Second), "b": hold(1, 3*time.Second)}),
		permits(2, map[string]reentrant.LeasedHold{"a": hold(2, 5*time.Second)}),
		{Node: 3, Info: reentrant.Info{TTL: -2, Readers: map[string]reentrant.LeasedHold{"b": hold(1, time.Second)}}},
	}
	// A semaphore of 2 permits on 4 nodes needs 3 (SemaphoreQuorum): a
	// only; b's read hold on node 3 is an RWMutex's, not a permit.
	want := []Holder{{Owner: "a", Count: 2, TTL: 4 * time.Second, Nodes: 3}}
	if got := QuorumPermits(states, SemaphoreQuorum(4, 2)); !slices.Equal(got, want) {
		t.Errorf("QuorumPermits(quorum 3) = %+v; want %+v", got, want)
	}
	// With a quorum of 2, b too, with the lease both its copies still have.
	want = []Holder{{Owner: "a", Count: 2, TTL: 5 * time.Second, Nodes: 3}, {Owner: "b", Count: 1, TTL: time.Second, Nodes: 2}}
	if got := QuorumPermits(states, 2); !slices.Equal(got, want) {
		t.Errorf("QuorumPermits(quorum 2) = %+v; want %+v", got, want)
	}
	if got := QuorumReaders(states, 1); len(got) != 1 || got[0].Owner != "b" {
		t.Errorf("QuorumReaders counted permits: %+v", got)
	}
	if h, held := QuorumHolder(states, 1); held {
		t.Errorf("QuorumHolder counted permits: %+v", h)
	}
}

func TestWaitersInTheOrderTheLockGoesToThem(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1_800_000_000, 0).Add(time.Duration(s) * time.Millisecond) }
	queue := func(node int, waiters ...reentrant.Waiter) NodeState {
		return NodeState{Node: node, Info: reentrant.Info{TTL: -2, Waiters: waiters, Queued: int64(len(waiters))}}
	}
	w := func(owner string, since int) reentrant.Waiter {
		return reentrant.Waiter{Owner: owner, Since: at(since), TTL: time.Second}
	}
	states := []NodeState{
		queue(0, w("c", 1), w("b", 2), w("a", 2)),
		queue(1, w("b", 2)),
		{Node: 2, Err: errors.New("down"), Info: reentrant.Info{Waiters: []reentrant.Waiter{w("z", 0)}}},
		queue(3, w("a", 2), w("d", 3)),
	}
	// By ticket, then by owner, as Redis orders a sorted set; each counted
	// once per node that has it; an unreadable node counts for no one.
	want := []Waiter{{Owner: "c", Since: at(1), Nodes: 1}, {Owner: "a", Since: at(2), Nodes: 2}, {Owner: "b", Since: at(2), Nodes: 2}, {Owner: "d", Since: at(3), Nodes: 1}}
	if got := Waiters(states, 3); !slices.Equal(got, want) {
		t.Errorf("Waiters = %+v; want %+v", got, want)
	}
	if got := Waiters(states[2:3], 1); len(got) != 0 {
		t.Errorf("Waiters of no readable node = %+v", got)
	}
	// a holds the lock on a quorum (3 of 4): it waits no more, though its
	// entries stay; on a minority it still waits (an attempt keeping nodes).
	for _, i := range []int{0, 1, 3} {
		states[i].Info.Holders = map[string]int64{"a": 1}
	}
	want = []Waiter{{Owner: "c", Since: at(1), Nodes: 1}, {Owner: "b", Since: at(2), Nodes: 2}, {Owner: "d", Since: at(3), Nodes: 1}}
	if got := Waiters(states, 3); !slices.Equal(got, want) {
		t.Errorf("Waiters with a holding a quorum = %+v; want %+v", got, want)
	}
	if got := Waiters(states, 4); len(got) != 4 {
		t.Errorf("Waiters with a holding a minority = %+v; want all four", got)
	}

	// Where the nodes disagree on a ticket (an older entry left on one),
	// the tie-breaker's, which hands the lock on, places the owner.
	differ := []NodeState{queue(0, w("e", 1), w("f", 5)), queue(1, w("e", 9), w("f", 5))}
	differ[1].TieBreaker = true
	want = []Waiter{{Owner: "f", Since: at(5), Nodes: 2}, {Owner: "e", Since: at(9), Nodes: 2}}
	if got := Waiters(differ, 2); !slices.Equal(got, want) {
		t.Errorf("Waiters with tickets that differ = %+v; want %+v", got, want)
	}
}

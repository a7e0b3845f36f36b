package pubsub

import (
	"slices"
	"testing"
	"time"
)

func TestParseMessage(t *testing.T) {
	for _, tc := range []struct {
		payload string
		want    message
	}{
		{"", message{kind: anyWaiter}},
		{"c:o/7", message{kind: anyWaiter, id: "c:o/7"}},
		{"c:o/7 k", message{kind: keepersOnly, id: "c:o/7"}},
		{"c:o/7 c:a c:b", message{kind: handOff, id: "c:o/7", target: "c:a", next: "c:b"}},
		{"c:o/7 c:a ", message{kind: handOff, id: "c:o/7", target: "c:a"}},
		{"c:o/7  ", message{kind: handOff, id: "c:o/7"}},
		{"c:o/7 odd", message{kind: anyWaiter, id: "c:o/7 odd"}},
		{" x y", message{kind: anyWaiter}},
		{"c:o/7 *3", message{kind: anyWaiter, id: "c:o/7", need: 3}},
		{"c:o/7 *0", message{kind: anyWaiter, id: "c:o/7 *0"}},
		{"c:o/7 *x", message{kind: anyWaiter, id: "c:o/7 *x"}},
	} {
		if got := parseMessage(tc.payload); got != tc.want {
			t.Errorf("parseMessage(%q) = %+v, want %+v", tc.payload, got, tc.want)
		}
	}
	if n := parseMessage("c:o/7").copiesNeeded(2); n != 2 {
		t.Errorf("a copy for any waiter needs %d copies, want the quorum, 2", n)
	}
	if n := parseMessage("c:o/7 *3").copiesNeeded(2); n != 3 {
		t.Errorf("a copy that asks for 3 copies needs %d, want 3", n)
	}
	for _, p := range []string{"c:o/7 k", "c:o/7 c:a c:b"} {
		if n := parseMessage(p).copiesNeeded(2); n != 1 {
			t.Errorf("%q needs %d copies, want 1", p, n)
		}
	}
}

// ownedWaiters registers one waiter per owner on channel, in order.
func ownedWaiters(r *registry, channel string, owners ...string) []*Waiter {
	ws := newTestWaiters(r, channel, len(owners))
	for i, w := range ws {
		w.owner = owners[i]
		w.ignore = owners[i] + "/"
	}
	return ws
}

func TestRegistryHandOffWakesItsTargetOnly(t *testing.T) {
	r := newRegistry()
	ws := ownedWaiters(r, "c", "a:1", "b:1", "t:1", "n:1")

	ok, watch := r.dispatch("c", "o:1/1 t:1 n:1")
	if !ok {
		t.Fatal("a hand-off reported unclaimed")
	}
	if got := woken(ws); !slices.Equal(got, []int{2}) {
		t.Fatalf("woken %v, want only the target [2]", got)
	}
	if watch != ws[3] {
		t.Fatalf("watch = %p, want the next in line %p", watch, ws[3])
	}
	if ws[2].why != WokenHandOff || ws[0].why != WokenOther {
		t.Fatal("only the target is marked handed off")
	}

	// A target of another process: nobody here wakes, and that is no
	// unclaimed release.
	ok, watch = r.dispatch("c", "o:1/2 elsewhere:1 ")
	if !ok || watch != nil || len(woken(ws)) != 0 {
		t.Fatalf("a hand-off to another process: claimed %v, watch %v, woke %v", ok, watch, woken(ws))
	}

	// An empty target: the queue was empty, any waiter goes.
	if ok, _ := r.dispatch("c", "o:1/3  "); !ok || len(woken(ws)) != 1 {
		t.Fatal("a hand-off to nobody in particular woke no one")
	}
}

func TestRegistryKeepersOnlyWakesAFirstWaiterOrNoOne(t *testing.T) {
	r := newRegistry()
	ws := ownedWaiters(r, "c", "c:a", "c:b")
	if ok, _ := r.dispatch("c", "c:o/1 k"); ok || len(woken(ws)) != 0 {
		t.Fatal("a keepers-only copy woke a waiter that keeps nothing")
	}
	ws[1].first = true
	if ok, _ := r.dispatch("c", "c:o/2 k"); !ok {
		t.Fatal("a keepers-only copy found no keeper")
	}
	if got := woken(ws); !slices.Equal(got, []int{1}) {
		t.Fatalf("woken %v, want the keeper [1]", got)
	}
}

// The target of a hand-off goes to every node at once, possibly before
// the releaser's other nodes have freed the lock: their copies for keepers,
// arriving while its attempt runs, must wake it rather than be dropped.
func TestRegistryHandOffTargetHearsTheKeepersCopies(t *testing.T) {
	r := newRegistry()
	ws := ownedWaiters(r, "c", "c:a", "c:t")
	if ok, _ := r.dispatch("c", "c:o/1 c:t "); !ok {
		t.Fatal("a hand-off reported unclaimed")
	}
	if got := woken(ws); !slices.Equal(got, []int{1}) {
		t.Fatalf("woken %v, want the target [1]", got)
	}
	if ok, _ := r.dispatch("c", "c:o/1 k"); !ok {
		t.Fatal("the keepers' copy of the handed-off release woke no one")
	}
	if got := woken(ws); !slices.Equal(got, []int{1}) {
		t.Fatalf("woken %v, want the target [1] again", got)
	}
}

func TestDedupKeepersCopyIsDueAtOnce(t *testing.T) {
	d := newDedup(time.Second, 3, 2)
	now := time.Now()
	if wake, pending := d.observe("c", "c:o/1 k", 1, now); !wake || pending != nil {
		t.Fatal("a keepers-only copy is due at once")
	}
	if wake, _ := d.observe("c", "c:o/1 k", 1, now); wake {
		t.Fatal("a second keepers-only copy of one release woke again")
	}
}

// A hand-off whose target, or next in line, was a waiter of this process
// that gave up goes to another waiter of the same process instead: the
// queue's entry outlived its waiter.
func TestRegistryHandOffToAGoneWaiterGoesToAnotherOfItsProcess(t *testing.T) {
	r := newRegistry()
	ws := ownedWaiters(r, "c", "p1:a", "p2:x", "p1:b", "p2:y")
	ok, watch := r.dispatch("c", "p9:o/1 p1:gone p2:gone")
	if !ok {
		t.Fatal("a hand-off reported unclaimed")
	}
	if got := woken(ws); !slices.Equal(got, []int{0}) {
		t.Fatalf("woken %v, want the gone target's process's oldest waiter [0]", got)
	}
	if ws[0].why != WokenHandOff {
		t.Fatal("the stand-in goes straight to every node, as the target would")
	}
	if watch != ws[1] {
		t.Fatalf("watch = %p, want the gone next's process's oldest waiter %p", watch, ws[1])
	}

	// Another process's target: nobody here stands in.
	if _, watch := r.dispatch("c", "p9:o/2 p7:t p8:n"); watch != nil || len(woken(ws)) != 0 {
		t.Fatal("a hand-off between other processes woke or watched a waiter here")
	}
}

// A stand-in for a gone target is never the waiter the next in line needs:
// here the process's other waiter, x, is the only stand-in there is for
// the gone next, and the exact target is present, so x is the watch
// whatever its place in the queue.
func TestRegistryHandOffStandInsDoNotUseUpEachOther(t *testing.T) {
	for _, owners := range [][]string{{"p1:t", "p1:x"}, {"p1:x", "p1:t"}} {
		r := newRegistry()
		ws := ownedWaiters(r, "c", owners...)
		target, x := ws[slices.Index(owners, "p1:t")], ws[slices.Index(owners, "p1:x")]
		_, watch := r.dispatch("c", "p9:o/1 p1:t p1:gone")
		if watch != x {
			t.Fatalf("queue %v: watch = %p, want x %p", owners, watch, x)
		}
		if !target.takeWake() || x.takeWake() {
			t.Fatalf("queue %v: the target alone is woken", owners)
		}
	}
	// The target gone too: one waiter stands in for it, the other watches.
	r := newRegistry()
	ws := ownedWaiters(r, "c", "p1:a", "p1:b")
	_, watch := r.dispatch("c", "p9:o/2 p1:gone p1:gone2")
	if got := woken(ws); !slices.Equal(got, []int{0}) || watch != ws[1] {
		t.Fatalf("woken %v, watch %p; want [0] and %p", got, watch, ws[1])
	}
}

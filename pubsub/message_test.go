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
		{"c:o/7", message{kind: anyWaiter}},
		{"c:o/7 k", message{kind: keepersOnly}},
		{"c:o/7 c:a c:b", message{kind: handOff, target: "c:a", next: "c:b"}},
		{"c:o/7 c:a ", message{kind: handOff, target: "c:a"}},
		{"c:o/7  ", message{kind: handOff}},
		{"c:o/7 odd", message{kind: anyWaiter}},
		{" x y", message{kind: anyWaiter}},
	} {
		if got := parseMessage(tc.payload); got != tc.want {
			t.Errorf("parseMessage(%q) = %+v, want %+v", tc.payload, got, tc.want)
		}
	}
	if n := parseMessage("c:o/7").copiesNeeded(2); n != 2 {
		t.Errorf("a copy for any waiter needs %d copies, want the quorum, 2", n)
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
	ws := ownedWaiters(r, "c", "c:a", "c:b", "c:t", "c:n")

	ok, watch := r.dispatch("c", "c:o/1 c:t c:n")
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
	ok, watch = r.dispatch("c", "c:o/2 c:elsewhere ")
	if !ok || watch != nil || len(woken(ws)) != 0 {
		t.Fatalf("a hand-off to another process: claimed %v, watch %v, woke %v", ok, watch, woken(ws))
	}

	// An empty target: the queue was empty, any waiter goes.
	if ok, _ := r.dispatch("c", "c:o/3  "); !ok || len(woken(ws)) != 1 {
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

func TestDedupHandOffIsDueAtItsOnlyCopy(t *testing.T) {
	d := newDedup(time.Second, 3, 2)
	now := time.Now()
	if wake, _ := d.observe("c", "c:o/1 c:t ", 1, now); !wake {
		t.Fatal("a hand-off waited for copies that never come")
	}
	if wake, pending := d.observe("c", "c:o/1 k", 1, now); !wake || pending != nil {
		t.Fatal("a keepers-only copy is due at once")
	}
	if wake, _ := d.observe("c", "c:o/1 k", 1, now); wake {
		t.Fatal("a second keepers-only copy of one release woke again")
	}
}

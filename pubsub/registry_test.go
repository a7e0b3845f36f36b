package pubsub

import "testing"

func newTestWaiters(r *registry, channel string, n int) []*Waiter {
	ws := make([]*Waiter, n)
	for i := range ws {
		ws[i] = newWaiter(nil, channel)
		r.add(ws[i])
	}
	return ws
}

// woken drains and returns the indexes of the waiters holding a wake.
func woken(ws []*Waiter) []int {
	var idx []int
	for i, w := range ws {
		if w.takeWake() {
			idx = append(idx, i)
		}
	}
	return idx
}

func TestRegistryRefCounts(t *testing.T) {
	r := newRegistry()
	a, b := newWaiter(nil, "c"), newWaiter(nil, "c")
	if !r.add(a) {
		t.Fatal("first waiter not reported first")
	}
	if r.add(b) {
		t.Fatal("second waiter reported first")
	}
	if r.remove(a) {
		t.Fatal("removing one of two reported last")
	}
	if r.remove(a) {
		t.Fatal("removing twice reported last")
	}
	if !r.remove(b) {
		t.Fatal("last waiter not reported last")
	}
	if len(r.chans) != 0 || r.waiters != 0 {
		t.Fatalf("left %d channels, %d waiters", len(r.chans), r.waiters)
	}
}

func TestRegistryDispatchWakesOldestFreeWaiter(t *testing.T) {
	r := newRegistry()
	ws := newTestWaiters(r, "c", 3)
	other := newTestWaiters(r, "d", 1)

	for range 2 {
		if !claimed(r, "c", "") {
			t.Fatal("dispatch found no waiter")
		}
	}
	// Waiters 0 and 1 hold a wake; the next release goes to 2, then nobody.
	if !claimed(r, "c", "") {
		t.Fatal("third dispatch found no waiter")
	}
	if claimed(r, "c", "") {
		t.Fatal("fourth dispatch woke a waiter that already had a wake")
	}
	if got := woken(ws); len(got) != 3 {
		t.Fatalf("woken %v, want all three", got)
	}
	if got := woken(other); len(got) != 0 {
		t.Fatal("a waiter of another channel was woken")
	}
	if r.wakes != 3 {
		t.Fatalf("wakes = %d, want 3", r.wakes)
	}
}

func TestRegistryDispatchIsFIFO(t *testing.T) {
	r := newRegistry()
	ws := newTestWaiters(r, "c", 3)
	for want := range 3 {
		claimed(r, "c", "")
		got := woken(ws)
		if len(got) != 1 || got[0] != 0 {
			t.Fatalf("release %d woke %v, want the oldest (0)", want, got)
		}
		// The woken waiter fails its attempt and queues again at the back,
		// as the lock does with a fresh waiter.
		r.remove(ws[0])
		ws = append(ws[1:], newWaiter(nil, "c"))
		r.add(ws[2])
	}
}

func TestRegistryRemoveHandsPendingWakeOn(t *testing.T) {
	r := newRegistry()
	ws := newTestWaiters(r, "c", 3)
	claimed(r, "c", "") // to ws[0]
	r.remove(ws[0])
	if got := woken(ws[1:]); len(got) != 1 || got[0] != 0 {
		t.Fatalf("pending wake went to %v, want the next waiter", got)
	}
	if r.wakes != 1 {
		t.Fatalf("wakes = %d, want 1 (a passed-on wake counts once)", r.wakes)
	}

	// A waiter without a pending wake passes nothing on.
	r.remove(ws[1])
	if got := woken(ws[2:]); len(got) != 0 {
		t.Fatal("a wake appeared from nowhere")
	}

	// The last waiter's pending wake has nobody to go to.
	claimed(r, "c", "")
	if !r.remove(ws[2]) {
		t.Fatal("last waiter not reported last")
	}
	if r.wakes != 1 {
		t.Fatalf("wakes = %d, want 1", r.wakes)
	}
}

func TestRegistryWakeAll(t *testing.T) {
	r := newRegistry()
	ws := append(newTestWaiters(r, "c", 3), newTestWaiters(r, "d", 2)...)
	claimed(r, "c", "")
	r.wakeAll()
	if got := woken(ws); len(got) != 5 {
		t.Fatalf("woken %v, want all five", got)
	}
	if r.wakes != 5 {
		t.Fatalf("wakes = %d, want 5 (a pending wake is not doubled)", r.wakes)
	}
}

func TestRegistryDispatchSkipsWaitersIgnoringThePayload(t *testing.T) {
	r := newRegistry()
	ws := newTestWaiters(r, "c", 2)
	ws[0].ignore = "owner-a/"

	// The oldest waiter ignores its own release: the next one gets it.
	if !claimed(r, "c", "owner-a/7") {
		t.Fatal("dispatch found no waiter")
	}
	if got := woken(ws); len(got) != 1 || got[0] != 1 {
		t.Fatalf("woken %v, want [1]", got)
	}
	// Someone else's release, and a wake without payload, reach it.
	for _, payload := range []string{"owner-b/3", ""} {
		if !claimed(r, "c", payload) {
			t.Fatalf("dispatch of %q found no waiter", payload)
		}
		if got := woken(ws); len(got) != 1 || got[0] != 0 {
			t.Fatalf("payload %q woke %v, want [0]", payload, got)
		}
	}
	// With only the ignoring waiter left, its own release is unclaimed.
	r.remove(ws[1])
	if claimed(r, "c", "owner-a/8") {
		t.Fatal("a waiter was woken by a payload it ignores")
	}
}

func TestRegistryDispatchWakesFirstWaitersFirst(t *testing.T) {
	r := newRegistry()
	ws := newTestWaiters(r, "c", 3)
	ws[2].first = true // the newest waiter holds the lock's tie-breaker

	if !claimed(r, "c", "owner-x/1") {
		t.Fatal("dispatch found no waiter")
	}
	if got := woken(ws); len(got) != 1 || got[0] != 2 {
		t.Fatalf("woken %v, want the first waiter [2]", got)
	}
	// With a wake pending, the first waiter is skipped: the oldest other goes next.
	ws[2].wakeUp()
	if !claimed(r, "c", "owner-x/2") {
		t.Fatal("dispatch found no waiter")
	}
	if got := woken(ws); len(got) != 2 || got[0] != 0 || got[1] != 2 {
		t.Fatalf("woken %v, want [0 2]", got)
	}
}

// claimed dispatches a message and reports whether a waiter of this process
// took it (or, for a hand-off, whether it was this process's to take).
func claimed(r *registry, channel, payload string) bool {
	ok, _ := r.dispatch(channel, payload)
	return ok
}

package pubsub

import (
	"testing"
	"time"
)

func TestDedupCountsCopiesOnce(t *testing.T) {
	d := newDedup(time.Second, 3, 1)
	now := time.Now()
	ch := "relock:{a}:released"

	if !first(d, ch, "r1", now) {
		t.Fatal("first copy not reported first")
	}
	if first(d, ch, "r1", now.Add(10*time.Millisecond)) {
		t.Fatal("second copy reported first")
	}
	if !first(d, ch, "r2", now) {
		t.Fatal("another release reported as a copy")
	}
	if !first(d, "relock:{b}:released", "r1", now) {
		t.Fatal("same payload on another channel reported as a copy")
	}
	if first(d, ch, "r1", now.Add(20*time.Millisecond)) {
		t.Fatal("third copy reported first")
	}
	// All three copies of r1 are in: it is forgotten at once.
	if d.len() != 2 {
		t.Fatalf("remembered %d releases, want 2", d.len())
	}
}

func TestDedupEmptyPayloadAlwaysCounts(t *testing.T) {
	d := newDedup(time.Second, 3, 1)
	now := time.Now()
	for i := range 5 {
		if !first(d, "c", "", now) {
			t.Fatalf("empty payload %d dropped", i)
		}
	}
	if d.len() != 0 {
		t.Fatalf("remembered %d empty payloads", d.len())
	}
}

func TestDedupWindowExpires(t *testing.T) {
	d := newDedup(time.Second, 3, 1)
	now := time.Now()
	first(d, "c", "r1", now)
	if first(d, "c", "r1", now.Add(999*time.Millisecond)) {
		t.Fatal("copy inside the window counted")
	}
	if !first(d, "c", "r1", now.Add(time.Second)) {
		t.Fatal("copy after the window not counted")
	}
}

func TestDedupMemoryIsBounded(t *testing.T) {
	d := newDedup(time.Second, 3, 1)
	d.limit = 100
	now := time.Now()
	for i := range 1000 {
		first(d, "c", string(rune('a'+i%26))+time.Duration(i).String(), now)
	}
	if d.len() > 100 || len(d.order) > 100 {
		t.Fatalf("remembered %d releases in a queue of %d, limit 100", d.len(), len(d.order))
	}
	// Everything expires after the window, even without new copies of it.
	first(d, "c", "late", now.Add(2*time.Second))
	if d.len() != 1 || len(d.order) != 1 {
		t.Fatalf("after the window: %d releases, queue %d, want 1 and 1", d.len(), len(d.order))
	}
}

func TestDedupNewerReleaseOfSameKeySurvivesOldQueueEntry(t *testing.T) {
	d := newDedup(time.Second, 2, 1)
	now := time.Now()
	first(d, "c", "r", now)
	first(d, "c", "r", now) // both copies in: forgotten, its queue entry stays
	// The same id again, later (a retried publish): remembered anew.
	if !first(d, "c", "r", now.Add(500*time.Millisecond)) {
		t.Fatal("new release not counted")
	}
	// The old queue entry expires; the new one must survive it.
	if first(d, "c", "r", now.Add(1200*time.Millisecond)) {
		t.Fatal("copy of the newer release counted after the older entry expired")
	}
}

func TestDedupSingleNodeRemembersNothing(t *testing.T) {
	d := newDedup(time.Second, 1, 1)
	now := time.Now()
	// Two copies of one payload at the same moment: with one node there
	// are no copies, so each is a release of its own.
	for i := range 2 {
		if !first(d, "c", "r", now) {
			t.Fatalf("message %d not taken as a release: with one node every message is one", i+1)
		}
	}
	if d.len() != 0 {
		t.Fatalf("remembered %d releases", d.len())
	}
}

// first reports whether a message is the first copy of its release (due now
// or pending its other copies).
func first(d *dedup, channel, payload string, now time.Time) bool {
	wake, pending := d.observe(channel, payload, 0, now)
	return wake || pending != nil
}

func TestDedupWakesAtTheQuorumthCopy(t *testing.T) {
	d := newDedup(time.Second, 5, 3)
	now := time.Now()
	wake, pending := d.observe("c", "r", 0, now)
	if wake || pending == nil {
		t.Fatalf("first of 5 copies with 3 needed: wake %v pending %v; want a pending release", wake, pending)
	}
	if wake, p := d.observe("c", "r", 0, now); wake || p != nil {
		t.Fatal("the second copy made the release due")
	}
	if wake, _ := d.observe("c", "r", 0, now); !wake {
		t.Fatal("the third copy did not make the release due")
	}
	for range 2 {
		if wake, _ := d.observe("c", "r", 0, now); wake {
			t.Fatal("a copy after the due one woke again")
		}
	}
	if d.graceUp(pending) {
		t.Fatal("the grace timer woke a release already due")
	}
}

func TestDedupGraceWakesAReleaseMissingCopies(t *testing.T) {
	d := newDedup(time.Second, 3, 2)
	_, pending := d.observe("c", "undo", 0, time.Now())
	if !d.graceUp(pending) {
		t.Fatal("the grace timer did not make a lone copy due")
	}
	if wake, _ := d.observe("c", "undo", 0, time.Now()); wake {
		t.Fatal("a late copy woke again after the grace timer")
	}
}

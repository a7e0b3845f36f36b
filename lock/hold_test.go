package lock

import (
	"testing"
	"time"
)

// TestHoldForgetsTombstonesAfterTheirLease: the nodes where a release or an
// undo left the owner's tombstone are expected to keep it for the lease the
// call carried, the longest of several, and no longer.
func TestHoldForgetsTombstonesAfterTheirLease(t *testing.T) {
	h := &hold{}
	if got := h.tombstones(); got != 0 {
		t.Fatalf("a new hold expects tombstones on %b", got)
	}
	h.bury(0, time.Hour) // no node: nothing to remember
	if !h.buriedUntil.IsZero() {
		t.Fatalf("burying on no node set a deadline: %v", h.buriedUntil)
	}
	h.bury(nodeSet(0).with(1), time.Hour)
	h.bury(nodeSet(0).with(2), time.Millisecond) // a shorter lease keeps the longer deadline
	if got, want := h.tombstones(), nodeSet(0).with(1).with(2); got != want {
		t.Fatalf("tombstones expected on %b, want %b", got, want)
	}
	h.buriedUntil = time.Now().Add(-time.Millisecond) // the lease has passed
	if got := h.tombstones(); got != 0 {
		t.Fatalf("tombstones still expected on %b after their lease", got)
	}
	if h.buried != 0 {
		t.Fatalf("the expired set was kept: %b", h.buried)
	}
}

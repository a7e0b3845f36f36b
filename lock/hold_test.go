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

// TestRepairCountsItsNodeAmongTheStrays: a repair is sent without the
// owner's opMu held, so it may land after the owner's Unlock on its node.
// The node therefore joins the strays: that Unlock's release there leaves a
// tombstone, which the late repair finds and is refused by. Without it the
// repair would write the hold back for a lease after Unlock returned (the
// model's seeded bug BUG_REPAIRSTRAY: model/README.md has SPIN's trail).
func TestRepairCountsItsNodeAmongTheStrays(t *testing.T) {
	h := &hold{count: 2, lease: time.Second, seq: 5}
	op, ok, busy := h.repairOp(2)
	if !ok || busy {
		t.Fatalf("a held hold with no operation on the wire was not repaired: ok %v, busy %v", ok, busy)
	}
	if !h.strays.has(2) {
		t.Fatalf("the repaired node is not among the strays: %b", h.strays)
	}
	if h.strays.has(0) || h.strays.has(1) {
		t.Fatalf("nodes the repair does not go to joined the strays: %b", h.strays)
	}
	if op.Count != 2 || op.Seq != 6 {
		t.Fatalf("the repair carries count %d and seq %d, want the hold's count 2 and a fresh seq 6", op.Count, op.Seq)
	}

	lost := &hold{count: 1, lease: time.Second, isLost: true}
	if _, ok, _ := lost.repairOp(1); ok || lost.strays != 0 {
		t.Fatalf("a lost hold was repaired (%v) or marked strays %b", ok, lost.strays)
	}
	h.opMu.Lock() // an Unlock on the wire
	if _, ok, busy := h.repairOp(1); ok || !busy || h.strays.has(1) {
		t.Fatalf("a repair went out beside an operation on the wire: ok %v, busy %v, strays %b", ok, busy, h.strays)
	}
	h.opMu.Unlock()
}

// TestRenewalSkipsALostHold: the renewal of a hold already reported lost
// would take a number newer than the loss's clean-up, which then changes
// nothing where the renewal landed first, and the node keeps the lock a
// whole lease more (the watchdog may pick the hold for renewal just before
// its loss timer fires).
func TestRenewalSkipsALostHold(t *testing.T) {
	held := &hold{count: 1, lease: time.Second, seq: 3}
	if op := held.renewOp(); op.Count != 1 || op.Seq != 4 {
		t.Fatalf("a held hold's renewal carries count %d and seq %d, want 1 and 4", op.Count, op.Seq)
	}
	lost := &hold{count: 1, lease: time.Second, seq: 3, isLost: true}
	if op := lost.renewOp(); op.Seq != 0 || lost.seq != 3 {
		t.Fatalf("a lost hold was renewed: seq %d, the hold's now %d", op.Seq, lost.seq)
	}
}

package lock

import (
	"context"
	"slices"
	"time"

	"github.com/relock-go/relock/reentrant"
)

// Unlock releases one hold of the lock. The lock is freed, and one waiter
// woken, when the handle has unlocked as many times as it locked.
//
// It returns ErrNotHeld, sending nothing, when the handle holds nothing.
// It returns ErrLost when the hold had been lost (lease ran out, or a quorum
// no longer has it); the hold count still goes down by one, so paired
// Lock/Unlock calls stay balanced. It returns a *QuorumError when fewer than
// a quorum confirmed: the count still goes down, and the nodes that did not
// answer keep being retried in the background until the lease runs out.
//
// It returns ErrClosed, sending nothing, after Client.Close (which released
// every hold).
//
// The release is sent even when ctx has already ended (a deferred Unlock
// after a timeout must not leave the lock held). Each node is waited for
// longer than an acquire would wait for it (a tenth of the lease, or 4 ×
// a fixed NodeTimeout; see Options.NodeTimeout): a release has no validity
// to protect, so Unlock does not report a node that was merely slow as
// failed. Once a quorum has confirmed, the others get their usual wait.
func (m *Mutex) Unlock(ctx context.Context) error { return m.unlock(ctx) }

// unlock is Unlock for every kind of hold: one hold fewer.
func (h *hold) unlock(ctx context.Context) error {
	if h.keyErr != nil {
		return h.keyErr
	}
	ctx = h.c.unlockStarted(ctx, h)
	if err := h.c.begin(); err != nil {
		h.c.released(ctx, h, false, &releaseTally{target: -1}, err)
		return err // Close released every hold already
	}
	defer h.c.end()
	if ctx.Done() != nil { // a ctx without Done has nothing to take off
		ctx = context.WithoutCancel(ctx)
	}
	return h.release(ctx, false)
}

// releaseAll releases every hold at once: the hold context ended, or the
// Client is closing.
func (h *hold) releaseAll() error {
	return h.release(h.c.life, true)
}

func (h *hold) release(ctx context.Context, all bool) (err error) {
	t := h.c.newReleaseTally()
	defer func() { h.c.released(ctx, h, all, &t, err) }()
	h.opMu.Lock()
	defer h.opMu.Unlock()

	h.mu.Lock()
	if h.count == 0 {
		h.mu.Unlock()
		if all {
			return nil
		}
		return ErrNotHeld
	}
	target := h.count - 1
	if all {
		target = 0
	}
	wasLost, tieTaken, strays := h.isLost, h.tieTaken, h.strays
	// Where the owner may still be registered in the wait queue (refused
	// there while it waited, it took the lock through the other nodes),
	// the release that ends the hold takes it out. Only a Mutex's Locks
	// queue (contends), so h.queued is empty for every other kind; a fair
	// lock's entries expire by their deadlines.
	var leave nodeSet
	if target == 0 && !h.kind.fair {
		leave = h.queued
	}
	op := h.op(target, h.lease, 1)
	t.target = target
	// Past any lease a node may still hold: renewals set it from their own
	// time, so count from now, not from the first acquisition.
	deadline := time.Now().Add(h.lease)
	switch {
	case wasLost && target == 0:
		h.bury(^nodeSet(0), h.lease) // its clean-up goes everywhere
	case target == 0:
		h.bury(strays, h.lease) // there its release leaves one
	}
	h.mu.Unlock()

	if wasLost {
		// Clean whatever is left of ours, once, and keep the count balanced.
		if target == 0 { // op already sets the count to 0
			h.c.releaseOn(op, h.c.allNodes(), deadline)
		}
		h.settle(target, time.Time{})
		return ErrLost
	}

	start := time.Now()
	id := releaseID(op) // the same on every node
	replies := fanOutTo(h.c, ctx, kindRelease, op.Lease, -1, h.kind.quorum, func(ctx context.Context, n *reentrant.Node) (reentrant.ReleaseResult, error) {
		op := op
		i := slices.Index(h.c.nodes, n)
		// A hold that never had the tie-breaker (it was down, or a keeper
		// holds it and is woken by these copies) hands nothing off there.
		op.Wake = h.c.wakeOn(i, op, tieTaken)
		op.NoStrays = !strays.has(i)
		op.LeaveQueue = leave.has(i)
		return n.Release(ctx, op, id)
	})
	elapsed := time.Since(start)
	var agreed, notHeld int
	var retry []int
	left := strays // the strays no tombstone of this release covers
	var dequeued nodeSet
	var buried nodeSet // where its retries to zero, which bury, go on
	for _, r := range replies {
		if r.err == nil && leave.has(r.node) && r.value != reentrant.StillHeld {
			// Not held there: the release took the owner out of the
			// queue. Released there: the acquire that took it did.
			dequeued = dequeued.with(r.node)
		}
		switch {
		case r.err != nil:
			retry = append(retry, r.node)
			if target == 0 {
				buried = buried.with(r.node)
			}
		case r.value == reentrant.NotHeld:
			notHeld++
		default:
			agreed++
		}
		if r.err == nil && target == 0 && r.value != reentrant.StillHeld {
			// It left a tombstone there (a release to zero that found a
			// newer operation applied leaves none): that covers every
			// call sent before.
			left = left.without(r.node)
		}
	}
	if cleared := strays &^ left; cleared != 0 || dequeued != 0 || buried != 0 {
		h.mu.Lock()
		h.strays &^= cleared
		h.queued &^= dequeued
		h.bury(buried, op.Lease)
		h.mu.Unlock()
	}
	for _, i := range retry {
		// The retry leaves the queue where the first send was to: without
		// it (before 2026-12-04) a node that missed the Unlock kept the
		// owner queued, and its releases named a waiter that was gone.
		again := op
		again.LeaveQueue = leave.has(i)
		h.c.releaseOn(again, []int{i}, deadline)
	}
	t.reached, t.agreed = agreed+notHeld, agreed

	switch {
	case agreed >= h.kind.quorum:
		var validUntil time.Time
		if v := validity(op.Lease, elapsed, h.c.opts.ClockDriftFactor); v > 0 && target > 0 {
			validUntil = start.Add(elapsed + v)
		}
		h.settle(target, validUntil)
		return nil
	case notHeld > len(h.c.nodes)-h.kind.quorum:
		// A quorum says the lock is not ours: it was lost before this call.
		if target > 0 {
			h.loseHold(LossNotHeld) // and clear what is left of ours
		} else {
			h.signalLoss(LossNotHeld) // op already set every node's count to 0
		}
		h.settle(target, time.Time{})
		return ErrLost
	default:
		h.settle(target, time.Time{})
		return &QuorumError{Op: "release", Needed: h.kind.quorum, Agreed: agreed, Nodes: failures(h.c, replies)}
	}
}

// settle records the count after a release; at zero the hold ends.
func (h *hold) settle(count int64, validUntil time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count = count
	if count == 0 {
		h.endHold()
		return
	}
	if !validUntil.IsZero() {
		h.extend(validUntil)
	}
}

// allNodes lists every node index.
func (c *Client) allNodes() []int {
	nodes := make([]int, len(c.nodes))
	for i := range nodes {
		nodes[i] = i
	}
	return nodes
}

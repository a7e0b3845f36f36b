package lock

import (
	"context"
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
// after a timeout must not leave the lock held). Each node is waited for 4
// times as long as an acquire would wait for it (see Options.NodeTimeout):
// a release has no validity to protect, so Unlock does not report a node
// that was merely slow as failed.
func (m *Mutex) Unlock(ctx context.Context) error {
	if m.keyErr != nil {
		return m.keyErr
	}
	ctx = m.c.unlockStarted(ctx, m)
	if err := m.c.begin(); err != nil {
		m.c.released(ctx, m, false, &releaseTally{target: -1}, err)
		return err // Close released every hold already
	}
	defer m.c.end()
	return m.release(context.WithoutCancel(ctx), false)
}

// releaseAll releases every hold at once: the hold context ended, or the
// Client is closing.
func (m *Mutex) releaseAll() error {
	return m.release(m.c.life, true)
}

func (m *Mutex) release(ctx context.Context, all bool) (err error) {
	t := m.c.newReleaseTally()
	defer func() { m.c.released(ctx, m, all, &t, err) }()
	m.opMu.Lock()
	defer m.opMu.Unlock()

	m.mu.Lock()
	if m.count == 0 {
		m.mu.Unlock()
		if all {
			return nil
		}
		return ErrNotHeld
	}
	target := m.count - 1
	if all {
		target = 0
	}
	wasLost := m.isLost
	op := m.op(target, m.lease, 1)
	t.target = target
	// Past any lease a node may still hold: renewals set it from their own
	// time, so count from now, not from the first acquisition.
	deadline := time.Now().Add(m.lease)
	m.mu.Unlock()

	if wasLost {
		// Clean whatever is left of ours, once, and keep the count balanced.
		if target == 0 { // op already sets the count to 0
			m.c.releaseOn(op, m.c.allNodes(), deadline)
		}
		m.settle(target, time.Time{})
		return ErrLost
	}

	start := time.Now()
	replies := fanOutFor(m.c, ctx, kindRelease, op.Lease, func(ctx context.Context, n *reentrant.Node) (reentrant.ReleaseResult, error) {
		op := op
		op.Wake = m.c.wakeAt(n, op.Key)
		return n.Release(ctx, op, releaseID(op))
	})
	elapsed := time.Since(start)
	var agreed, notHeld int
	var retry []int
	for _, r := range replies {
		switch {
		case r.err != nil:
			retry = append(retry, r.node)
		case r.value == reentrant.NotHeld:
			notHeld++
		default:
			agreed++
		}
	}
	m.c.releaseOn(op, retry, deadline)
	t.reached, t.agreed = agreed+notHeld, agreed

	switch {
	case agreed >= m.c.quorum:
		var validUntil time.Time
		if v := validity(op.Lease, elapsed, m.c.opts.ClockDriftFactor); v > 0 && target > 0 {
			validUntil = start.Add(elapsed + v)
		}
		m.settle(target, validUntil)
		return nil
	case notHeld > len(m.c.nodes)-m.c.quorum:
		// A quorum says the lock is not ours: it was lost before this call.
		if target > 0 {
			m.loseHold(LossNotHeld) // and clear what is left of ours
		} else {
			m.signalLoss(LossNotHeld) // op already set every node's count to 0
		}
		m.settle(target, time.Time{})
		return ErrLost
	default:
		m.settle(target, time.Time{})
		return &QuorumError{Op: "release", Needed: m.c.quorum, Agreed: agreed, Nodes: failures(m.c, replies)}
	}
}

// settle records the count after a release; at zero the hold ends.
func (m *Mutex) settle(count int64, validUntil time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.count = count
	if count == 0 {
		m.endHold()
		return
	}
	if !validUntil.IsZero() {
		m.extend(validUntil)
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

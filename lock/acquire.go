package lock

import (
	"context"
	"time"

	"github.com/relock-go/relock/reentrant"
)

// attempt is the outcome of one quorum acquire.
type attempt struct {
	acquired   bool
	validUntil time.Time // when acquired
	fence      int64     // the highest fencing counter among the nodes that answered

	// When not acquired: whether another owner holds the lock on enough nodes
	// to deny a quorum, and the shortest lease left among them (negative when
	// unknown: a holder without a TTL).
	contended bool
	holderTTL time.Duration
	err       error // a *QuorumError, ctx's error, or a bad-input error
}

// acquire tries once to bring op.Owner's hold count to op.Count on a quorum.
// On failure nothing of the attempt is left: every node that took it, or did
// not answer, is set back to op.Count-1, in the background for the nodes that
// cannot be reached now, until the attempt's lease would have run out.
func (c *Client) acquire(ctx context.Context, op reentrant.Op) attempt {
	if err := ctx.Err(); err != nil {
		return attempt{err: err}
	}
	c.stats.attempts.Add(1)
	start := time.Now()
	replies := fanOut(c, ctx, func(ctx context.Context, n *reentrant.Node) (reentrant.Acquisition, error) {
		return n.Acquire(ctx, op)
	})
	elapsed := time.Since(start)

	var a attempt
	agreed, refused := 0, 0
	a.holderTTL = -1
	for _, r := range replies {
		switch {
		case r.err != nil:
			continue
		case r.value.Acquired:
			agreed++
		default:
			refused++
			if ttl := r.value.HolderTTL; ttl >= 0 && (a.holderTTL < 0 || ttl < a.holderTTL) {
				a.holderTTL = ttl
			}
		}
		a.fence = max(a.fence, r.value.Fence)
	}
	valid := validity(op.Lease, elapsed, c.opts.ClockDriftFactor)
	if agreed >= c.quorum && valid > 0 && ctx.Err() == nil {
		a.acquired = true
		c.stats.acquired.Add(1)
		a.validUntil = start.Add(elapsed + valid)
		return a
	}

	// Undo on every node that may hold the attempt: those that took it and
	// those that did not answer (a lost reply may hide a success). Nodes that
	// answered "held by another" changed nothing.
	var undo []int
	for _, r := range replies {
		if r.err != nil || r.value.Acquired {
			undo = append(undo, r.node)
		}
	}
	c.setBack(op, undo, start.Add(op.Lease))

	switch {
	case ctx.Err() != nil:
		a.err = ctx.Err()
	case refused > len(c.nodes)-c.quorum:
		a.contended = true
	default:
		a.contended = refused > 0
		a.err = &QuorumError{Op: "acquire", Needed: c.quorum, Agreed: agreed,
			Late: agreed >= c.quorum, Nodes: failures(c, replies)}
	}
	return a
}

// setBack returns op.Owner's count to op.Count-1 on the given nodes (a
// release with a newer sequence number, so it never overrides a later
// operation). Nodes that answer now are done; the others are retried in the
// background until deadline.
func (c *Client) setBack(op reentrant.Op, nodes []int, deadline time.Time) {
	if len(nodes) == 0 {
		return
	}
	undo := op
	undo.Count = op.Count - 1
	undo.Seq = op.Seq + 1 // reserved by the caller for this undo
	c.releaseOn(undo, nodes, deadline)
}

// releaseOn sends a release to the given nodes, first at once with the
// per-node timeout, then in the background for the nodes that failed, with
// backoff, until deadline or Close.
func (c *Client) releaseOn(op reentrant.Op, nodes []int, deadline time.Time) {
	id := releaseID(op)
	release := func(ctx context.Context, node int) error {
		ctx, cancel := context.WithTimeout(ctx, c.opts.NodeTimeout)
		defer cancel()
		_, err := c.nodes[node].Release(ctx, op, id)
		return err
	}
	failed := c.eachNode(c.life, nodes, release)
	if len(failed) == 0 {
		return
	}
	c.inBackground(func(ctx context.Context) {
		c.retryUntil(ctx, failed, deadline, release)
	})
}

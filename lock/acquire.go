package lock

import (
	"context"
	"time"

	"github.com/relock-go/relock/reentrant"
)

// attempt is the outcome of one quorum acquire.
type attempt struct {
	sent       bool // the attempt reached the network (false: ctx had ended)
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
	a := attempt{sent: true}
	start := time.Now()
	replies := fanOut(c, ctx, func(ctx context.Context, n *reentrant.Node) (reentrant.Acquisition, error) {
		return n.Acquire(ctx, op)
	})
	elapsed := time.Since(start)

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

	c.undo(op, replies, start.Add(op.Lease))

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

// undo takes back a failed attempt on every node that may hold it: those
// that took it, and those whose answer is unknown (a lost reply may hide a
// success, and a paused node runs a queued acquire when it resumes). Nodes
// that answered "held by another" changed nothing. Unknown nodes are undone
// again and again until deadline, the end of the attempt's lease, unless
// their late reply shows what happened.
func (c *Client) undo(op reentrant.Op, replies []reply[reentrant.Acquisition], deadline time.Time) {
	var took, unknown []int
	for _, r := range replies {
		switch {
		case r.late != nil:
			c.undoLate(op, r.node, r.late, deadline)
		case r.err != nil:
			unknown = append(unknown, r.node)
		case r.value.Acquired:
			took = append(took, r.node)
		}
	}
	c.setBack(op, took, deadline)
	c.keepSettingBack(op, unknown, deadline)
}

// undoLate waits in the background for a node call that outlived its
// fan-out, then undoes what its reply shows, or keeps undoing if there is
// none.
func (c *Client) undoLate(op reentrant.Op, node int, late *outcome[reentrant.Acquisition], deadline time.Time) {
	c.inBackground(func(ctx context.Context) {
		wait := time.NewTimer(time.Until(deadline))
		defer wait.Stop()
		select {
		case <-late.done:
		case <-wait.C:
			return // the attempt's lease is over on that node anyway
		case <-ctx.Done():
			return
		}
		switch {
		case late.err != nil:
			c.keepSettingBack(op, []int{node}, deadline)
		case late.value.Acquired:
			c.setBack(op, []int{node}, deadline)
		}
	})
}

// setBack returns op.Owner's count to op.Count-1 on the given nodes (a
// release with a newer sequence number, so it never overrides a later
// operation). Nodes that answer now are done; the others are retried in the
// background until deadline.
func (c *Client) setBack(op reentrant.Op, nodes []int, deadline time.Time) {
	if len(nodes) > 0 {
		c.releaseOn(undoOf(op), nodes, deadline)
	}
}

// keepSettingBack sends the undo to nodes whose state is unknown, again and
// again until deadline: an acquire still queued there may land after any
// one undo. The sequence numbers keep this harmless to later operations.
func (c *Client) keepSettingBack(op reentrant.Op, nodes []int, deadline time.Time) {
	if len(nodes) == 0 {
		return
	}
	release := c.releaseCall(undoOf(op))
	c.inBackground(func(ctx context.Context) {
		again := func() bool {
			c.eachNode(ctx, nodes, release)
			return false // never done: only the deadline ends it
		}
		again()
		c.everyBackoff(ctx, deadline, 20*time.Millisecond, time.Second, again)
	})
}

// undoOf is the release that takes back op: one hold fewer, with the
// sequence number the caller reserved right after op's.
func undoOf(op reentrant.Op) reentrant.Op {
	undo := op
	undo.Count = op.Count - 1
	undo.Seq = op.Seq + 1
	return undo
}

// releaseOn sends a release to the given nodes, first at once with the
// per-node timeout, then in the background for the nodes that failed, with
// backoff, until deadline or Close.
func (c *Client) releaseOn(op reentrant.Op, nodes []int, deadline time.Time) {
	release := c.releaseCall(op)
	failed := c.eachNode(c.life, nodes, release)
	if len(failed) == 0 {
		return
	}
	c.inBackground(func(ctx context.Context) {
		c.retryUntil(ctx, failed, deadline, release)
	})
}

// releaseCall is a call of eachNode that sends op's release to one node,
// bounded by the node timeout.
func (c *Client) releaseCall(op reentrant.Op) func(context.Context, int) error {
	id := releaseID(op)
	return func(ctx context.Context, node int) error {
		ctx, cancel := context.WithTimeout(ctx, c.opts.NodeTimeout)
		defer cancel()
		_, err := c.nodes[node].Release(ctx, op, id)
		return err
	}
}

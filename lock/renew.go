package lock

import (
	"context"
	"time"

	"github.com/relock-go/relock/reentrant"
	"github.com/relock-go/relock/watchdog"
)

// renewBatch is the watchdog's RenewFunc: it renews a batch of held locks
// with one pipelined round trip per node (all nodes in parallel), then
// decides per lock: renewed when a quorum still holds it within validity,
// lost when too many nodes answered "not held" for a quorum to exist, and
// otherwise left for a retry. Nodes that answered "not held" while a quorum
// holds the lock are repaired in the background.
func (c *Client) renewBatch(ctx context.Context, values []any) []watchdog.Outcome {
	ops := make([]reentrant.Op, len(values))
	need := c.quorum // the largest quorum of the batch's holds
	// The renewals sent, without those skipped this round (a zero Op):
	// every answer a node gives is then about a lock it was asked to
	// renew, and isAgreement can ask that it held them all (at[i] is
	// ops[i]'s index in sent, -1 when skipped).
	sent, at := make([]reentrant.Op, 0, len(values)), make([]int, len(values))
	for i, v := range values {
		h := v.(*hold)
		ops[i] = h.renewOp()
		need = max(need, h.kind.quorum)
		at[i] = -1
		if ops[i].Count > 0 {
			at[i] = len(sent)
			sent = append(sent, ops[i])
		}
	}
	start := time.Now()
	replies := fanOutTo(c, ctx, kindRenew, c.opts.Lease, -1, need, func(ctx context.Context, n *reentrant.Node) ([]reentrant.RenewResult, error) {
		return n.RenewAll(ctx, sent), nil
	})
	elapsed := time.Since(start)

	outcomes := make([]watchdog.Outcome, len(ops))
	renewed, lost := 0, 0
	defer func() { c.renewed(ops, replies, renewed, lost, elapsed) }()
	for i, op := range ops {
		j := at[i]
		if j < 0 {
			continue // not renewed this round; the watchdog retries shortly
		}
		held, notHeld := 0, 0
		var repair []int
		for _, r := range replies {
			switch {
			case r.err != nil || len(r.value) <= j || r.value[j].Err != nil:
			case r.value[j].Held:
				held++
			default:
				notHeld++
				repair = append(repair, r.node)
			}
		}
		v := validity(op.Lease, elapsed, c.opts.ClockDriftFactor)
		q := values[i].(*hold).kind.quorum
		switch {
		case held >= q && v > 0:
			outcomes[i] = watchdog.Outcome{Renewed: true, ValidUntil: start.Add(elapsed + v)}
			c.stats.renewals.Add(1)
			renewed++
			if len(repair) > 0 {
				c.repairLater(values[i].(*hold), repair, outcomes[i].ValidUntil)
			}
		case notHeld > len(c.nodes)-q:
			outcomes[i] = watchdog.Outcome{Lost: true}
			lost++
		}
	}
	return outcomes
}

// renewOp is the renewal of the current hold, with a fresh sequence number,
// or the zero Op (skip it this round) when the handle holds nothing or has
// an operation on the wire. A renewal must not take its number while an
// Unlock is in flight: arriving first, it would make that Unlock's older
// number look stale, and the lock would stay held after Unlock returned.
// Skipping is harmless: the operation in flight sets the lease itself, and
// the watchdog retries shortly. An operation that starts after this one
// takes a newer number and wins wherever the two meet.
func (h *hold) renewOp() reentrant.Op {
	if !h.opMu.TryLock() {
		return reentrant.Op{}
	}
	defer h.opMu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count == 0 || h.isLost {
		// Lost: the loss's clean-up is on its way (see markLost), and a
		// renewal with a newer number would make it stale where it landed
		// first, setting a whole lease anew on a hold the owner was told
		// it lost.
		return reentrant.Op{}
	}
	return h.op(h.count, h.lease, 1)
}

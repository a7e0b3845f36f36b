package lock

import (
	"context"
	"slices"
	"time"

	"github.com/relock-go/relock/reentrant"
)

// attempt is the outcome of one quorum acquire.
type attempt struct {
	sent       bool // the attempt reached the network (false: ctx had ended)
	need       int  // the nodes it needed (0: the Client's quorum)
	acquired   bool
	validUntil time.Time // when acquired
	fence      int64     // the highest fencing counter among the nodes that answered

	// When not acquired: whether another owner holds the lock on enough nodes
	// to deny a quorum, and the shortest lease left among them (negative when
	// unknown: a holder without a TTL).
	contended bool
	holderTTL time.Duration
	// absent counts the nodes that answered without taking the attempt:
	// another owner holds the lock there, or (a re-entry) the owner's hold
	// is gone there.
	absent  int
	missing []int // the nodes that answered Missing to a re-entry
	// quorumHolder is another owner that refused the attempt on a quorum of
	// the nodes (named where the attempt asked, reentrant.Op.AskHolder):
	// that owner holds the lock, and no tie is to be broken.
	quorumHolder string

	retryNow bool // try again at once, without sleeping (see contender.settle)

	// For the caller's undo (see Client.undo) when not acquired.
	replies  []reply[reentrant.Acquisition]
	deadline time.Time // the end of the attempt's lease, counted from its start
	err      error     // a *QuorumError, ctx's error, or a bad-input error
}

// acquire tries once to bring op.Owner's hold count to op.Count on need
// nodes (a quorum: the Client's, or the hold's own, see holdKind):
// on every node, or on node only when only ≥ 0 (a probe of the tie-breaker,
// which can never make a quorum by itself when there are several nodes).
// op.Ticket, when set, goes to every node asked (a Lock's first attempt's
// to the tie-breaker alone, see queueing): on the tie-breaker it places
// the waiter in the lock's wait queue; on another node an attempt refused
// there registers the waiter in that node's copy of the queue key, so that
// the release there tells it (see contender, 4). Where q says the owner is
// not registered, a hold taken skips the dequeue (reentrant.Op.Unqueued).
// A failed attempt is left as it landed: the caller undoes it (Client.undo),
// or keeps what it took (see contender). tombs are the nodes where a call
// of the owner may still land (hold.strays) or a tombstone of its may be
// (hold.buried): elsewhere the owner expects no tombstone of its own
// (reentrant.Op.NoStrays), a hint that only orders the script's reads.
func (c *Client) acquire(ctx context.Context, op reentrant.Op, need, only int, tombs nodeSet, q queueing) attempt {
	if err := ctx.Err(); err != nil {
		return attempt{err: err}
	}
	c.stats.attempts.Add(1)
	a := attempt{sent: true, need: need}
	// The node that keeps the queue, for an acquisition that follows its
	// rules there: a fair lock's first acquisition (its turn), or a
	// waiting owner's over several nodes (a hand-off's reservation,
	// reentrant.Op.TakesTurn; on a single node an owner that asks before
	// the target merely wins instead, with nothing to split or undo).
	// An attempt that asks who refuses it asks the other nodes only: it
	// wants to know whether one owner holds a quorum without the
	// tie-breaker (see contender.mayKeep).
	tie := -1
	if op.Fair || op.Ticket > 0 && len(c.nodes) > 1 || op.AskHolder {
		tie = c.tieBreaker(op.Key)
	}
	queueRules := op.Fair || op.Ticket > 0 && len(c.nodes) > 1
	start := time.Now()
	replies := fanOutTo(c, ctx, kindAcquire, c.opts.Lease, only, need, func(ctx context.Context, n *reentrant.Node) (reentrant.Acquisition, error) {
		op := op
		i := slices.Index(c.nodes, n)
		atTie := i == tie
		op.NoStrays = !tombs.has(i)
		if !atTie {
			op.Fair = false
		}
		if !q.ticketTo(i, len(c.nodes)) {
			op.Ticket = 0
		}
		op.Unqueued = q.unqueued(i)
		op.TakesTurn = !op.Fair && op.Ticket > 0 && queueRules && atTie
		op.AskHolder = op.AskHolder && !atTie
		return n.Acquire(ctx, op)
	})
	elapsed := time.Since(start)
	a.replies, a.deadline = replies, start.Add(op.Lease)

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
			if r.value.Missing {
				a.missing = append(a.missing, r.node)
			}
			if ttl := r.value.HolderTTL; ttl >= 0 && (a.holderTTL < 0 || ttl < a.holderTTL) {
				a.holderTTL = ttl
			}
		}
		a.fence = max(a.fence, r.value.Fence)
	}
	a.absent = refused
	a.quorumHolder = quorumHolder(replies, need)
	// The queue's keeper vetoes an owner whose turn it is not, whatever
	// the other nodes said: at a fair lock its turn is the fairness; at a
	// Mutex just handed off, the owner it went to is on its way. (When that
	// node does not answer, the quorum alone decides: fairness waits, the
	// lock does not.)
	queued := tie >= 0 && replies[tie].err == nil && replies[tie].value.Queued
	valid := validity(op.Lease, elapsed, c.opts.ClockDriftFactor)
	if agreed >= need && valid > 0 && ctx.Err() == nil && !queued {
		a.acquired = true
		c.stats.acquired.Add(1)
		a.validUntil = start.Add(elapsed + valid)
		return a
	}

	switch {
	case ctx.Err() != nil:
		a.err = ctx.Err()
	case only >= 0 && refused > 0, queued:
		// A probe that met another holder (no quorum was sought), or
		// another owner's turn at a fair lock.
		a.contended = true
	case refused > len(c.nodes)-need:
		a.contended = true
	default:
		a.contended = refused > 0
		a.err = &QuorumError{Op: "acquire", Needed: need, Agreed: agreed,
			Late: agreed >= need, Nodes: failures(c, replies)}
	}
	return a
}

// quorumHolder returns the owner that the replies name as holding the lock
// on at least need nodes, or "".
func quorumHolder(replies []reply[reentrant.Acquisition], need int) string {
	for i, r := range replies {
		name := r.value.Holder
		if r.err != nil || name == "" {
			continue
		}
		n := 0
		for _, o := range replies[i:] {
			if o.err == nil && o.value.Holder == name {
				n++
			}
		}
		if n >= need {
			return name
		}
	}
	return ""
}

// undo takes back a failed attempt on every node that may hold it: those
// that took it, and those whose answer is unknown (a lost reply may hide a
// success, and a paused node runs a queued acquire when it resumes). Nodes
// that answered "held by another" changed nothing, and nodes the attempt
// never reached (the connection was refused) have nothing to undo. Unknown nodes are undone
// again and again until deadline, the end of the attempt's lease, unless
// their late reply shows what happened. It all happens in the background,
// in the nodes' clean-up queues.
//
// With keep, the nodes that took the attempt keep it: a contender holding
// the tie-breaker gives back only what it does not know it has.
func (c *Client) undo(op reentrant.Op, a attempt, keep bool) {
	for _, r := range a.replies {
		switch {
		case r.late != nil:
			c.undoLate(op, r.node, r.late, a.deadline)
		case c.nodes[r.node].NeverReached(r.err):
		case r.err != nil:
			c.keepReleasing(undoOf(op), r.node, a.deadline)
		case r.value.Acquired && !keep:
			c.setBack(op, []int{r.node}, a.deadline)
		}
	}
}

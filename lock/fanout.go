package lock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/relock-go/relock/reentrant"
)

// reply is one node's answer within a fan-out.
type reply[T any] struct {
	node  int
	value T
	err   error
	// late is set when the node had not answered when fanOut returned: its
	// call goes on in the background, and late.done closes when it ends.
	late *outcome[T]
}

// outcome is the eventual result of one node call.
type outcome[T any] struct {
	done  chan struct{}
	value T
	err   error
}

// fanOut runs call on every node in parallel and collects the answers, for
// an acquire-like call (an acquire, a renewal, a read) on a lock with the
// Client's lease. See fanOutFor.
func fanOut[T any](c *Client, ctx context.Context, call func(context.Context, *reentrant.Node) (T, error)) []reply[T] {
	return fanOutFor(c, ctx, kindAcquire, c.opts.Lease, call)
}

// fanOutFor runs call on every node in parallel and collects the answers.
// Each node's call is bounded here, not by trusting the go-redis client's
// settings: by the node's own timeout for a call of kind on a lock with
// lease (see Options.NodeTimeout), and, once a quorum has agreed (see
// isAgreement), by the node's typical timeout, since the outcome no longer
// depends on it. A node that has not answered by then (or when ctx ends) gets
// ErrNodeTimeout (or ctx's error), and its call is left to finish in the
// background, observable through reply.late. Every answer, late ones
// included, feeds the node's round-trip estimate. replies[i] is node i's
// answer.
func fanOutFor[T any](c *Client, ctx context.Context, kind callKind, lease time.Duration,
	call func(context.Context, *reentrant.Node) (T, error)) []reply[T] {
	return fanOutTo(c, ctx, kind, lease, -1, c.quorum, call)
}

// errNotAsked is the reply of a node a fan-out to another node left out.
var errNotAsked = fmt.Errorf("%w: node not asked", reentrant.ErrNotSent)

// fanOutTo is fanOutFor, on node only when only ≥ 0 (the other nodes'
// replies are then errNotAsked), for an operation that needs need nodes to
// agree (the Client's quorum, or a hold's own; see holdKind).
func fanOutTo[T any](c *Client, ctx context.Context, kind callKind, lease time.Duration, only, need int,
	call func(context.Context, *reentrant.Node) (T, error)) []reply[T] {
	n := len(c.nodes)
	start := time.Now()
	// One allocation for every node's state, and one for its outcome.
	calls := make([]nodeCall[T], n)
	outcomes := make([]outcome[T], n)
	finished := make(chan int, n) // buffered: a late call never blocks
	for i, node := range c.nodes {
		nc := &calls[i]
		nc.outcome = &outcomes[i]
		if only >= 0 && i != only {
			nc.answered, nc.stopped = true, true
			nc.outcome.err = errNotAsked
			continue
		}
		wait, token := c.waits.wait(i, kind, lease)
		nc.limit = start.Add(wait)
		callCtx, cancel := context.WithTimeout(ctx, wait)
		nc.cancel = cancel
		o := nc.outcome
		o.done = make(chan struct{})
		c.inflight.Add(1)
		c.workers.Go(func() {
			defer c.inflight.Done()
			o.value, o.err = call(callCtx, node)
			c.waits.observe(i, token, wait, time.Since(start), isAnswer(o.value, o.err))
			close(o.done)
			finished <- i
		})
	}

	ok := 0
	var timer *time.Timer // made at the first wait that needs it
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
collect:
	for {
		next := time.Time{}
		for i := range calls {
			if nc := &calls[i]; !nc.stopped && (next.IsZero() || nc.limit.Before(next)) {
				next = nc.limit
			}
		}
		if next.IsZero() {
			break
		}
		if timer == nil {
			timer = time.NewTimer(time.Until(next))
		} else {
			timer.Reset(time.Until(next))
		}
		select {
		case i := <-finished:
			nc := &calls[i]
			nc.answered, nc.stopped = true, true
			if o := nc.outcome; o.err != nil || !isAnswer(o.value, nil) || !isAgreement(o.value) {
				continue
			}
			nc.agreed = true
			if ok++; ok == need {
				agreed := make([]bool, n)
				for j := range calls {
					agreed[j] = calls[j].agreed
				}
				for j := range calls {
					if nc := &calls[j]; !nc.stopped {
						nc.limit = minTime(nc.limit, start.Add(c.waits.typical(j, agreed)))
					}
				}
			}
		case <-timer.C:
			now := time.Now()
			for i := range calls {
				if nc := &calls[i]; !nc.limit.After(now) {
					nc.stopped = true
				}
			}
		case <-ctx.Done():
			break collect
		}
	}
	// Calls still queued are dropped; those on the wire still bring their
	// answer back (the pipelines wait for it), to the estimate and to
	// reply.late.
	for i := range calls {
		if cancel := calls[i].cancel; cancel != nil {
			cancel()
		}
	}

	replies := make([]reply[T], n)
	for i := range calls {
		nc, r := &calls[i], &replies[i]
		r.node = i
		switch {
		case !nc.answered:
			r.late = nc.outcome
			r.err = ErrNodeTimeout
			if ctx.Err() != nil {
				r.err = ctx.Err()
			}
		default:
			r.value, r.err = nc.outcome.value, nc.outcome.err
			if ctx.Err() == nil {
				r.err = asNodeTimeout(r.err)
			}
		}
	}
	noteNodeErrors(c, ctx, replies)
	return replies
}

// nodeCall is one node's part of a fan-out, as fanOutTo follows it.
type nodeCall[T any] struct {
	outcome  *outcome[T]
	cancel   context.CancelFunc // nil for a node not asked
	limit    time.Time          // when fanOutTo stops waiting for the node
	answered bool
	agreed   bool // answered, and in favour of the operation
	stopped  bool // answered, or no longer waited for
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// asNodeTimeout reports a node call that ran out of time as ErrNodeTimeout,
// whichever deadline caught it first: the per-node ctx (never reported as
// context.DeadlineExceeded, which belongs to the caller's ctx) or the
// client's socket timeout (kept as the cause).
func asNodeTimeout(err error) error {
	var netErr net.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return ErrNodeTimeout
	case errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("%w: %w", ErrNodeTimeout, err)
	}
	return err
}

// failures lists the nodes whose answer carries an error, for a QuorumError.
func failures[T any](c *Client, replies []reply[T]) []NodeError {
	var out []NodeError
	for _, r := range replies {
		if r.err != nil {
			out = append(out, NodeError{Node: r.node, Addr: c.addrs[r.node], Err: r.err})
		}
	}
	return out
}

package lock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/relock-go/relock/internal/callctx"
	"github.com/relock-go/relock/internal/rtt"
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
	done  chan struct{} // closed once the call ended; set for a late call only
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
	if kind == kindSurvey {
		need = n // every node's answer is the outcome
	}
	start := time.Now()
	// One allocation for every node's state, its outcome and context
	// included.
	calls := make([]nodeCall[T], n)
	finished := make(chan int, n) // buffered: a late call never blocks
	here := c.waits.callableHere(only)
	for i, node := range c.nodes {
		nc := &calls[i]
		if only >= 0 && i != only {
			nc.answered, nc.stopped = true, true
			nc.outcome.err = errNotAsked
			continue
		}
		wait, token := c.waits.wait(i, kind, lease)
		if i == here && !c.waits.seesCancelIn(ctx, wait) {
			here = -1 // a worker makes it: the cancellation must be seen sooner
		}
		nc.limit = start.Add(wait)
		nc.ctx = nodeCtx{Context: callctx.Context{Context: ctx, At: nc.limit, Timed: i == here}, running: true}
		nc.c, nc.i, nc.node, nc.call, nc.finished = c, i, node, call, finished
		nc.start, nc.wait, nc.token = start, wait, token
		c.inflight.Add(1)
		if i != here {
			c.workers.Run(nc)
		}
	}
	if here >= 0 {
		nc := &calls[here]
		nc.Run()
		if time.Now().After(nc.limit) {
			// Late, as it would have been on a worker: fanOutTo would have
			// stopped waiting for it at its limit.
			<-finished
			nc.stopped = true
		}
	}

	ok := 0
	answered := func(i int) {
		nc := &calls[i]
		nc.answered, nc.stopped = true, true
		if o := &nc.outcome; o.err != nil || !isAnswer(o.value, nil) || !isAgreement(o.value) {
			return
		}
		nc.agreed = true
		if ok++; ok == need {
			var buf [8]bool // the usual node counts need no allocation
			agreed := buf[:0]
			for j := range calls {
				agreed = append(agreed, calls[j].agreed)
			}
			for j := range calls {
				if nc := &calls[j]; !nc.stopped {
					nc.limit = minTime(nc.limit, start.Add(c.waits.typical(j, agreed)))
				}
			}
		}
	}
	var timer *time.Timer // taken at the first wait that needs it
	defer func() {
		if timer != nil {
			putTimer(timer)
		}
	}()
collect:
	for {
		select {
		case i := <-finished: // no timer needed for an answer already in
			answered(i)
			continue
		default:
		}
		next, waiting := time.Time{}, false
		for i := range calls {
			nc := &calls[i]
			if !nc.stopped {
				waiting = true
				next = earliest(next, nc.limit)
			}
			if !nc.answered && nc.ctx.running {
				// Its context ends at its deadline even once the node is
				// no longer waited for, as a context.WithTimeout would.
				next = earliest(next, nc.ctx.At)
			}
		}
		if !waiting {
			break
		}
		if timer == nil {
			timer = getTimer()
		}
		timer.Reset(time.Until(next))
		select {
		case i := <-finished:
			answered(i)
		case <-timer.C:
			now := time.Now()
			for i := range calls {
				nc := &calls[i]
				if !nc.limit.After(now) {
					if !nc.stopped && !now.Before(nc.start.Add(nc.wait)) {
						// No answer in the node's whole wait: back off now,
						// not when the call returns (its client may hold it
						// for seconds more), so the next call already
						// waits as after a timeout.
						c.waits.expired(i, nc.token)
					}
					nc.stopped = true
				}
				if nc.ctx.running && !nc.ctx.At.After(now) {
					nc.endCtx(context.DeadlineExceeded)
				}
			}
		case <-ctx.Done():
			break collect
		}
	}
	// Calls still queued are dropped; those on the wire still bring their
	// answer back (the pipelines wait for it), to the estimate and to
	// reply.late.
	ended := ctx.Err()
	if ended == nil {
		ended = context.Canceled
	}
	for i := range calls {
		if nc := &calls[i]; nc.ctx.running {
			nc.endCtx(ended)
		}
	}

	replies := make([]reply[T], n)
	for i := range calls {
		nc, r := &calls[i], &replies[i]
		r.node = i
		switch {
		case !nc.answered:
			r.late = nc.lateOutcome()
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

// nodeCall is one node's part of a fan-out: the call a worker makes (Run),
// and its state as fanOutTo follows it.
type nodeCall[T any] struct {
	// The call, set before it starts.
	c        *Client
	i        int
	node     *reentrant.Node
	call     func(context.Context, *reentrant.Node) (T, error)
	ctx      nodeCtx
	finished chan<- int // receives i once outcome is set
	start    time.Time
	wait     time.Duration
	token    rtt.Token

	// outcome is set by Run, and read by fanOutTo once finished delivered
	// i, or by a clean-up once outcome.done closed.
	outcome outcome[T]
	mu      sync.Mutex // guards ran, and outcome.done
	ran     bool

	// fanOutTo's own.
	limit    time.Time // when fanOutTo stops waiting for the node
	answered bool
	agreed   bool // answered, and in favour of the operation
	stopped  bool // answered, or no longer waited for
}

// Run makes the node call, on a worker goroutine or, for the one node
// nodeWaits.callableHere names, on fanOutTo's own.
func (nc *nodeCall[T]) Run() {
	nc.complete(nc.call(&nc.ctx, nc.node))
}

// complete records the call's outcome and tells fanOutTo.
func (nc *nodeCall[T]) complete(value T, err error) {
	defer nc.c.inflight.Done()
	o := &nc.outcome
	o.value, o.err = value, err
	nc.c.waits.observe(nc.i, nc.token, nc.wait, time.Since(nc.start), isAnswer(o.value, o.err), o.err)
	nc.mu.Lock()
	nc.ran = true
	if o.done != nil {
		close(o.done)
	}
	nc.mu.Unlock()
	nc.finished <- nc.i
}

// endCtx ends the call's context with err.
func (nc *nodeCall[T]) endCtx(err error) {
	nc.ctx.running = false
	nc.ctx.End(err)
}

// lateOutcome is the outcome of a call fanOutTo stopped waiting for; its
// done channel closes when the call ends. The channel is made here, not for
// every call: most calls are answered in time and never need one.
func (nc *nodeCall[T]) lateOutcome() *outcome[T] {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	if nc.ran {
		nc.outcome.done = closedChan // it ended just now
	} else {
		nc.outcome.done = make(chan struct{})
	}
	return &nc.outcome
}

// nodeCtx is the context a node's call runs on within a fan-out: the
// fan-out ctx's values, a deadline of the node's own, and done when
// fanOutTo ends it (at that deadline, when the fan-out ctx ends, or when the
// fan-out returns). It does the work of a context.WithTimeout per node call
// without a timer or an allocation of its own (fanOutTo's loop already wakes
// at each node's deadline), and makes its channel only for a call that
// waits on it. A call on fanOutTo's own goroutine (see
// nodeWaits.callableHere), whose loop cannot end the context meanwhile, has
// it Timed: if the call waits on Done (queued behind its node's busy
// pipelines) a timer ends it at the deadline, and the fan-out ctx's
// cancellation ends it as it comes.
type nodeCtx struct {
	callctx.Context
	running bool // not ended by fanOutTo yet; fanOutTo's own
}

// timers keeps stopped timers for fanOutTo's waits: a fan-out would
// otherwise make one each time.
var timers sync.Pool

// getTimer returns a stopped timer from timers, or a new one.
func getTimer() *time.Timer {
	if t, ok := timers.Get().(*time.Timer); ok {
		return t
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

// putTimer stops t and gives it back to timers. (Since Go 1.23 a stopped
// timer's channel holds no stale tick, so its next user cannot see one.)
func putTimer(t *time.Timer) {
	t.Stop()
	timers.Put(t)
}

// earliest is the earlier of a and b, where a zero a means none yet.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
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
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return ErrNodeTimeout
	case isNetTimeout(err):
		return fmt.Errorf("%w: %w", ErrNodeTimeout, err)
	}
	return err
}

// isNetTimeout reports whether err is a network timeout. (Apart from
// asNodeTimeout so that an answer without an error allocates no net.Error
// for errors.As.)
func isNetTimeout(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
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

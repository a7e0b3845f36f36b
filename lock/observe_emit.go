package lock

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/reentrant"
)

// The Client's side of Observer: each helper returns at once when the hooks
// it feeds are nil, before building any event, so that a Client without an
// Observer allocates nothing and reads no clock for it.

// lockCall is what the observer needs of a Lock or TryLock call in progress.
type lockCall struct {
	start    time.Time // zero when LockDone is not set
	attempts int
	wait     bool // a blocking Lock, not a TryLock
}

// lockStarted reports a Lock or TryLock call and returns the ctx it goes on
// with.
func (c *Client) lockStarted(ctx context.Context, h *hold, lease time.Duration, renewed, wait bool) (context.Context, lockCall) {
	call := lockCall{wait: wait}
	if c.obs.LockDone != nil {
		call.start = time.Now()
	}
	if f := c.obs.LockStart; f != nil {
		ctx = started(ctx, f(ctx, LockStartInfo{Name: h.key.Name, Try: !wait, Lease: lease, Renewed: renewed}))
	}
	return ctx, call
}

// lockEnded reports the end of a Lock or TryLock call.
func (c *Client) lockEnded(ctx context.Context, h *hold, call *lockCall, w *waiter, wait, acquired bool, err error) {
	f := c.obs.LockDone
	if f == nil {
		return
	}
	f(ctx, LockDoneInfo{
		Name: h.key.Name, Try: !wait, Outcome: lockOutcome(acquired, err),
		Attempts: call.attempts, Sleeps: w.sleeps, LastWake: w.lastWake,
		Wait: time.Since(call.start), Err: err,
	})
}

func lockOutcome(acquired bool, err error) LockOutcome {
	switch {
	case acquired:
		return LockAcquired
	case err == nil:
		return LockBusy
	case errors.Is(err, ErrClosed):
		return LockClosed
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return LockTimedOut
	case errors.Is(err, ErrLost):
		return LockLost
	case errors.Is(err, ErrNoQuorum):
		return LockNoQuorum
	}
	return LockFailed
}

// attempted counts an acquire attempt of call and reports it, with any
// clock trouble it shows. only is the node a probe went to, or -1.
func (c *Client) attempted(ctx context.Context, h *hold, op reentrant.Op, only int, a attempt, call *lockCall) {
	if !a.sent {
		return
	}
	call.attempts++
	if c.obs.Attempt == nil && c.obs.ClockTrouble == nil {
		return
	}
	// a.deadline is the attempt's start plus its lease.
	elapsed := time.Since(a.deadline.Add(-op.Lease))
	e := AttemptInfo{
		Name: h.key.Name, Probe: only >= 0, Reentry: op.Reentry,
		Nodes: len(c.nodes), Quorum: h.kind.quorum, Elapsed: elapsed,
		Validity: validity(op.Lease, elapsed, c.opts.ClockDriftFactor),
		Drift:    drift(op.Lease, c.opts.ClockDriftFactor),
	}
	for _, r := range a.replies {
		if r.err == nil && r.value.Acquired {
			e.Agreed++
		}
	}
	e.Outcome = c.attemptOutcome(a, op, only, e.Agreed)
	if f := c.obs.Attempt; f != nil {
		f(ctx, e)
	}
	if e.Agreed >= e.Quorum && e.Validity <= 0 {
		c.clockTrouble(ClockTroubleInfo{Name: e.Name, Op: OpAcquire, Kind: ValidityExhausted, Elapsed: elapsed, Drift: e.Drift, Validity: e.Validity})
	}
	if elapsed > e.Drift {
		c.clockTrouble(ClockTroubleInfo{Name: e.Name, Op: OpAcquire, Kind: SlowerThanDrift, Elapsed: elapsed, Drift: e.Drift, Validity: e.Validity})
	}
}

func (c *Client) attemptOutcome(a attempt, op reentrant.Op, only, agreed int) AttemptOutcome {
	quorum := cmp.Or(a.need, c.quorum)
	// acquire sets a *QuorumError as it is (no errors.As: its target would
	// cost an allocation per event).
	qe, _ := a.err.(*QuorumError)
	switch {
	case a.acquired:
		return AttemptAcquired
	case errors.Is(a.err, context.Canceled), errors.Is(a.err, context.DeadlineExceeded):
		return AttemptCanceled
	case qe != nil && qe.Late:
		return AttemptLate
	case op.Reentry && a.absent > len(c.nodes)-quorum:
		return AttemptLost
	case a.contended && a.err == nil:
		return AttemptContended
	case only >= 0 && agreed > 0:
		return AttemptProbeWon
	}
	return AttemptNoQuorum
}

func (c *Client) clockTrouble(e ClockTroubleInfo) {
	if f := c.obs.ClockTrouble; f != nil {
		f(e)
	}
}

// sleepStarted reports a blocking Lock going to sleep for at most d and
// returns when it did (zero when SleepDone is not set).
func (c *Client) sleepStarted(ctx context.Context, h *hold, d time.Duration) time.Time {
	if f := c.obs.SleepStart; f != nil {
		f(ctx, SleepStartInfo{Name: h.key.Name, Max: d})
	}
	if c.obs.SleepDone == nil {
		return time.Time{}
	}
	return time.Now()
}

// slept records how the waiter's sleep that began at start ended, from
// what wait returned, and reports it.
func (w *waiter) slept(ctx context.Context, h *hold, start time.Time, err error) {
	w.sleeps++
	switch {
	case w.woken:
		w.lastWake = WokenByRelease
	case err == nil:
		w.lastWake = WokenByExpiry
	case errors.Is(err, ErrClosed):
		w.lastWake = WaitClosed
	default:
		w.lastWake = WaitTimedOut
	}
	if f := h.c.obs.SleepDone; f != nil {
		f(ctx, SleepDoneInfo{Name: h.key.Name, Slept: time.Since(start), Ended: w.lastWake})
	}
}

// unlockStarted reports an Unlock call and returns the ctx it goes on with.
func (c *Client) unlockStarted(ctx context.Context, h *hold) context.Context {
	if f := c.obs.UnlockStart; f != nil {
		ctx = started(ctx, f(ctx, UnlockStartInfo{Name: h.key.Name}))
	}
	return ctx
}

// releaseTally is what the observer needs of a release in progress.
type releaseTally struct {
	start           time.Time
	target          int64 // the count the release sets; -1 when it sent nothing
	reached, agreed int
}

// newReleaseTally starts the tally of a release (its clock only when
// Release is set).
func (c *Client) newReleaseTally() releaseTally {
	t := releaseTally{target: -1}
	if c.obs.Release != nil {
		t.start = time.Now()
	}
	return t
}

// released reports the end of a release of h. A release of every hold that
// found none (nothing to do) is not reported.
func (c *Client) released(ctx context.Context, h *hold, all bool, t *releaseTally, err error) {
	f := c.obs.Release
	if f == nil || all && t.target < 0 {
		return
	}
	e := ReleaseInfo{
		Name: h.key.Name, All: all, Full: t.target == 0, Count: max(t.target, 0),
		Reached: t.reached, Agreed: t.agreed, Nodes: len(c.nodes), Elapsed: time.Since(t.start), Err: err,
	}
	switch {
	case err == nil && t.target == 0:
		e.Outcome = Released
	case err == nil:
		e.Outcome = ReleaseStillHeld
	case errors.Is(err, ErrClosed):
		e.Outcome = ReleaseClosed
	case errors.Is(err, ErrNotHeld):
		e.Outcome = ReleaseNotHeld
	case errors.Is(err, ErrLost):
		e.Outcome = ReleaseLost
	case errors.Is(err, ErrNoQuorum):
		e.Outcome = ReleaseNoQuorum
	}
	f(ctx, e)
}

// doStarted reports a Do call and returns the ctx it goes on with, and its
// start (zero when DoDone is not set).
func (c *Client) doStarted(ctx context.Context, name string) (context.Context, time.Time) {
	if f := c.obs.DoStart; f != nil {
		ctx = started(ctx, f(ctx, DoStartInfo{Name: name}))
	}
	if c.obs.DoDone == nil {
		return ctx, time.Time{}
	}
	return ctx, time.Now()
}

// doEnded reports the end of a Do call.
func (c *Client) doEnded(ctx context.Context, name string, start time.Time, ran bool, err error) {
	if f := c.obs.DoDone; f != nil {
		f(ctx, DoDoneInfo{Name: name, Ran: ran, Lost: ran && errors.Is(err, ErrLost), Took: time.Since(start), Err: err})
	}
}

// holdChanged reports that h started or stopped holding its lock.
func (c *Client) holdChanged(h *hold, held bool) {
	if f := c.obs.Hold; f != nil {
		f(HoldInfo{Name: h.key.Name, Held: held})
	}
}

// lost reports the loss of h's hold.
func (c *Client) lost(h *hold, why LossReason) {
	if f := c.obs.Loss; f != nil {
		f(LossInfo{Name: h.key.Name, Reason: why})
	}
}

// renewed reports a renewal batch of ops, its replies and outcomes.
func (c *Client) renewed(ops []reentrant.Op, replies []reply[[]reentrant.RenewResult], renewed, lost int, elapsed time.Duration) {
	if c.obs.Renewal == nil && c.obs.ClockTrouble == nil {
		return
	}
	e := RenewalInfo{Locks: len(ops), Renewed: renewed, Lost: lost, Nodes: len(c.nodes), Elapsed: elapsed}
	for _, op := range ops {
		if op.Count == 0 {
			e.Skipped++
		}
	}
	e.Failed = e.Locks - e.Renewed - e.Lost - e.Skipped
	for _, r := range replies {
		if isAnswer(r.value, r.err) {
			e.Answered++
		}
	}
	if f := c.obs.Renewal; f != nil {
		f(e)
	}
	d, v := drift(c.opts.Lease, c.opts.ClockDriftFactor), validity(c.opts.Lease, elapsed, c.opts.ClockDriftFactor)
	if v <= 0 && e.Answered >= c.quorum {
		c.clockTrouble(ClockTroubleInfo{Op: OpRenew, Kind: ValidityExhausted, Elapsed: elapsed, Drift: d, Validity: v})
	}
	if elapsed > d {
		c.clockTrouble(ClockTroubleInfo{Op: OpRenew, Kind: SlowerThanDrift, Elapsed: elapsed, Drift: d, Validity: v})
	}
}

// noteNodeErrors reports the failed calls among a fan-out's replies, made
// on ctx. A reply cut short by ctx's own end, or a node a probe did not ask,
// is no node's failure.
func noteNodeErrors[T any](c *Client, ctx context.Context, replies []reply[T]) {
	if c.obs.NodeError == nil {
		return
	}
	op := nodeOpOf[T]()
	for _, r := range replies {
		err := r.err
		if err == nil {
			err = batchError(r.value)
		}
		switch {
		case err == nil, errors.Is(err, errNotAsked):
		case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		default:
			c.nodeError(ctx, r.node, op, err)
		}
	}
}

// noteCleanupErrors reports a background round to node that failed: once
// per round, with the first error (one broken connection fails them all).
func (c *Client) noteCleanupErrors(node int, results []reentrant.ChangeResult) {
	if c.obs.NodeError == nil {
		return
	}
	for _, r := range results {
		if r.Err != nil && !reentrant.NotSent(r.Err) {
			c.nodeError(context.Background(), node, OpCleanup, asNodeTimeout(r.Err))
			return
		}
	}
}

func (c *Client) nodeError(ctx context.Context, node int, op NodeOp, err error) {
	c.obs.NodeError(ctx, NodeErrorInfo{Node: node, Addr: c.labels[node], Op: op, Kind: nodeErrorKind(err), Err: err})
}

// nodeOpOf names the node call a fan-out of replies of type T makes.
func nodeOpOf[T any]() NodeOp {
	switch any((*T)(nil)).(type) {
	case *reentrant.Acquisition:
		return OpAcquire
	case *reentrant.ReleaseResult:
		return OpRelease
	case *[]reentrant.RenewResult:
		return OpRenew
	case *reentrant.Info, *reentrant.SemaphoreState:
		return OpInspect
	case *int64:
		return OpFence
	case *bool:
		return OpForceUnlock
	}
	return NodeOp("")
}

// batchError is the failure of a renewal batch that failed as a whole (its
// node answered none of it); nil otherwise.
func batchError(value any) error {
	results, ok := value.([]reentrant.RenewResult)
	if !ok || len(results) == 0 || isAnswer(results, nil) {
		return nil
	}
	return asNodeTimeout(results[0].Err)
}

// nodeErrorKind classifies a node call's failure.
func nodeErrorKind(err error) NodeErrorKind {
	var (
		netErr   net.Error
		opErr    *net.OpError
		redisErr redis.Error
	)
	switch {
	case errors.Is(err, ErrNodeTimeout):
		return NodeTimeout
	case errors.Is(err, ErrWrongType):
		return NodeWrongType
	case errors.Is(err, ErrNotReplicated):
		return NodeNotReplicated
	case errors.Is(err, ErrCapacityMismatch):
		return NodeServerError // the node's reply, read as a typed error
	case errors.As(err, &netErr) && netErr.Timeout():
		return NodeTimeout
	case errors.As(err, &opErr), errors.Is(err, redis.ErrClosed), errors.Is(err, redis.ErrPoolTimeout),
		errors.Is(err, net.ErrClosed), isEOF(err), connectionLost(err):
		return NodeUnreachable
	case errors.As(err, &redisErr):
		return NodeServerError
	}
	return NodeOtherError
}

// pubsubHook is the Broker's connection hook when PubSub is set.
func (c *Client) pubsubHook() func(node int, up bool) {
	f := c.obs.PubSub
	if f == nil {
		return nil
	}
	return func(node int, up bool) { f(PubSubInfo{Node: node, Addr: c.labels[node], Up: up}) }
}

func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// connectionLost reports a connection the peer reset, refused or closed
// under us (go-redis may hand these up as bare syscall errors).
func connectionLost(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE)
}

// started is the ctx a Start hook returned, or ctx when it returned nil.
func started(ctx, returned context.Context) context.Context {
	if returned == nil {
		return ctx
	}
	return returned
}

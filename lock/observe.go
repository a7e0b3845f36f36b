package lock

import (
	"context"
	"time"
)

// Observer receives relock's events, for metrics, traces or logs: set it in
// Options.Observer. The modules github.com/relock-go/relock/prometheus and
// github.com/relock-go/relock/otel fill one in; Merge combines several.
//
// It is a struct of optional hooks rather than an interface, as
// net/http/httptrace.ClientTrace is, for three reasons: an observer sets only
// the hooks it needs; a hook added in a later release breaks no existing
// observer; and a hook left nil costs one comparison, with no event built and
// nothing allocated, so a Client without an Observer pays nothing for this.
//
// Hooks run synchronously on relock's goroutines, often in the middle of an
// operation (Attempt between two round trips of a Lock, Renewal on the
// watchdog's only goroutine), and may run concurrently: they must be quick,
// must not block, and must not call back into the Client or Mutex that
// reported the event. Events are passed by value; an Err field is the
// operation's own error value, not a copy.
//
// The Start hooks return the context the operation goes on with: every
// node call of that operation runs on it (with its cancellation and deadline
// replaced by relock's own per-node bounds, and its values kept), so a span
// a Start hook puts in it is the parent of the go-redis commands (and of any
// go-redis hook, such as redisotel's), and the matching Done hook receives
// it. A Start hook that has nothing to add returns ctx itself.
type Observer struct {
	// LockStart is called when Lock, LockFor, TryLock or TryLockFor begins.
	// Attempt, SleepStart, SleepDone, NodeError and LockDone of that call
	// receive the context it returns.
	LockStart func(ctx context.Context, e LockStartInfo) context.Context
	// LockDone is called when that call returns, whatever the outcome.
	LockDone func(ctx context.Context, e LockDoneInfo)
	// Attempt is called after each acquire attempt of a Lock or TryLock:
	// one quorum round over the nodes, or a probe of the tie-breaker node.
	Attempt func(ctx context.Context, e AttemptInfo)
	// SleepStart is called each time a blocking Lock goes to sleep between
	// attempts, waiting for the holder's release or its lease.
	SleepStart func(ctx context.Context, e SleepStartInfo)
	// SleepDone is called when that sleep ends.
	SleepDone func(ctx context.Context, e SleepDoneInfo)

	// UnlockStart is called when Unlock begins; Release receives the context
	// it returns.
	UnlockStart func(ctx context.Context, e UnlockStartInfo) context.Context
	// Release is called when a release ends: each Unlock (ReleaseInfo.All
	// false), and each handle whose holds are all released at once because
	// its hold context ended or the Client is closing (All true; ctx is then
	// the Client's own, without the caller's values).
	Release func(ctx context.Context, e ReleaseInfo)

	// DoStart is called when Client.Do begins. The context it returns is
	// the one Do's Lock, fn and Unlock run on.
	DoStart func(ctx context.Context, e DoStartInfo) context.Context
	// DoDone is called when Do returns, after its Unlock.
	DoDone func(ctx context.Context, e DoDoneInfo)

	// Hold is called when a handle starts holding a lock (a first
	// acquisition) and when it stops (its last Unlock, a hold context that
	// ended, Close). The holds it counts are Stats.HeldNow's: a lost hold
	// counts until its handle unlocks it.
	Hold func(e HoldInfo)
	// Renewal is called after each batch of watchdog renewals.
	Renewal func(e RenewalInfo)
	// Loss is called once for each hold reported lost (Mutex.Lost closes).
	Loss func(e LossInfo)
	// NodeError is called for each node call that failed or did not answer
	// in time: one per node per operation, for the operations of callers
	// (ctx is theirs), renewal batches and background clean-ups. A call cut
	// short because the caller's own ctx ended is not the node's failure and
	// is not reported.
	NodeError func(ctx context.Context, e NodeErrorInfo)
	// PubSub is called when a node's shared Pub/Sub connection, which wakes
	// waiters, breaks after working, and when it works again.
	PubSub func(e PubSubInfo)
	// ClockTrouble is called when an operation's timing undermines the
	// validity rule: see ClockTroubleKind.
	ClockTrouble func(e ClockTroubleInfo)
}

// LockStartInfo describes a Lock, LockFor, TryLock or TryLockFor call.
type LockStartInfo struct {
	Name    string
	Try     bool          // TryLock or TryLockFor: one attempt, no wait
	Lease   time.Duration // the lease asked for
	Renewed bool          // the watchdog renews the hold (Lock, TryLock)
}

// LockDoneInfo describes the end of a Lock or TryLock call.
type LockDoneInfo struct {
	Name    string
	Try     bool
	Outcome LockOutcome
	// Attempts counts the acquire attempts sent to the nodes, probes
	// included; 0 when the call ended before any (Close, a bad lease).
	Attempts int
	// Sleeps counts the times the call slept between attempts; LastWake
	// says how the last sleep ended ("" when it never slept).
	Sleeps   int
	LastWake WaitEnd
	// Wait is the whole call, from its start to its return.
	Wait time.Duration
	// Err is the error the call returned (nil when acquired, and for a
	// TryLock that found the lock held).
	Err error
}

// LockOutcome is how a Lock or TryLock call ended.
type LockOutcome string

// The outcomes of a Lock or TryLock call.
const (
	LockAcquired LockOutcome = "acquired"  // the handle holds the lock
	LockBusy     LockOutcome = "busy"      // TryLock: another owner holds it
	LockTimedOut LockOutcome = "timeout"   // the caller's ctx ended first
	LockNoQuorum LockOutcome = "no_quorum" // the nodes could not agree (TryLock, or foreign data)
	LockLost     LockOutcome = "lost"      // a re-entry found the hold lost (ErrLost)
	LockClosed   LockOutcome = "closed"    // the Client is closed or closing
	LockFailed   LockOutcome = "error"     // any other error (a bad argument, duplicate nodes)
)

// AttemptInfo describes one acquire attempt.
type AttemptInfo struct {
	Name    string
	Outcome AttemptOutcome
	Probe   bool // it asked the lock's tie-breaker node alone (see Options.Nodes)
	Reentry bool // the owner already held the lock: it nests
	// Agreed is how many nodes took the attempt, of Nodes; Quorum of them
	// were needed.
	Agreed, Nodes, Quorum int
	// Elapsed is the attempt's round, from sending to the last answer it
	// waited for.
	Elapsed time.Duration
	// Validity is lease − Elapsed − Drift: how long a hold won by the
	// attempt is known to be valid; not positive means a quorum answered
	// too late to be used.
	Validity time.Duration
	// Drift is the attempt's allowance for clock drift, lease ×
	// Options.ClockDriftFactor + 2 ms.
	Drift time.Duration
}

// AttemptOutcome is what an acquire attempt came to.
type AttemptOutcome string

// The outcomes of an acquire attempt.
const (
	AttemptAcquired  AttemptOutcome = "acquired"  // a quorum agreed in time: the lock is held
	AttemptContended AttemptOutcome = "contended" // another owner holds it on too many nodes
	AttemptNoQuorum  AttemptOutcome = "no_quorum" // nodes failed or did not answer: no quorum either way
	AttemptLate      AttemptOutcome = "late"      // a quorum agreed after the validity ran out
	AttemptCanceled  AttemptOutcome = "canceled"  // the caller's ctx ended during the attempt
	AttemptProbeWon  AttemptOutcome = "probe_won" // a probe took the tie-breaker: a full attempt follows
	AttemptLost      AttemptOutcome = "lost"      // a re-entry found the hold gone from too many nodes
)

// SleepStartInfo describes a blocking Lock going to sleep between attempts.
type SleepStartInfo struct {
	Name string
	// Max is the longest it sleeps unless woken: the holder's remaining
	// lease, or a retry delay.
	Max time.Duration
}

// SleepDoneInfo describes the end of one sleep of a blocking Lock.
type SleepDoneInfo struct {
	Name  string
	Slept time.Duration
	Ended WaitEnd
}

// WaitEnd is how a sleep of a blocking Lock ended.
type WaitEnd string

// The ends of a sleep.
const (
	// WokenByRelease: a release of the lock was handed to this waiter (or
	// a Pub/Sub reconnect woke every waiter, since a release may have been
	// missed).
	WokenByRelease WaitEnd = "release"
	// WokenByExpiry: the holder's lease ran out, or a retry delay passed,
	// with no release heard.
	WokenByExpiry WaitEnd = "expiry"
	// WaitTimedOut: the caller's ctx ended.
	WaitTimedOut WaitEnd = "timeout"
	// WaitClosed: the Client began closing.
	WaitClosed WaitEnd = "closed"
)

// UnlockStartInfo describes an Unlock call.
type UnlockStartInfo struct {
	Name string
}

// ReleaseInfo describes a release: an Unlock, or every hold of a handle let
// go at once.
type ReleaseInfo struct {
	Name    string
	All     bool // every hold at once: the hold context ended, or Close
	Outcome ReleaseOutcome
	// Full: the hold count went to zero, freeing the lock; Count is the
	// count left otherwise.
	Full  bool
	Count int64
	// Reached is how many nodes answered, of Nodes; Agreed is how many of
	// them found the owner's hold and released it.
	Reached, Agreed, Nodes int
	Elapsed                time.Duration
	Err                    error // the error Unlock returned
}

// ReleaseOutcome is what a release came to.
type ReleaseOutcome string

// The outcomes of a release.
const (
	Released         ReleaseOutcome = "released"   // a quorum confirmed: the lock is free
	ReleaseStillHeld ReleaseOutcome = "still_held" // a quorum confirmed one hold fewer; more remain
	ReleaseLost      ReleaseOutcome = "lost"       // the hold had been lost (ErrLost)
	ReleaseNoQuorum  ReleaseOutcome = "no_quorum"  // fewer than a quorum confirmed; retried in the background
	ReleaseNotHeld   ReleaseOutcome = "not_held"   // nothing held (ErrNotHeld): nothing sent
	ReleaseClosed    ReleaseOutcome = "closed"     // Unlock after Close (ErrClosed): nothing sent
)

// DoStartInfo describes a Client.Do call.
type DoStartInfo struct {
	Name string
}

// DoDoneInfo describes the end of a Client.Do call.
type DoDoneInfo struct {
	Name string
	Ran  bool          // the lock was acquired and fn ran
	Lost bool          // the lock was lost while fn ran
	Took time.Duration // the whole call: waiting, fn, Unlock
	Err  error         // Do's error
}

// HoldInfo describes a handle that starts or stops holding a lock.
type HoldInfo struct {
	Name string
	Held bool // true: it starts holding; false: it stops
}

// RenewalInfo describes one batch of watchdog renewals: one pipelined round
// trip per node for every lock in it.
type RenewalInfo struct {
	Locks   int // locks in the batch
	Renewed int // renewed by a quorum within validity
	Failed  int // not renewed this time; retried before the deadline
	Lost    int // a quorum answered they are not held: reported lost
	Skipped int // the owner had an operation on the wire; retried shortly
	// Answered is how many nodes answered the batch, of Nodes.
	Answered, Nodes int
	Elapsed         time.Duration
}

// LossInfo describes a hold reported lost.
type LossInfo struct {
	Name   string
	Reason LossReason
}

// LossReason is why a hold was lost.
type LossReason string

// The reasons a hold is lost.
const (
	// LossNotHeld: so many nodes answered that the owner does not hold the
	// lock (a renewal, a re-entry or an Unlock found out) that no quorum
	// can: it expired there during a stall, or was force-unlocked.
	LossNotHeld LossReason = "not_held"
	// LossRenewalFailed: renewals could not reach a quorum in time, and the
	// hold's validity ran out.
	LossRenewalFailed LossReason = "renewal_failed"
	// LossLeaseExpired: an explicit lease (LockFor, TryLockFor), which is
	// not renewed, ran out before Unlock.
	LossLeaseExpired LossReason = "lease_expired"
)

// NodeErrorInfo describes one failed node call.
type NodeErrorInfo struct {
	Node int    // index in Options.Nodes
	Addr string // the node's address, or a description with its index (a Sentinel failover client)
	Op   NodeOp
	Kind NodeErrorKind
	Err  error
}

// NodeOp names the kind of call a node failed.
type NodeOp string

// The calls relock makes to a node.
const (
	OpAcquire     NodeOp = "acquire"
	OpRelease     NodeOp = "release"
	OpRenew       NodeOp = "renew"        // a batch of renewals
	OpInspect     NodeOp = "inspect"      // Inspect, IsLocked, TTL, Semaphore.Available
	OpFence       NodeOp = "fence"        // writing a fencing token back
	OpForceUnlock NodeOp = "force_unlock" // ForceUnlock, Evict
	OpCleanup     NodeOp = "cleanup"      // background undo, release retries, repairs
)

// NodeErrorKind classifies a node call's failure.
type NodeErrorKind string

// The kinds of node failure.
const (
	NodeTimeout       NodeErrorKind = "timeout"        // no answer in time (ErrNodeTimeout)
	NodeUnreachable   NodeErrorKind = "unreachable"    // no connection: refused, reset, closed
	NodeWrongType     NodeErrorKind = "wrong_type"     // the key holds foreign data (ErrWrongType)
	NodeNotReplicated NodeErrorKind = "not_replicated" // too few replicas acknowledged in time (ErrNotReplicated)
	NodeServerError   NodeErrorKind = "server"         // the server answered with an error
	NodeOtherError    NodeErrorKind = "other"
)

// PubSubInfo describes a change of a node's shared Pub/Sub connection.
type PubSubInfo struct {
	Node int
	Addr string
	// Up is false when a working connection broke (its waiters are woken:
	// a release may have been missed), true when it works again.
	Up bool
}

// ClockTroubleInfo describes an operation whose timing undermines the
// validity rule.
type ClockTroubleInfo struct {
	Name     string // the lock; "" for a renewal batch
	Op       NodeOp // OpAcquire or OpRenew
	Kind     ClockTroubleKind
	Elapsed  time.Duration
	Drift    time.Duration
	Validity time.Duration
}

// ClockTroubleKind is the timing trouble detected.
type ClockTroubleKind string

// The kinds of clock trouble relock can see from the client. It cannot read
// the nodes' clocks; what it sees is time spent that the validity rule must
// absorb.
const (
	// ValidityExhausted: a quorum agreed, but lease − elapsed − drift came
	// out ≤ 0, so the answer could not be used.
	ValidityExhausted ClockTroubleKind = "validity_exhausted"
	// SlowerThanDrift: the round took longer than the drift allowance:
	// time spent in flight is invisible to the nodes' clocks, so rounds this
	// slow mean the drift allowance no longer bounds the uncertainty the
	// validity deadline must cover.
	SlowerThanDrift ClockTroubleKind = "slower_than_drift"
)

// Merge returns an Observer that calls every hook of each of obs (nil ones
// are skipped), in order. Start hooks are chained: each receives the
// context the previous one returned.
func Merge(obs ...*Observer) *Observer {
	var m Observer
	for _, o := range obs {
		if o == nil {
			continue
		}
		m.LockStart = chainStart(m.LockStart, o.LockStart)
		m.LockDone = chain(m.LockDone, o.LockDone)
		m.Attempt = chain(m.Attempt, o.Attempt)
		m.SleepStart = chain(m.SleepStart, o.SleepStart)
		m.SleepDone = chain(m.SleepDone, o.SleepDone)
		m.UnlockStart = chainStart(m.UnlockStart, o.UnlockStart)
		m.Release = chain(m.Release, o.Release)
		m.DoStart = chainStart(m.DoStart, o.DoStart)
		m.DoDone = chain(m.DoDone, o.DoDone)
		m.Hold = chainPlain(m.Hold, o.Hold)
		m.Renewal = chainPlain(m.Renewal, o.Renewal)
		m.Loss = chainPlain(m.Loss, o.Loss)
		m.NodeError = chain(m.NodeError, o.NodeError)
		m.PubSub = chainPlain(m.PubSub, o.PubSub)
		m.ClockTrouble = chainPlain(m.ClockTrouble, o.ClockTrouble)
	}
	return &m
}

func chainStart[E any](a, b func(context.Context, E) context.Context) func(context.Context, E) context.Context {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(ctx context.Context, e E) context.Context { return b(a(ctx, e), e) }
}

func chain[E any](a, b func(context.Context, E)) func(context.Context, E) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(ctx context.Context, e E) { a(ctx, e); b(ctx, e) }
}

func chainPlain[E any](a, b func(E)) func(E) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(e E) { a(e); b(e) }
}

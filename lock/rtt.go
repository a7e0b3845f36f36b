package lock

import (
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/rtt"
	"github.com/relock-go/relock/reentrant"
)

// releasePatience is how many times a fixed NodeTimeout a release waits
// for a node, and how many adaptive floors at least: a release has no
// validity to protect, and an Unlock that reports failure for a node that
// was merely slow is a false alarm.
const releasePatience = 4

// callKind says what a fan-out is waiting for.
type callKind int

const (
	// kindAcquire: acquires and reads. Bounded by the validity rule.
	kindAcquire callKind = iota
	// kindRelease: releases, which wait longer (see nodeWaits.wait).
	kindRelease
	// kindSurvey: an operator's read of every node (Inspect, List), which
	// wants each node's state: it waits for every node alike (no agreement
	// cuts a straggler's wait short), as long as a release for a node in
	// good standing, and only its typical round trip for one that is not
	// answering now, so that reading many locks past a cut-off node does
	// not cost a release's wait each.
	kindSurvey
	// kindRenew: renewal batches, which wait as long as a release. A
	// renewal's validity counts from its start, so a longer wait only
	// shortens it, while a batch of hundreds of scripts on a loaded client
	// takes longer than one acquire: cutting it at an acquire's timeout
	// would fail every retry alike and lose the locks.
	kindRenew
)

// nodeWaits decides how long a Client waits for each node: a fixed
// Options.NodeTimeout, or one adaptive estimate per node (Options.NodeTimeout
// left zero). See Options.NodeTimeout for the rules.
type nodeWaits struct {
	fixed time.Duration    // > 0: the user's fixed bound
	floor time.Duration    // the least acquire timeout
	cfg   rtt.Config       // adaptive: the estimators' bounds
	est   []*rtt.Estimator // adaptive: one per node
	// bounded[i]: node i's client ends every call by its context's
	// deadline (see boundedByDeadline).
	bounded []bool
}

func newNodeWaits(opts Options) *nodeWaits {
	w := &nodeWaits{floor: opts.NodeTimeout}
	for _, n := range opts.Nodes {
		w.bounded = append(w.bounded, boundedByDeadline(n))
	}
	if !opts.adaptive {
		w.fixed = opts.NodeTimeout
		return w
	}
	w.cfg = rtt.Config{Floor: w.floor, Ceiling: ceilingFor(opts.Lease, w.floor), Initial: NodeTimeoutInitial}
	for range opts.Nodes {
		w.est = append(w.est, rtt.New(w.cfg))
	}
	return w
}

// firstContact is how long a first call to a node that has not answered
// yet is waited for: the fixed timeout, or the estimators' first one
// (NodeTimeoutInitial, within their bounds).
func (w *nodeWaits) firstContact() time.Duration {
	if w.fixed > 0 {
		return w.fixed
	}
	return w.cfg.FirstTimeout()
}

// ceilingFor is the longest acquire timeout for a lock with lease: a tenth
// of it, so that an acquire that waited that long still has validity
// lease − lease/10 − drift > 0 (0.89 × lease − 2 ms at the default drift).
// Never below floor: leases are checked to span ten floors.
func ceilingFor(lease, floor time.Duration) time.Duration {
	return max(lease/minLeaseToTimeout, floor)
}

// wait returns how long to wait for node's answer to a call of kind on a
// lock with lease, and the token to report a timeout with.
func (w *nodeWaits) wait(node int, kind callKind, lease time.Duration) (time.Duration, rtt.Token) {
	if w.fixed > 0 {
		if kind != kindAcquire {
			return releasePatience * w.fixed, 0
		}
		return w.fixed, 0
	}
	est := w.est[node]
	timeout, token := est.Timeout()
	ceiling := ceilingFor(lease, w.floor)
	if kind == kindSurvey && est.BackedOff() {
		return est.Typical(), token
	}
	if kind != kindAcquire {
		// A tenth of the lease, as long as an acquire's longest wait, and
		// at least releasePatience floors so short leases keep some
		// patience too. Not a multiple of the estimate: it follows the
		// node's usual round trips, not the stalls of a loaded machine
		// (a loopback node at the 100 ms floor was seen not to answer for
		// 800 ms beside a test run), and a release that gives up early
		// gains nothing but a false failure.
		return max(ceiling, releasePatience*w.floor), token
	}
	return min(timeout, ceiling), token
}

// typical is how long node is worth waiting for once the outcome no longer
// depends on it (a quorum answered): its round trips' own timeout without
// backoff, at least the answered nodes' (so a node never sampled, or one
// that just went dead, is not favoured over the healthy ones), and no more.
func (w *nodeWaits) typical(node int, agreed []bool) time.Duration {
	if w.fixed > 0 {
		return w.fixed
	}
	d := w.est[node].Typical()
	for j, ok := range agreed {
		if ok {
			d = max(d, w.est[j].Typical())
		}
	}
	return d
}

// observe feeds node's estimate with the outcome of a call that was given
// wait under token and returned after took with err: an answer is a
// sample, whenever it came; no answer by the deadline, or the go-redis
// client's own timeout (which may end the call first: its 3 s read timeout
// against a release's 3 s wait), backs the timer off. A call that ended
// sooner without an answer (refused, cancelled) says nothing about timing.
func (w *nodeWaits) observe(node int, token rtt.Token, wait, took time.Duration, answered bool, err error) {
	if w.fixed > 0 {
		return
	}
	switch {
	case answered:
		w.est[node].Sample(took)
	case took >= wait || isNetTimeout(err):
		w.expired(node, token)
	}
}

// expired backs node's timer off: a call given its timeout under token
// got no answer in time (once per token, however often it is told).
func (w *nodeWaits) expired(node int, token rtt.Token) {
	if w.fixed == 0 {
		w.est[node].Expired(token)
	}
}

// isAnswer reports whether a node call got the node's answer: a reply, or
// an error the server itself returned. A renewal batch answered if any of
// its renewals did.
func isAnswer(value any, err error) bool {
	if err != nil {
		return isServerError(err)
	}
	if results, ok := value.([]reentrant.RenewResult); ok && len(results) > 0 {
		for _, r := range results {
			if r.Err == nil || isServerError(r.Err) {
				return true
			}
		}
		return false
	}
	return true
}

// isAgreement reports whether an answer counts towards the quorum that
// decides an operation: an acquire that took the lock, a release that found
// the hold, a renewal batch that found every hold; any other answer (a
// read) counts. A refusal or a "not held" does not: with it in, the nodes
// still to answer may decide.
func isAgreement(value any) bool {
	switch v := value.(type) {
	case reentrant.Acquisition:
		return v.Acquired
	case reentrant.ReleaseResult:
		return v != reentrant.NotHeld
	case []reentrant.RenewResult:
		// A batch agrees where it held every lock asked (renewBatch sends
		// no skipped renewal): one "not held" leaves that lock to the
		// nodes still to answer, which must then get their whole wait.
		// Before 2026-12-04 any answer counted, and a lock held on a bare
		// quorum, one of its nodes slower than its typical round trip,
		// was cut off from that node's answer round after round, and lost.
		return !slices.ContainsFunc(v, func(r reentrant.RenewResult) bool { return !r.Held })
	}
	return true
}

// boundedByDeadline reports whether rdb ends every call by its context's
// deadline: a go-redis Client with ContextTimeoutEnabled that sets socket
// deadlines (read and write timeouts not negative), so that even a node
// that stops answering cannot hold a call past it.
func boundedByDeadline(rdb redis.UniversalClient) bool {
	c, ok := rdb.(*redis.Client)
	if !ok {
		return false
	}
	o := c.Options()
	return o.ContextTimeoutEnabled && o.ReadTimeout >= 0 && o.WriteTimeout >= 0
}

// callableHere returns the node whose call a fan-out may make on its own
// goroutine rather than hand to a worker, or -1: the fan-out asks one node
// only (only, or the only node), and the node's client ends the call by its
// deadline. That saves the two goroutine switches of a hand-off: each wakes
// an idle thread (about a third of the client's CPU time in a sequential
// Lock/Unlock cycle), and under load each waits its turn for a busy
// processor (64 goroutines cycling on 1 master through one Client: 0.76
// and 0.77 times rueidislock's cycles/s through workers, 0.93 and 0.84
// here, in interleaved by-hand runs of the bench's uncontended scenario).
//
// A call that finds the node's pipelines busy waits in the node's queue on
// this goroutine until its context ends (see nodeCtx, Timed: at the node's
// deadline, or as the fan-out ctx is cancelled), and is then withdrawn
// unsent; once sent, it ends by its trip's deadline (the node's wait, see
// reentrant.NewNode). On a node answering within its wait the fan-out so
// returns when a worker's would have let it; on a slower one, a call sent
// just before its deadline holds the fan-out up to one trip deadline more,
// and its answer counts as late, as a worker's would. Whether a ctx that
// can be cancelled allows it too depends on the node's wait: see
// seesCancelIn.
func (w *nodeWaits) callableHere(only int) int {
	node := only
	if node < 0 {
		if len(w.bounded) != 1 {
			return -1
		}
		node = 0
	}
	if node >= len(w.bounded) || !w.bounded[node] {
		return -1
	}
	return node
}

// seesCancelIn reports whether a call made on the fan-out's own goroutine
// with a wait of wait still ends soon enough after ctx is cancelled: while
// it is on the wire nothing watches ctx's Done channel (go-redis ends a call
// by its context's deadline, not by its cancellation), so a cancellation
// is seen when the call ends, within wait. That is allowed when ctx can
// never be cancelled, or when wait is no longer than the least node timeout
// (NodeTimeoutFloor, 100 ms, by default; the NodeTimeout set), which is
// the node's wait whenever it answers in its usual time: a cancelled Lock
// on a healthy node then returns within that bound, and on a node slower
// than usual, when the cancellation would wait longer, the call goes to a
// worker and the fan-out returns at once. ctx's deadline is kept either way:
// it bounds the call itself.
func (w *nodeWaits) seesCancelIn(ctx context.Context, wait time.Duration) bool {
	return ctx.Done() == nil || wait <= w.floor
}

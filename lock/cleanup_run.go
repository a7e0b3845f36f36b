package lock

import (
	"context"
	"time"

	"github.com/relock-go/relock/reentrant"
)

const (
	// maxCleanupBatch caps the changes of one round trip, so that a round
	// stays well within the call timeout however long the queue.
	maxCleanupBatch = 1000
	// cleanupLookAhead: entries due this soon leave with those due now, so
	// that entries due close together share a round trip.
	cleanupLookAhead = 5 * time.Millisecond
)

// item is one entry's part in a round: a release, a repair, or both.
type item struct {
	key    cleanupKey
	e      *cleanup
	gen    int
	undo   *reentrant.Change // the release to send, if any
	repair *hold             // the holder to write back, if any
	ticket int64             // the repair's ticket: a fill-in's (see fillInLater)

	rel, rep   int  // their index in the round's changes; -1 when not sent
	repairBusy bool // the owner had an operation on the wire: try again soon
}

// start makes sure a drainer goroutine runs on the queue. Once the Client
// is closed nothing runs, and the nodes' leases end whatever was queued.
func (w *cleaner) start() {
	w.mu.Lock()
	running := w.running
	w.running = true
	w.mu.Unlock()
	if running {
		select {
		case w.wake <- struct{}{}:
		default:
		}
		return
	}
	if !w.c.inBackground(w.drain) {
		w.stop()
	}
}

// stop forgets the queue: the Client is closed.
func (w *cleaner) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running = false
	clear(w.pending)
}

// drain sends what is due, round after round, and returns when the queue is
// empty or the Client closes.
func (w *cleaner) drain(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if ctx.Err() != nil {
			w.stop()
			return
		}
		round, next, more := w.take(time.Now())
		switch {
		case !more:
			return
		case len(round) > 0:
			results := w.send(ctx, round)
			w.noteRound(results)
			w.c.noteCleanupErrors(w.node, results)
			w.settle(round, results)
			continue
		}
		timer.Reset(time.Until(next))
		select {
		case <-ctx.Done():
		case <-w.wake:
		case <-timer.C:
		}
	}
}

// take picks the entries due now (up to a batch), drops what expired, and
// returns when the next entry comes due. more is false when the queue is
// empty: the drainer then ends, and the next add starts another.
func (w *cleaner) take(now time.Time) (round []item, next time.Time, more bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	changes := 0
	for k, e := range w.pending {
		e.settleLate(w)
		e.expire(now)
		if e.idle() {
			delete(w.pending, k)
			continue
		}
		it := item{key: k, e: e, gen: e.gen, repair: e.repair, ticket: e.ticket, rel: -1, rep: -1}
		if e.release.Owner != "" && !(e.late != nil && e.undoneEarly) {
			it.undo = w.releaseChange(e.release)
		}
		if it.undo == nil && it.repair == nil && !e.due.After(now) {
			e.due = now.Add(cleanupFirstRetry) // an undo waiting for a late reply
		}
		if e.due.After(now.Add(cleanupLookAhead)) || changes >= maxCleanupBatch || (it.undo == nil && it.repair == nil) {
			if next.IsZero() || e.due.Before(next) {
				next = e.due
			}
			continue
		}
		changes += 2
		round = append(round, it)
	}
	if len(w.pending) == 0 {
		w.running = false
		return nil, next, false
	}
	return round, next, true
}

// send runs one round: one pipelined round trip to the node with every
// release and repair of the round, a release before the repair of the same
// entry (the repair's sequence number is the newer one).
func (w *cleaner) send(ctx context.Context, round []item) []reentrant.ChangeResult {
	changes := make([]reentrant.Change, 0, 2*len(round))
	for i := range round {
		it := &round[i]
		if it.undo != nil {
			it.rel = len(changes)
			changes = append(changes, *it.undo)
		}
		if it.repair == nil {
			continue
		}
		op, ok, busy := it.repair.repairOp(w.node)
		op.Ticket = it.ticket
		it.repairBusy = busy
		if ok {
			it.rep = len(changes)
			changes = append(changes, reentrant.Change{Op: op})
		}
	}
	if len(changes) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, w.roundTimeout())
	defer cancel()
	return w.c.nodes[w.node].Apply(ctx, changes)
}

// settle records a round's results: what got through is done (a release
// that must keep being sent comes due again), what failed is retried after
// a backoff. An entry that changed while the round was out is left due
// now, untouched.
func (w *cleaner) settle(round []item, results []reentrant.ChangeResult) {
	now := time.Now()
	repaired := 0
	var filled []*hold
	w.mu.Lock()
	defer func() {
		w.mu.Unlock()
		if repaired > 0 {
			w.c.opts.Logger.Info("relock: repaired locks on a node that had lost them", "node", w.node, "locks", repaired)
		}
		for _, h := range filled {
			h.dequeued(w.node) // the fill-in took it out of the queue there
		}
	}()
	for _, it := range round {
		e := w.pending[it.key]
		if e != it.e || e.gen != it.gen {
			continue
		}
		retry := it.repairBusy
		if it.rel >= 0 {
			switch {
			case results[it.rel].Err != nil:
				retry = true
			case e.late != nil:
				e.undoneEarly = true // the late reply says whether to send it again
			case now.Before(e.until):
				retry = true // sent again until the older acquire cannot land any more
			default:
				e.dropRelease()
			}
		}
		if it.repair != nil && !it.repairBusy {
			// One attempt per request, whatever came of it (written back,
			// taken by another owner meanwhile, no longer held, or failed):
			// the next renewal that finds the node without the lock asks
			// again. Retrying here would take the owner's opMu again and
			// again, and starve the renewals that need it. A fill-in is
			// the exception: the hold refusing it is on its way out, and
			// its tries are bounded in time (see fillInLater).
			var r reentrant.ChangeResult
			if it.rep >= 0 {
				r = results[it.rep]
			}
			switch {
			case it.rep >= 0 && r.Err == nil && r.Acquisition.Acquired:
				if e.fillIn {
					w.c.stats.filledIn.Add(1)
					filled = append(filled, e.repair)
				} else {
					repaired++
				}
				e.repair, e.fillIn, e.ticket = nil, false, 0
			case e.fillIn && it.rep >= 0 && r.Err == nil && !r.Acquisition.Stale:
				retry = true // another owner's hold is still there
			default:
				e.repair, e.fillIn, e.ticket = nil, false, 0
			}
		}
		if e.idle() {
			delete(w.pending, it.key)
			continue
		}
		if retry {
			e.due, e.once = now.Add(e.retry.Next()), false
			// A release goes out one last time at its end, not a backoff
			// short of it: an older acquire may land until then.
			if end := e.end(); e.release.Owner != "" && e.due.After(end) && now.Before(end) {
				e.due, e.once = end, true
			}
		}
	}
}

// settleLate decides the undo of a late acquire to w's node once its reply
// is in.
func (e *cleanup) settleLate(w *cleaner) {
	if e.late == nil {
		return
	}
	select {
	case <-e.late.done:
	default:
		return
	}
	switch {
	case w.c.nodes[w.node].NeverReached(e.late.err):
		e.dropRelease() // it never reached the node: nothing to undo
	case e.late.err != nil:
		e.until = later(e.until, e.lateUntil) // no reply: it may still land
	case !e.late.value.Acquired:
		e.dropRelease() // it found another holder: nothing to undo
	case e.undoneEarly:
		// It took the node before the release got there (after it, it would
		// have been refused), and the release took it back.
		e.dropRelease()
	}
	e.late, e.undoneEarly = nil, false
}

// expire drops the work whose time is over: past it, the node's lease ends
// what a release would have taken back, and the next renewal asks for a
// repair again.
func (e *cleanup) expire(now time.Time) {
	switch {
	case e.late != nil && now.After(e.lateUntil):
		e.dropRelease()
	case e.late == nil && e.release.Owner != "" && !e.once && now.After(e.end()):
		e.dropRelease()
	}
	if e.repair != nil && now.After(e.repairBy) {
		e.repair, e.fillIn, e.ticket = nil, false, 0
	}
}

// end is when the release stops being sent.
func (e *cleanup) end() time.Time { return later(e.deadline, e.until) }

func (e *cleanup) dropRelease() {
	e.release, e.late, e.once, e.undoneEarly = reentrant.Op{}, nil, false, false
	e.deadline, e.until, e.lateUntil = time.Time{}, time.Time{}, time.Time{}
}

func (e *cleanup) idle() bool { return e.release.Owner == "" && e.repair == nil }

// repairOp is the acquire that writes the hold back on a node that lost it.
// busy: an operation of the owner is on the wire (it sets the node's state
// itself, or the repair is tried again). Neither ok nor busy: the hold is
// over.
//
// Like renewOp, it takes its sequence number under h.opMu but does not keep
// it for the round trip: a round to a stalled node can last the go-redis
// client's ReadTimeout (3 s by default, whatever the ctx; its DialTimeout,
// 5 s, on a new connection), and holding
// opMu that long would block the owner's Unlock and Lock and starve its
// renewals until the lease ran out. An operation of the owner that starts
// meanwhile takes a newer number and wins wherever the two meet: a repair
// landing after a release to zero finds the tombstone and is stale, one
// landing after a newer acquire or renewal is an older retry and changes
// nothing. One landing after a newer release to a count above zero that
// found nothing on the node writes the older count back there, which the
// owner's next operation (a renewal, an Unlock), carrying its count,
// corrects.
//
// The repair is a call that may land after the owner's release on node,
// so node counts among the hold's strays from now on.
func (h *hold) repairOp(node int) (op reentrant.Op, ok, busy bool) {
	if !h.opMu.TryLock() {
		return op, false, true
	}
	defer h.opMu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count == 0 || h.isLost {
		return op, false, false
	}
	op = h.op(h.count, h.lease, 1)
	op.Fair = false // a repair writes back a hold the quorum has: no turn to wait for
	h.strays = h.strays.with(node)
	return op, true, false
}

// flush takes every queued release, whatever its due time, and returns
// the call that sends them (nil when there are none): Close takes them
// before it stops the drainers and sends them after, so that an attempt
// that failed just before Close is still taken back at once rather than
// left to its lease. Repairs are dropped: the holds are released. The
// releases go in round trips of maxCleanupBatch, one after the other, each
// bounded as a drainer's round is (roundTimeout): before 2026-12-04 one
// round carried the first 1,000 and Close dropped the rest, and its
// timeout was a release's, which never lands behind a link slower than
// that (see roundTimeout). The sends have their own context: the Client's
// has ended by then.
func (w *cleaner) flush() func() {
	batches := w.flushBatches()
	if len(batches) == 0 {
		return nil
	}
	timeout := w.roundTimeout()
	return func() {
		for _, changes := range batches {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			w.c.nodes[w.node].Apply(ctx, changes)
			cancel()
		}
	}
}

// flushBatches is every queued release, in batches of maxCleanupBatch.
func (w *cleaner) flushBatches() [][]reentrant.Change {
	w.mu.Lock()
	defer w.mu.Unlock()
	var batches [][]reentrant.Change
	for _, e := range w.pending {
		if e.release.Owner == "" {
			continue
		}
		if n := len(batches); n == 0 || len(batches[n-1]) == maxCleanupBatch {
			batches = append(batches, make([]reentrant.Change, 0, min(maxCleanupBatch, len(w.pending))))
		}
		batches[len(batches)-1] = append(batches[len(batches)-1], *w.releaseChange(e.release))
	}
	return batches
}

// releaseChange is the change that sends op's release to this cleaner's
// node, announced as the contention rules ask of that node: no hand-off
// follows a clean-up. An undo made quietly (see contender.settle)
// announces nothing.
func (w *cleaner) releaseChange(op reentrant.Op) *reentrant.Change {
	if op.Wake != reentrant.WakeSilent {
		op.Wake = w.c.wakeOn(w.node, op, false)
	}
	return &reentrant.Change{Op: op, Release: true, ReleaseID: releaseID(op)}
}

package lock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/relock-go/relock/pubsub"
	"github.com/relock-go/relock/reentrant"
	"github.com/relock-go/relock/watchdog"
)

// hold is the core every lock type is built on: one owner's hold of one
// lock, of one kind (a Mutex's, a reader's or a writer's of an RWMutex,
// ...), over the Client's nodes. It keeps the owner's state (hold count,
// sequence numbers, lease, validity, loss channel, watchdog entry, hold
// context) and runs its paths: the attempts of Lock and TryLock (lock,
// attempt), their settling and undo, Unlock (release, settle), the
// watchdog's renewals (renewOp), the cleaners' repairs (repairOp) and the
// loss of the hold (loseHold, markLost). A lock type holds one hold per
// kind of hold it offers and adds its own rules around them (an RWMutex's
// refused upgrade, say); the watchdog, the cleaners and Client.Close see
// holds only.
type hold struct {
	c       *Client
	key     reentrant.Key
	keyErr  error // a bad name: every operation returns it
	owner   string
	base    reentrant.Op // key, owner and mode, prepared (reentrant.Op.Prepare): op copies it
	kind    holdKind
	holdCtx context.Context // when it ends, a held lock is released
	fencing TokenMode       // 0: no fencing tokens

	// opMu serializes this owner's operations against Redis: each carries
	// the count it sets and a sequence number that must grow with it.
	opMu sync.Mutex

	mu         sync.Mutex // guards the hold state below; never held across I/O
	count      int64
	seq        int64
	lease      time.Duration
	renewed    bool // the watchdog renews this hold
	validUntil time.Time
	lost       chan struct{} // closed when the current hold is lost
	isLost     bool
	entry      *watchdog.Entry
	stopHold   func() bool // stops the hold context's watch
	token      int64       // the hold's fencing token
	// tieTaken: the hold's acquisition took the lock's tie-breaker, so its
	// release there hands the lock off, and the other nodes' copies for
	// keepers announce a hand-off to come (see Client.wakeOn).
	tieTaken bool
	// contendedAt: when a Lock of this handle last met another holder. A
	// Lock soon after expects contention (see contender.expectContention).
	contendedAt time.Time
	// strays: the nodes where a call of this owner that could create its
	// hold (an acquire, a repair) may still land (see nodeSet). A release
	// to zero there leaves a tombstone to refuse it; elsewhere none is
	// needed (reentrant.Op.NoStrays).
	strays nodeSet
	// buried: the nodes where a tombstone of this owner may still be, until
	// buriedUntil: a release to zero sent where it had strays or retried in
	// the background, or the undo of a failed attempt, left one for a
	// lease. Its acquisitions there
	// expect one (reentrant.Op.NoStrays false): the script then reads the
	// lock and the tombstone apart, two commands, where expecting none
	// costs an EXISTS that finds it and three more reads after.
	buried      nodeSet
	buriedUntil time.Time
	// queued: the nodes where the owner may be registered in the lock's
	// wait queue key: a waiting Lock's attempt with its ticket was refused
	// there, or did not answer, and no hold taken there since took it out
	// (see queueing). A Lock that takes the lock with some of them left
	// (a quorum without them) leaves them to the next: its holds taken
	// there dequeue, and a Lock that gives up dequeues them all.
	queued nodeSet
}

// nodeSet is a set of a Client's nodes, bit i for node i. Nodes past the
// 64th are always in it: a set that errs by holding too much only costs a
// tombstone, or a dequeue.
type nodeSet uint64

// has reports whether node i is in s.
func (s nodeSet) has(i int) bool { return i >= 64 || s&(1<<i) != 0 }

// with returns s with node i in it.
func (s nodeSet) with(i int) nodeSet {
	if i >= 64 {
		return s
	}
	return s | 1<<i
}

// without returns s without node i.
func (s nodeSet) without(i int) nodeSet {
	if i >= 64 {
		return s
	}
	return s &^ (1 << i)
}

// strayNodes returns the nodes whose call in replies may still land: it
// ended without an answer, and its error does not prove it never reached
// the node (reentrant.Node.NeverReached).
func strayNodes[T any](c *Client, replies []reply[T]) nodeSet {
	var s nodeSet
	for _, r := range replies {
		if r.err != nil && !c.nodes[r.node].NeverReached(r.err) {
			s = s.with(r.node)
		}
	}
	return s
}

// takenNodes returns the nodes whose acquire reply says the owner holds
// the lock there.
func takenNodes(replies []reply[reentrant.Acquisition]) nodeSet {
	var s nodeSet
	for _, r := range replies {
		if r.err == nil && r.value.Acquired {
			s = s.with(r.node)
		}
	}
	return s
}

// bury records that a release to zero or an undo of the owner, sent now to
// nodes, may leave its tombstone there for lease. h.mu must be held.
func (h *hold) bury(nodes nodeSet, lease time.Duration) {
	if nodes == 0 {
		return
	}
	h.buried |= nodes
	h.buriedUntil = later(h.buriedUntil, time.Now().Add(lease))
}

// undone records where the undo of the failed attempt a (Client.undo)
// leaves the owner's tombstone: the nodes that did not answer (lost), and
// those where it took the lock unless it keeps them (see contender.settle).
func (h *hold) undone(a attempt, lost nodeSet, kept bool, lease time.Duration) {
	nodes := lost
	if !kept {
		nodes |= takenNodes(a.replies)
	}
	if nodes == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bury(nodes, lease)
}

// tombstones returns the nodes where a tombstone of the owner may still be
// (see buried). h.mu must be held.
func (h *hold) tombstones() nodeSet {
	if h.buried != 0 && time.Now().After(h.buriedUntil) {
		h.buried = 0
	}
	return h.buried
}

// holdKind is what differs between the kinds of hold: the scripts their
// operations run on each node (Mode), the number of nodes that must agree
// (quorum), and how their waiters wait.
type holdKind struct {
	mode reentrant.Mode
	// quorum: how many nodes must agree for an acquire, a release or a
	// renewal to count; nodes that answer "not held" beyond len(nodes) -
	// quorum mean the hold is lost. A Mutex's is the Client's majority.
	quorum int
	// shared: several owners may hold at once, so a waiter that wins after
	// a release's wake passes the wake on to the next waiter of its process
	// (one release may let every waiting reader in).
	shared bool
	// marks: a refused first-hold attempt of a blocking Lock leaves the
	// owner's mark on the nodes that refused it (an RWMutex's waiting
	// writer, see reentrant.Write), and a Lock that ends without the hold
	// takes its marks back (unmark).
	marks bool
	// tune, when set, fills the kind's own fields of each Op of the hold.
	tune func(op *reentrant.Op)
	// fair: the lock goes to its waiters in the order they asked (see
	// FairMutex): every Lock waits in the tie-breaker's queue, which vetoes
	// an owner whose turn it is not.
	fair bool
}

// holdCount is the owner's hold count: 0 when it holds nothing.
func (h *hold) holdCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return int(h.count)
}

// validTill is the current hold's ValidUntil: the zero time when the
// owner holds nothing.
func (h *hold) validTill() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.deadline()
}

// lostChan is the current hold's Lost channel: closed when it holds
// nothing.
func (h *hold) lostChan() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lost
}

// exclusiveKind is a Mutex's kind of hold.
func (c *Client) exclusiveKind() holdKind {
	return holdKind{mode: reentrant.Exclusive, quorum: c.quorum}
}

// contends reports whether the contention rules of contend.go apply to the
// holds of mode (the tie-breaker, partial holds kept, the wait queue, and
// the releases that announce for them). They assume one holder at a time:
// only Exclusive holds follow them. The other modes wait as plain Redlock
// does (a failed attempt undone, sleep until a release or the holder's
// lease), and their releases announce for any waiter.
func contends(mode reentrant.Mode) bool { return mode == reentrant.Exclusive }

// newHold returns the hold state of an owner of the lock name, of kind.
// A bad name is kept as keyErr, which every operation returns.
func (c *Client) newHold(name, owner string, kind holdKind) hold {
	key, err := reentrant.NewKey(c.opts.KeyPrefix, name)
	base := reentrant.Op{Key: key, Owner: owner, Lease: c.opts.Lease, Mode: kind.mode}
	if err == nil {
		base = base.Prepare()
	}
	return hold{c: c, key: key, keyErr: err, owner: owner, base: base, kind: kind, lost: closedChan}
}

func (h *hold) lock(ctx context.Context, lease time.Duration, renewed, wait bool) (acquired bool, err error) {
	if h.keyErr != nil {
		return false, h.keyErr
	}
	var w waiter
	ctx, call := h.c.lockStarted(ctx, h, lease, renewed, wait)
	defer func() { h.c.lockEnded(ctx, h, &call, &w, wait, acquired, err) }()
	if err := h.c.begin(); err != nil {
		return false, err
	}
	defer h.c.end()
	if err := h.c.ident.check(ctx); err != nil {
		return false, err
	}
	if !renewed {
		if err := checkLease("lease", lease, h.c.opts.NodeTimeout); err != nil {
			return false, err
		}
	}
	var (
		lastFail error // the quorum failure of the last attempt, reported with ctx's error
		k        = newContender(h.c, h.key, wait && contends(h.kind.mode), h.kind.fair)
	)
	if wait && h.contendedLately() {
		k.expectContention()
		// The channel is most likely still subscribed (it lingers): a
		// first attempt that fails then sleeps at once, instead of
		// retrying to make sure it missed no release.
		if err := w.prime(ctx, h); err != nil {
			return false, err
		}
	}
	defer k.abandon(h.c, false) // nothing kept once the lock is won
	won := false
	defer func() {
		if !won {
			k.leaveQueue(h.c, h.key, h.owner, h.takeQueued())
			if h.kind.marks && call.wait && call.attempts > 0 {
				h.unmark(lease)
			}
		}
	}()
	for {
		if h.c.isClosing() {
			w.giveUp(attempt{})
			return false, ErrClosed
		}
		ok, a, err := h.attempt(ctx, lease, renewed, k, w.woken && w.why == pubsub.WokenOther, &call)
		if err == nil {
			// The nodes answered: a quorum failure before this attempt is
			// no longer why the Lock waits, and a wait that ends now ends
			// as a plain timeout.
			lastFail = nil
		}
		var qe *QuorumError
		switch {
		case ok && h.c.isClosing():
			// Won while Close runs: Close may already have taken stock of
			// the holds to release, so give this one back here.
			w.giveUp(a)
			_ = h.release(h.c.life, false)
			return false, ErrClosed
		case ok:
			won = true // the acquire took it out of the queue, or it was in none
			if h.kind.shared {
				w.passOn()
			} else {
				w.close(true)
			}
			return true, nil
		case errors.As(err, &qe) && h.c.hopeless(qe):
			w.giveUp(a)
			return false, err
		case errors.As(err, &qe):
			lastFail = err
		case err == nil && a.contended && wait:
			h.noteContention()
		case err != nil:
			w.giveUp(a)
			if ctx.Err() != nil && lastFail != nil {
				err = errors.Join(err, lastFail)
			}
			return false, err
		}
		if !wait {
			w.giveUp(a)
			return false, err
		}
		if a.retryNow {
			continue
		}
		sleeps := w.primed // the first wait only subscribes, and the retry follows at once
		if werr := w.wait(ctx, h, k.sleep(a, h.c.opts.RetryDelay), k.first()); werr != nil {
			w.close(false) // it slept: it consumed no wake
			return false, errors.Join(werr, lastFail)
		}
		if sleeps {
			k.slept()
		}
		if w.why == pubsub.WokenHandOff {
			k.handedOff()
			if !h.kind.fair {
				h.dequeued(k.tie) // the release that named it took it out there
			}
		}
	}
}

// dequeued records that the owner is no longer registered on node i.
func (h *hold) dequeued(i int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.queued = h.queued.without(i)
}

// takeQueued returns the nodes where the owner may be registered in the
// wait queue, and forgets them: the caller dequeues it there.
func (h *hold) takeQueued() nodeSet {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queued
	h.queued = 0
	return q
}

// contendedLately reports whether a Lock of this handle met another holder
// within the last lease.
func (h *hold) contendedLately() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.contendedAt.IsZero() && time.Since(h.contendedAt) < h.c.opts.Lease
}

// noteContention records that a Lock of this handle met another holder.
func (h *hold) noteContention() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.contendedAt = time.Now()
}

// attempt runs one acquire for this owner: a first hold, which follows the
// contention rules of k, or a re-entry. call counts it for the observer.
func (h *hold) attempt(ctx context.Context, lease time.Duration, renewed bool, k *contender, woken bool, call *lockCall) (bool, attempt, error) {
	h.opMu.Lock()
	defer h.opMu.Unlock()

	h.mu.Lock()
	if h.isLost {
		h.mu.Unlock()
		return false, attempt{}, ErrLost
	}
	reentry := h.count > 0
	if reentry { // a re-entry keeps the hold's lease and renewal
		if !time.Now().Before(h.deadline()) {
			why := expiredReason(h.renewed)
			h.mu.Unlock()
			h.loseHold(why)
			return false, attempt{}, ErrLost
		}
		lease, renewed = h.lease, h.renewed
	}
	op := h.op(h.count+1, lease, 2) // one sequence number for the undo
	op.Reentry = reentry
	op.Waiting = call.wait && !reentry // a first hold a Lock waits for
	op.Fence = h.fencing != 0 && !reentry
	strays, queued := h.strays, h.queued
	tombs := strays | h.tombstones()
	h.mu.Unlock()

	only, q := -1, queueing{}
	if !reentry {
		only = k.target()
		q = k.queueArgs(&op, queued)
		// Should it take the tie-breaker, it asks who refuses it on the
		// other nodes (see contender.mayKeep).
		op.AskHolder = k.enabled && only < 0
	}
	a := h.c.acquire(ctx, op, h.kind.quorum, only, tombs, q)
	// The handle's mutex only when there is something to record: an
	// uncontended TryLock or re-entry pays nothing here.
	lost := strayNodes(h.c, a.replies)
	if lost != 0 || op.Ticket > 0 {
		h.mu.Lock()
		h.strays |= lost
		if op.Ticket > 0 {
			h.queued = q.after(h.c, a)
		}
		h.mu.Unlock()
	}
	h.c.attempted(ctx, h, op, only, a, call)
	fillIn := false
	switch {
	case a.acquired:
		// A hand-off's target, or a keeper, met the releaser (or an undoing
		// contender) on a node its release has not reached yet.
		fillIn = !reentry && (k.handOff || k.keeping)
		k.keeping = false // what it kept is part of the hold now
	case !reentry:
		a.retryNow = k.settle(h.c, op, a, lease, woken)
		h.undone(a, lost, k.keeping, lease)
		k.sent(a)
		return false, a, a.err
	case a.absent > len(h.c.nodes)-h.kind.quorum:
		// Too many nodes no longer have the hold for any quorum to: it
		// ended (expired, force-unlocked) and another owner may have held
		// the lock since. Nothing was created where it was missing.
		h.c.undo(op, a, false)
		h.undone(a, lost, false, lease)
		h.loseHold(LossNotHeld)
		return false, attempt{}, ErrLost
	default:
		h.c.undo(op, a, false)
		h.undone(a, lost, false, lease)
		return false, a, a.err
	}
	var token int64
	if h.fencing != 0 && op.Count == 1 {
		var err error
		if token, err = h.c.drawToken(ctx, h.key, h.fencing, a.fence, a.validUntil); err != nil {
			// Without a token written to a quorum the hold cannot be handed out.
			h.c.setBack(op, h.c.allNodes(), a.validUntil)
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return false, attempt{}, err
		}
	}

	h.mu.Lock()
	if reentry && h.isLost {
		// The watchdog reported the hold lost while the re-entry was on its
		// way (its loss comes a little before ValidUntil): the owner was told
		// it holds nothing, and nothing renews the hold any more, so the
		// re-entry must not count. What it wrote is cleared with the rest.
		why := expiredReason(h.renewed) // not recorded: the first reason stays
		h.mu.Unlock()
		h.loseHold(why)
		return false, attempt{}, ErrLost
	}
	defer h.mu.Unlock()
	h.count = op.Count
	if reentry {
		h.extend(a.validUntil)
		if len(a.missing) > 0 {
			// A quorum still has the hold: write it back where it vanished
			// (a node restarted empty), as a renewal would.
			h.c.repairLater(h, a.missing, a.validUntil)
		}
		return true, a, nil
	}
	h.token = token
	tie := tieReply(a, h.c.tieBreaker(h.key))
	h.tieTaken = tie.err == nil && tie.value.Acquired
	h.startHold(lease, renewed, a.validUntil)
	if fillIn {
		// Until the first renewal, whose repair takes over from there.
		h.c.fillInLater(h, refusedBy(a), earlier(a.validUntil, time.Now().Add(lease/3)), op.Ticket)
	}
	return true, a, nil
}

// refusedBy returns the nodes where another owner's hold refused the
// attempt a.
func refusedBy(a attempt) []int {
	var nodes []int
	for _, r := range a.replies {
		if r.err == nil && !r.value.Acquired && !r.value.Stale && !r.value.Missing {
			nodes = append(nodes, r.node)
		}
	}
	return nodes
}

// op builds the next operation of this owner, reserving n sequence numbers.
// The caller holds h.mu.
func (h *hold) op(count int64, lease time.Duration, n int64) reentrant.Op {
	h.seq += n
	op := h.base // its key and owner as of newHold: a lock type may set others since
	op.Key, op.Owner, op.Mode = h.key, h.owner, h.kind.mode
	op.Lease, op.Count, op.Seq = lease, count, h.seq-n+1
	if h.kind.tune != nil {
		tuned := op // apart, so that op stays off the heap for the kinds without tune
		h.kind.tune(&tuned)
		return tuned
	}
	return op
}

// startHold records a first acquisition: lease, loss channel, renewal or
// deadline watch, hold context. The caller holds h.mu.
func (h *hold) startHold(lease time.Duration, renewed bool, validUntil time.Time) {
	h.lease, h.renewed, h.validUntil = lease, renewed, validUntil
	h.isLost = false
	lost := make(chan struct{})
	h.lost = lost
	every := time.Duration(0)
	if renewed {
		every = lease / 3
	}
	h.entry = h.c.dog.Watch(h, every, validUntil, func(expired bool) {
		why := LossNotHeld
		if expired {
			why = expiredReason(renewed)
		}
		if clean, marked := h.markLost(lost, why); marked {
			// The nodes' copies end on their own at about ValidUntil, unless
			// a call of the owner that got no reply set a lease there anew
			// (a re-entry or an undo that timed out): clear them then, as a
			// loss the owner's own call found out does.
			h.clearAfterLoss(clean)
		}
	})
	if h.holdCtx != nil {
		h.stopHold = context.AfterFunc(h.holdCtx, func() { _ = h.releaseAll() })
	}
	h.c.track(h, true)
}

// extend moves the hold's deadline after an operation a quorum confirmed.
// The caller holds h.mu.
func (h *hold) extend(validUntil time.Time) {
	if validUntil.After(h.validUntil) {
		h.validUntil = validUntil
	}
	if h.entry != nil {
		h.entry.Extend(validUntil)
	}
}

// endHold forgets the hold once the count is zero. The caller holds h.mu.
func (h *hold) endHold() {
	if h.entry != nil {
		h.entry.Stop()
		h.entry = nil
	}
	if h.stopHold != nil {
		h.stopHold()
		h.stopHold = nil
	}
	h.validUntil = time.Time{}
	h.token = 0
	h.isLost = false
	h.lost = closedChan
	h.c.track(h, false)
}

// deadline is the current hold's ValidUntil. The caller holds h.mu.
func (h *hold) deadline() time.Time {
	if h.entry != nil {
		return h.entry.ValidUntil()
	}
	return h.validUntil
}

// loseHold signals the loss of the current hold, found out by this owner's
// own operation, and clears whatever is left of it on every node in the
// background. The hold count stays, so the owner's Unlocks stay balanced
// (each returns ErrLost). The caller holds h.opMu, not h.mu.
func (h *hold) loseHold(why LossReason) {
	h.signalLoss(why)
	h.mu.Lock()
	clean := h.op(0, h.lease, 1)
	h.mu.Unlock()
	h.clearAfterLoss(clean)
}

// clearAfterLoss sends clean, a release to 0 of the lost hold, to every
// node in the background, once the hold's ValidUntil has passed (see
// releaseAfter): the owner was told of the loss before it, and may count
// on the hold until then.
func (h *hold) clearAfterLoss(clean reentrant.Op) {
	h.mu.Lock()
	valid := h.validUntil // the last deadline, kept by markLost
	h.mu.Unlock()
	h.c.releaseAfter(clean, h.c.allNodes(), valid, later(time.Now(), valid).Add(clean.Lease))
}

// signalLoss signals the loss of the current hold. The caller does not
// hold h.mu.
func (h *hold) signalLoss(why LossReason) {
	h.mu.Lock()
	lost := h.lost
	h.mu.Unlock()
	h.markLost(lost, why)
}

// markLost signals the loss, for the reason why, of the hold whose channel
// is lost, and reports whether it did (not when it was signalled before, or
// the hold ended). With it comes the release to 0 that clears what is left
// of that hold, its sequence number taken at once: taken later, it could
// follow the owner's next hold, and release that one.
func (h *hold) markLost(lost chan struct{}, why LossReason) (reentrant.Op, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost != lost || h.isLost {
		return reentrant.Op{}, false
	}
	h.isLost = true
	close(lost)
	h.c.stats.losses.Add(1)
	h.c.lost(h, why)
	if h.entry != nil {
		h.validUntil = h.entry.ValidUntil() // the last deadline, for the record
		h.entry.Stop()
		h.entry = nil
	}
	h.c.opts.Logger.Warn("relock: lock lost", "name", h.key.Name, "owner", h.owner)
	return h.op(0, h.lease, 1), true
}

// unmark takes back, on every node, the marks a blocking Lock of a marking
// kind left (see holdKind.marks) when it ends without the hold: a release
// to count 0, as an undo is, removes the owner's mark where there is one
// and changes nothing else where the owner holds nothing. It sends nothing
// when the owner holds after all (another call on the handle won: its
// acquire removed the marks where it took the hold).
func (h *hold) unmark(lease time.Duration) {
	h.opMu.Lock()
	defer h.opMu.Unlock()
	h.mu.Lock()
	if h.count > 0 {
		h.mu.Unlock()
		return
	}
	op := h.op(0, lease, 1)
	h.mu.Unlock()
	h.c.releaseOn(op, h.c.allNodes(), time.Now().Add(lease))
}

package lock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/relock-go/relock/pubsub"
	"github.com/relock-go/relock/reentrant"
	"github.com/relock-go/relock/watchdog"
)

// Mutex is a handle on a named distributed lock, and one owner of it.
//
// Ownership belongs to the handle, not to a goroutine: the handle that
// locked may be unlocked from any goroutine, and locking the same handle
// again re-enters the lock without blocking (it must then be unlocked as
// many times). Two handles are two owners, even with the same name in the
// same process: the second blocks until the first fully unlocks. Share one
// handle to nest across goroutines of one owner; make one handle per owner
// otherwise. A Mutex is safe for concurrent use.
type Mutex struct {
	c       *Client
	key     reentrant.Key
	keyErr  error // a bad name: every operation returns it
	owner   string
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
	// contendedAt: when a Lock of this handle last met another holder. A
	// Lock soon after expects contention (see contender.expectContention).
	contendedAt time.Time
}

// MutexOption configures a Mutex.
type MutexOption func(*Mutex)

// WithHoldContext ties holds of the Mutex to ctx: when ctx ends, a held lock
// stops being renewed and is released at once, whatever its hold count. By
// default a hold lasts until it is unlocked or the Client is closed.
func WithHoldContext(ctx context.Context) MutexOption {
	return func(m *Mutex) { m.holdCtx = ctx }
}

// NewMutex returns a handle, and owner, for the lock named name. A name may
// hold any bytes; the empty name gives a handle whose every operation
// returns an error wrapping ErrInvalidArgument.
func (c *Client) NewMutex(name string, opts ...MutexOption) *Mutex {
	key, err := reentrant.NewKey(c.opts.KeyPrefix, name)
	m := &Mutex{
		c:      c,
		key:    key,
		keyErr: err,
		owner:  c.id + ":" + uuid.NewString(),
		lost:   closedChan,
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// Name returns the lock's name.
func (m *Mutex) Name() string { return m.key.Name }

// Owner returns this handle's owner id, CLIENTID:OWNERID, as stored in Redis.
func (m *Mutex) Owner() string { return m.owner }

// HoldCount returns how many times this handle holds the lock: 0 when it
// does not hold it.
func (m *Mutex) HoldCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int(m.count)
}

// ValidUntil returns the time until which the current hold is known to be
// valid (on the monotonic clock, so compare it with time.Now, not across
// processes); the watchdog moves it forward at each renewal. The zero time
// when the handle holds nothing.
func (m *Mutex) ValidUntil() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deadline()
}

// Lost returns a channel that is closed when the current hold is lost: its
// lease ran out without renewal, or a quorum of nodes no longer has it. It
// is closed no later than ValidUntil. When the handle holds nothing it
// returns a closed channel.
func (m *Mutex) Lost() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lost
}

// Lock acquires the lock, waiting while another owner holds it, with the
// Client's lease (Options.Lease), renewed by the watchdog until Unlock.
// If this handle already holds the lock, Lock re-enters it at once; a
// re-entry that finds the hold gone from too many nodes for a quorum (it
// expired, or was force-unlocked) returns ErrLost, adds no hold, and
// closes Lost().
//
// ctx bounds the wait only, not the hold. When ctx ends first Lock returns
// an error for which errors.Is(err, ctx.Err()) is true, and nothing of the
// attempt is left on any node. While a quorum cannot be reached (nodes
// down) Lock keeps retrying until ctx ends; its error then also wraps the
// last *QuorumError.
func (m *Mutex) Lock(ctx context.Context) error {
	_, err := m.lock(ctx, m.c.opts.Lease, true, true)
	return err
}

// LockFor is Lock with an explicit lease: the lock is not renewed and
// expires after lease unless unlocked before. A re-entry keeps the lease
// and renewal of the first acquisition.
func (m *Mutex) LockFor(ctx context.Context, lease time.Duration) error {
	_, err := m.lock(ctx, lease, false, true)
	return err
}

// TryLock makes one attempt to acquire the lock, with the Client's renewed
// lease, and reports whether it did. It returns false and no error when
// another owner holds the lock, and false with a *QuorumError when the nodes
// could not agree. A failed attempt leaves nothing on any node.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	return m.lock(ctx, m.c.opts.Lease, true, false)
}

// TryLockFor is TryLock with an explicit lease that is not renewed.
func (m *Mutex) TryLockFor(ctx context.Context, lease time.Duration) (bool, error) {
	return m.lock(ctx, lease, false, false)
}

func (m *Mutex) lock(ctx context.Context, lease time.Duration, renewed, wait bool) (bool, error) {
	if m.keyErr != nil {
		return false, m.keyErr
	}
	if err := m.c.begin(); err != nil {
		return false, err
	}
	defer m.c.end()
	if err := m.c.ident.check(ctx); err != nil {
		return false, err
	}
	if !renewed {
		if err := checkLease("lease", lease, m.c.opts.NodeTimeout); err != nil {
			return false, err
		}
	}
	var (
		w        waiter
		lastFail error // the last quorum failure, reported with ctx's error
		k        = newContender(m.c, m.key, wait)
	)
	if wait && m.contendedLately() {
		k.expectContention()
	}
	defer k.abandon(m.c) // nothing kept once the lock is won
	won := false
	defer func() {
		if !won {
			k.leaveQueue(m.c, m.key, m.owner)
		}
	}()
	for {
		if m.c.isClosing() {
			w.giveUp(attempt{})
			return false, ErrClosed
		}
		ok, a, err := m.attempt(ctx, lease, renewed, k, w.woken && w.why == pubsub.WokenOther)
		var qe *QuorumError
		switch {
		case ok && m.c.isClosing():
			// Won while Close runs: Close may already have taken stock of
			// the holds to release, so give this one back here.
			w.giveUp(a)
			_ = m.release(m.c.life, false)
			return false, ErrClosed
		case ok:
			won = true // the acquire took it out of the queue
			w.close(true)
			return true, nil
		case errors.As(err, &qe) && m.c.hopeless(qe):
			w.giveUp(a)
			return false, err
		case errors.As(err, &qe):
			lastFail = err
		case err == nil && a.contended && wait:
			m.noteContention()
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
		if werr := w.wait(ctx, m, k.sleep(a, m.c.opts.RetryDelay), k.first()); werr != nil {
			w.close(false) // it slept: it consumed no wake
			return false, errors.Join(werr, lastFail)
		}
		if w.why == pubsub.WokenHandOff {
			k.handedOff()
		}
	}
}

// contendedLately reports whether a Lock of this handle met another holder
// within the last lease.
func (m *Mutex) contendedLately() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.contendedAt.IsZero() && time.Since(m.contendedAt) < m.c.opts.Lease
}

// noteContention records that a Lock of this handle met another holder.
func (m *Mutex) noteContention() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.contendedAt = time.Now()
}

// attempt runs one acquire for this owner: a first hold, which follows the
// contention rules of k, or a re-entry.
func (m *Mutex) attempt(ctx context.Context, lease time.Duration, renewed bool, k *contender, woken bool) (bool, attempt, error) {
	m.opMu.Lock()
	defer m.opMu.Unlock()

	m.mu.Lock()
	if m.isLost {
		m.mu.Unlock()
		return false, attempt{}, ErrLost
	}
	reentry := m.count > 0
	if reentry { // a re-entry keeps the hold's lease and renewal
		if !time.Now().Before(m.deadline()) {
			m.mu.Unlock()
			m.loseHold()
			return false, attempt{}, ErrLost
		}
		lease, renewed = m.lease, m.renewed
	}
	op := m.op(m.count+1, lease, 2) // one sequence number for the undo
	op.Reentry = reentry
	op.Fence = m.fencing != 0 && !reentry
	m.mu.Unlock()

	only, queueAt := -1, -1
	if !reentry {
		only, queueAt = k.target(), k.queueNode()
		op.Ticket = k.ticket
	}
	a := m.c.acquire(ctx, op, only, queueAt)
	switch {
	case a.acquired:
		k.keeping = false // what it kept is part of the hold now
	case !reentry:
		a.retryNow = k.settle(m.c, op, a, lease, woken)
		return false, a, a.err
	case a.absent > len(m.c.nodes)-m.c.quorum:
		// Too many nodes no longer have the hold for any quorum to: it
		// ended (expired, force-unlocked) and another owner may have held
		// the lock since. Nothing was created where it was missing.
		m.c.undo(op, a, false)
		m.loseHold()
		return false, attempt{}, ErrLost
	default:
		m.c.undo(op, a, false)
		return false, a, a.err
	}
	var token int64
	if m.fencing != 0 && op.Count == 1 {
		var err error
		if token, err = m.c.drawToken(ctx, m.key, m.fencing, a.fence, a.validUntil); err != nil {
			// Without a token written to a quorum the hold cannot be handed out.
			m.c.setBack(op, m.c.allNodes(), a.validUntil)
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return false, attempt{}, err
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	m.count = op.Count
	if reentry {
		m.extend(a.validUntil)
		if len(a.missing) > 0 {
			// A quorum still has the hold: write it back where it vanished
			// (a node restarted empty), as a renewal would.
			m.c.repairLater(m, a.missing, a.validUntil)
		}
		return true, a, nil
	}
	m.token = token
	m.startHold(lease, renewed, a.validUntil)
	return true, a, nil
}

// op builds the next operation of this owner, reserving n sequence numbers.
// The caller holds m.mu.
func (m *Mutex) op(count int64, lease time.Duration, n int64) reentrant.Op {
	m.seq += n
	return reentrant.Op{Key: m.key, Owner: m.owner, Lease: lease, Count: count, Seq: m.seq - n + 1}
}

// startHold records a first acquisition: lease, loss channel, renewal or
// deadline watch, hold context. The caller holds m.mu.
func (m *Mutex) startHold(lease time.Duration, renewed bool, validUntil time.Time) {
	m.lease, m.renewed, m.validUntil = lease, renewed, validUntil
	m.isLost = false
	lost := make(chan struct{})
	m.lost = lost
	every := time.Duration(0)
	if renewed {
		every = lease / 3
	}
	m.entry = m.c.dog.Watch(m, every, validUntil, func() { m.markLost(lost) })
	if m.holdCtx != nil {
		m.stopHold = context.AfterFunc(m.holdCtx, func() { _ = m.releaseAll() })
	}
	m.c.track(m, true)
}

// extend moves the hold's deadline after an operation a quorum confirmed.
// The caller holds m.mu.
func (m *Mutex) extend(validUntil time.Time) {
	if validUntil.After(m.validUntil) {
		m.validUntil = validUntil
	}
	if m.entry != nil {
		m.entry.Extend(validUntil)
	}
}

// endHold forgets the hold once the count is zero. The caller holds m.mu.
func (m *Mutex) endHold() {
	if m.entry != nil {
		m.entry.Stop()
		m.entry = nil
	}
	if m.stopHold != nil {
		m.stopHold()
		m.stopHold = nil
	}
	m.validUntil = time.Time{}
	m.token = 0
	m.isLost = false
	m.lost = closedChan
	m.c.track(m, false)
}

// deadline is the current hold's ValidUntil. The caller holds m.mu.
func (m *Mutex) deadline() time.Time {
	if m.entry != nil {
		return m.entry.ValidUntil()
	}
	return m.validUntil
}

// loseHold signals the loss of the current hold, found out by this owner's
// own operation, and clears whatever is left of it on every node in the
// background. The hold count stays, so the owner's Unlocks stay balanced
// (each returns ErrLost). The caller holds m.opMu, not m.mu.
func (m *Mutex) loseHold() {
	m.signalLoss()
	m.mu.Lock()
	clean := m.op(0, m.lease, 1)
	m.mu.Unlock()
	m.c.releaseOn(clean, m.c.allNodes(), time.Now().Add(clean.Lease))
}

// signalLoss signals the loss of the current hold. The caller does not
// hold m.mu.
func (m *Mutex) signalLoss() {
	m.mu.Lock()
	lost := m.lost
	m.mu.Unlock()
	m.markLost(lost)
}

// markLost signals the loss of the hold whose channel is lost.
func (m *Mutex) markLost(lost chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lost != lost || m.isLost {
		return
	}
	m.isLost = true
	close(lost)
	m.c.stats.losses.Add(1)
	if m.entry != nil {
		m.validUntil = m.entry.ValidUntil() // the last deadline, for the record
		m.entry.Stop()
		m.entry = nil
	}
	m.c.opts.Logger.Warn("relock: lock lost", "name", m.key.Name, "owner", m.owner)
}

// hopeless reports whether a failed quorum operation can never succeed by
// retrying: so many nodes answered with a permanent error (the key holds
// someone else's data) that no quorum is left to agree.
func (c *Client) hopeless(qe *QuorumError) bool {
	permanent := 0
	for _, n := range qe.Nodes {
		if errors.Is(n.Err, ErrWrongType) {
			permanent++
		}
	}
	return permanent > len(c.nodes)-c.quorum
}

package lock

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
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
	hold
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
	m := &Mutex{hold: c.newHold(name, c.id+":"+uuid.NewString(), c.exclusiveKind())}
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
func (m *Mutex) HoldCount() int { return m.holdCount() }

// ValidUntil returns the time until which the current hold is known to be
// valid (on the monotonic clock, so compare it with time.Now, not across
// processes); the watchdog moves it forward at each renewal. The zero time
// when the handle holds nothing.
func (m *Mutex) ValidUntil() time.Time { return m.validTill() }

// Lost returns a channel that is closed when the current hold is lost: its
// lease ran out without renewal, or a quorum of nodes no longer has it. It
// is closed no later than ValidUntil (the watchdog reports an expiring hold
// up to 100 ms early, at most a tenth of its validity). When the handle
// holds nothing it returns a closed channel.
func (m *Mutex) Lost() <-chan struct{} { return m.lostChan() }

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
// last *QuorumError, unless the nodes answered again after it (the lock
// was held: a plain timeout). ctx's deadline bounds every node call; a
// cancellation is seen at once, except by a call made to one node alone
// (every call of a Client of one master, and a waiter's probe of the
// tie-breaker) while that node answers in its usual time: such a call runs
// on Lock's own goroutine and ends first, within the least node timeout
// (NodeTimeout; 100 ms by default).
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

// expiredReason is why a hold whose deadline passed is lost: its renewals
// failed, or its explicit lease ran out.
func expiredReason(renewed bool) LossReason {
	if renewed {
		return LossRenewalFailed
	}
	return LossLeaseExpired
}

// hopeless reports whether a failed quorum operation can never succeed by
// retrying: so many nodes answered with a permanent error (the key holds
// someone else's data, or a semaphore's holders gave another capacity)
// that no quorum is left to agree.
func (c *Client) hopeless(qe *QuorumError) bool {
	permanent := 0
	for _, n := range qe.Nodes {
		if errors.Is(n.Err, ErrWrongType) || errors.Is(n.Err, ErrCapacityMismatch) {
			permanent++
		}
	}
	return permanent > len(c.nodes)-qe.Needed
}

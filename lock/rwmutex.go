package lock

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/relock-go/relock/reentrant"
)

// RWMutex is a handle on a named distributed read-write lock, and one owner
// of it: any number of owners may read at once, or one owner may write.
//
// As with Mutex, the handle is the owner: both of its holds are reentrant
// (it must unlock each as many times as it locked it), and any goroutine
// may unlock them. Two handles are two owners.
//
//   - A writer may take read holds too (RLock while it writes): after its
//     last Unlock it still reads, with no moment in between where another
//     writer could come in (a downgrade).
//   - A reader asking to write gets ErrUpgrade at once and nothing changes:
//     two readers that both waited to write would wait for each other
//     forever. Release the read holds first, then Lock.
//   - Each reader's hold has its own lease, renewed by the watchdog on its
//     own: a reader that crashed frees its share when its own lease ends.
//   - Writers are not starved by a steady stream of readers: a writer that
//     waits leaves a mark on each node that refused it, and new readers of
//     other owners wait behind it (owners already reading re-enter freely).
//     The mark lives one lease of the writer at most, renewed by each of
//     its attempts, so a writer that died holds readers back no longer than
//     that; a writer that gives up removes it.
//   - A writer's release wakes the waiting readers (one per process, each
//     passing the wake on to the next once in) or a writer; the last
//     reader's release wakes a writer.
//
// On each node the write hold is exactly a Mutex's hold, in the hash at the
// lock's key (so Inspect, IsLocked and the relock command see writers), and
// the readers live beside it in keys of their own (see
// reentrant.Key.Readers). A write takes a majority of the nodes on which
// no other owner reads or writes; a read, a majority on which no other
// owner writes: any two majorities share a node, and that node refuses the
// second of a writer and a reader of different owners. Do not use a Mutex
// and an RWMutex with the same name: a Mutex does not see readers.
//
// An RWMutex is safe for concurrent use.
type RWMutex struct {
	r hold // the read hold
	w hold // the write hold
}

// NewRWMutex returns a handle, and owner, for the read-write lock named
// name. One owner id serves both holds, so the nodes know a writer's own
// read holds from other owners'. Of the MutexOptions, WithHoldContext
// applies to both holds and WithFencing to the write hold. A name may hold
// any bytes; the empty name gives a handle whose every operation returns an
// error wrapping ErrInvalidArgument.
func (c *Client) NewRWMutex(name string, opts ...MutexOption) *RWMutex {
	var o Mutex // the options' target: its fields go to the two holds
	for _, opt := range opts {
		opt(&o)
	}
	owner := c.id + ":" + uuid.NewString()
	rw := &RWMutex{
		r: c.newHold(name, owner, holdKind{mode: reentrant.Read, quorum: c.quorum, shared: true}),
		w: c.newHold(name, owner, holdKind{mode: reentrant.Write, quorum: c.quorum, marks: true}),
	}
	rw.r.holdCtx, rw.w.holdCtx, rw.w.fencing = o.holdCtx, o.holdCtx, o.fencing
	return rw
}

// Name returns the lock's name.
func (rw *RWMutex) Name() string { return rw.w.key.Name }

// Owner returns this handle's owner id, CLIENTID:OWNERID, as stored in Redis
// for both of its holds.
func (rw *RWMutex) Owner() string { return rw.w.owner }

// ReadHoldCount returns how many read holds the handle has: 0 when it does
// not read.
func (rw *RWMutex) ReadHoldCount() int { return rw.r.holdCount() }

// WriteHoldCount returns how many write holds the handle has: 0 when it
// does not write.
func (rw *RWMutex) WriteHoldCount() int { return rw.w.holdCount() }

// Token returns the fencing token of the current write hold, or 0 when the
// handle does not write or was made without WithFencing.
func (rw *RWMutex) Token() int64 {
	rw.w.mu.Lock()
	defer rw.w.mu.Unlock()
	return rw.w.token
}

// ValidUntil returns the time until which the handle's hold is known to be
// valid (on the monotonic clock): its write hold's while it writes, else its
// read hold's; the zero time when it holds neither. See Mutex.ValidUntil.
func (rw *RWMutex) ValidUntil() time.Time {
	if rw.w.holdCount() > 0 {
		return rw.w.validTill()
	}
	return rw.r.validTill()
}

// Lost returns a channel that is closed when the handle's hold is lost: its
// write hold's while it writes, else its read hold's (a closed channel when
// it holds neither). It is closed no later than ValidUntil. Read it again
// after a change of holds: a downgraded writer's channel after its last
// Unlock is its read hold's.
func (rw *RWMutex) Lost() <-chan struct{} {
	if rw.w.holdCount() > 0 {
		return rw.w.lostChan()
	}
	return rw.r.lostChan()
}

// RLock takes a read hold, waiting while another owner writes or a writer
// of another owner waits (unless the handle already reads or writes), with
// the Client's lease, renewed by the watchdog until RUnlock. If the handle
// already reads, RLock re-enters its read hold at once; a re-entry that
// finds the hold gone from too many nodes returns ErrLost and adds no hold.
// ctx bounds the wait only, as for Mutex.Lock: when it ends first, nothing
// of the attempt is left on any node.
func (rw *RWMutex) RLock(ctx context.Context) error {
	_, err := rw.r.lock(ctx, rw.r.c.opts.Lease, true, true)
	return err
}

// RLockFor is RLock with an explicit lease, not renewed: the read hold
// expires after lease unless released before. A re-entry keeps the lease
// and renewal of the first read hold.
func (rw *RWMutex) RLockFor(ctx context.Context, lease time.Duration) error {
	_, err := rw.r.lock(ctx, lease, false, true)
	return err
}

// TryRLock makes one attempt to take a read hold, with the Client's renewed
// lease, and reports whether it did: false and no error when another owner
// writes or a writer waits, false and a *QuorumError when the nodes could
// not agree. A failed attempt leaves nothing on any node.
func (rw *RWMutex) TryRLock(ctx context.Context) (bool, error) {
	return rw.r.lock(ctx, rw.r.c.opts.Lease, true, false)
}

// TryRLockFor is TryRLock with an explicit lease that is not renewed.
func (rw *RWMutex) TryRLockFor(ctx context.Context, lease time.Duration) (bool, error) {
	return rw.r.lock(ctx, lease, false, false)
}

// RUnlock releases one read hold; the handle's share of the lock goes when
// it has released as many as it took, and the last reader's release wakes a
// waiting writer. Errors as for Mutex.Unlock: ErrNotHeld when the handle
// does not read, ErrLost when its read hold had been lost.
func (rw *RWMutex) RUnlock(ctx context.Context) error { return rw.r.unlock(ctx) }

// Lock takes the write hold, waiting while other owners read or write,
// with the Client's lease, renewed by the watchdog until Unlock. While it
// waits, new readers of other owners wait behind it. If the handle already
// writes, Lock re-enters at once. If it reads (and does not write), Lock
// returns ErrUpgrade at once and changes nothing. ctx bounds the wait only:
// when it ends first, nothing of the attempt is left on any node, its mark
// included.
func (rw *RWMutex) Lock(ctx context.Context) error {
	_, err := rw.lock(ctx, rw.w.c.opts.Lease, true, true)
	return err
}

// LockFor is Lock with an explicit lease, not renewed.
func (rw *RWMutex) LockFor(ctx context.Context, lease time.Duration) error {
	_, err := rw.lock(ctx, lease, false, true)
	return err
}

// TryLock makes one attempt to take the write hold, with the Client's
// renewed lease, and reports whether it did: false and no error when other
// owners read or write; ErrUpgrade when the handle reads. A failed attempt
// leaves nothing on any node, and no mark: readers do not wait for a
// writer that does not wait.
func (rw *RWMutex) TryLock(ctx context.Context) (bool, error) {
	return rw.lock(ctx, rw.w.c.opts.Lease, true, false)
}

// TryLockFor is TryLock with an explicit lease that is not renewed.
func (rw *RWMutex) TryLockFor(ctx context.Context, lease time.Duration) (bool, error) {
	return rw.lock(ctx, lease, false, false)
}

// Unlock releases one write hold; the write lock is freed, and the waiting
// readers or a writer woken, when the handle has released as many as it
// took. Read holds the handle took while writing stay. Errors as for
// Mutex.Unlock.
func (rw *RWMutex) Unlock(ctx context.Context) error { return rw.w.unlock(ctx) }

// lock takes the write hold unless that would be an upgrade.
func (rw *RWMutex) lock(ctx context.Context, lease time.Duration, renewed, wait bool) (bool, error) {
	if rw.w.keyErr == nil && rw.r.holdCount() > 0 && rw.w.holdCount() == 0 {
		return false, ErrUpgrade
	}
	return rw.w.lock(ctx, lease, renewed, wait)
}

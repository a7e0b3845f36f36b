package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/relock-go/relock/reentrant"
)

// Semaphore is a handle on a named distributed counting semaphore of a
// fixed capacity: at most Capacity permits are held at once, across every
// process and Client that uses the name with that capacity. Each Acquire
// takes n permits for a new owner, its Permit, under that owner's own lease,
// renewed by the Client's watchdog until Release; the permits of a holder
// that crashed come back when its own lease runs out, whatever the other
// holders' leases. A Semaphore is safe for concurrent use.
//
// Every user of a name must give it the same capacity: each node counts the
// permits against the capacity the caller sends.
//
// The quorum. An acquisition must be granted by SemaphoreQuorum(N, k) of the
// N nodes, not by a majority: with k > 1 majorities do not keep the count
// (see SemaphoreQuorum for why, and for the derivation). It costs fault
// tolerance: N − q nodes may be down, none when k+1 ≥ N (k = 2 on 3 nodes
// needs all 3; on 5, 4). Releases, renewals and Available use the same q.
//
// On each node the semaphore is a hash of OWNER = permits (with OWNER/seq,
// the owner's last sequence number, and the capacity its holders gave) and
// a sorted set of OWNER by the end of
// its lease in the server's time, both under the name's hash tag and apart
// from the keys of a Mutex of the same name; see reentrant.NewSemaphoreKey
// and lua/semaphore.lua.
type Semaphore struct {
	c        *Client
	key      reentrant.Key
	capacity int
	quorum   int
}

// NewSemaphore returns a handle on the semaphore name with capacity permits
// (≥ 1). A name may hold any bytes. The empty name, or a capacity below 1,
// returns an error wrapping ErrInvalidArgument. It does not contact the
// nodes. Every user of a name must give the same capacity: while anyone
// holds permits, a node refuses an acquisition that gives another, and it
// fails with ErrCapacityMismatch.
func (c *Client) NewSemaphore(name string, permits int) (*Semaphore, error) {
	if permits < 1 {
		return nil, fmt.Errorf("%w: semaphore %q: capacity %d is below 1", ErrInvalidArgument, name, permits)
	}
	key, err := reentrant.NewSemaphoreKey(c.opts.KeyPrefix, name)
	if err != nil {
		return nil, err
	}
	return &Semaphore{c: c, key: key, capacity: permits, quorum: SemaphoreQuorum(len(c.nodes), permits)}, nil
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string { return s.key.Name }

// Capacity returns how many permits the semaphore has.
func (s *Semaphore) Capacity() int { return s.capacity }

// Quorum returns how many nodes must grant an acquisition (see
// SemaphoreQuorum).
func (s *Semaphore) Quorum() int { return s.quorum }

// Acquire takes n permits (1 ≤ n ≤ Capacity) for a new owner, waiting while
// fewer than n are free, with the Client's lease (Options.Lease) renewed by
// the watchdog until the Permit is released. A waiter sleeps until a
// release is announced over Pub/Sub, or until the soonest lease of the
// current holders runs out (when permits may come back without a release).
//
// ctx bounds the wait only, not the hold. When ctx ends first Acquire
// returns an error for which errors.Is(err, ctx.Err()) is true, and nothing
// of the attempt is left on any node. While the quorum cannot be reached
// (nodes down) it keeps retrying until ctx ends; its error then also wraps
// the last *QuorumError, unless the nodes answered again after it. Bad n
// returns an error wrapping ErrInvalidArgument and sends nothing.
func (s *Semaphore) Acquire(ctx context.Context, n int) (*Permit, error) {
	return s.acquire(ctx, n, s.c.opts.Lease, true, true)
}

// AcquireFor is Acquire with an explicit lease: the permits are not renewed
// and come back after lease unless released before.
func (s *Semaphore) AcquireFor(ctx context.Context, n int, lease time.Duration) (*Permit, error) {
	return s.acquire(ctx, n, lease, false, true)
}

// TryAcquire makes one attempt to take n permits, with the Client's renewed
// lease. It returns a nil Permit and no error when fewer than n are free,
// and a nil Permit with a *QuorumError when the nodes could not agree. A
// failed attempt leaves nothing on any node.
func (s *Semaphore) TryAcquire(ctx context.Context, n int) (*Permit, error) {
	return s.acquire(ctx, n, s.c.opts.Lease, true, false)
}

// TryAcquireFor is TryAcquire with an explicit lease that is not renewed.
func (s *Semaphore) TryAcquireFor(ctx context.Context, n int, lease time.Duration) (*Permit, error) {
	return s.acquire(ctx, n, lease, false, false)
}

func (s *Semaphore) acquire(ctx context.Context, n int, lease time.Duration, renewed, wait bool) (*Permit, error) {
	if err := s.checkPermits(n); err != nil {
		return nil, err
	}
	p := &Permit{permits: n}
	p.h = s.c.newHold(s.key.Name, s.c.id+":"+uuid.NewString(), s.kind(n))
	p.h.key = s.key
	ok, err := p.h.lock(ctx, lease, renewed, wait)
	if !ok {
		return nil, err
	}
	return p, nil
}

// checkPermits returns an error wrapping ErrInvalidArgument when n is not
// a number of permits one owner may take: 1 ≤ n ≤ Capacity.
func (s *Semaphore) checkPermits(n int) error {
	if n < 1 || n > s.capacity {
		return fmt.Errorf("%w: semaphore %q: %d permits is outside [1, %d]", ErrInvalidArgument, s.key.Name, n, s.capacity)
	}
	return nil
}

// kind is the hold kind of an acquisition of n permits: its own scripts and
// quorum; shared, since several owners hold at once, so one release may let
// several waiters of a process in.
func (s *Semaphore) kind(n int) holdKind {
	permits, capacity, quorum := int64(n), int64(s.capacity), s.quorum
	return holdKind{mode: reentrant.Semaphore, quorum: quorum, shared: true, tune: func(op *reentrant.Op) {
		op.Permits, op.Capacity, op.Quorum = permits, capacity, quorum
	}}
}

// Available returns how many permits an acquisition made now could take,
// as far as the nodes know: the largest n for which at least Quorum nodes
// count n or more free permits (capacity minus the live holders' permits
// there). It is a snapshot: by the time it returns, holders may have come
// and gone, so use it for display and metrics, never to decide to acquire.
// It returns a *QuorumError when fewer than Quorum nodes answered, an error
// matching ErrCapacityMismatch when a node records another capacity than
// the handle's (the holders gave it: see NewSemaphore), and ErrClosed
// after Client.Close.
func (s *Semaphore) Available(ctx context.Context) (int, error) {
	if err := s.c.begin(); err != nil {
		return 0, err
	}
	defer s.c.end()
	replies := fanOutTo(s.c, ctx, kindAcquire, s.c.opts.Lease, -1, s.quorum,
		func(ctx context.Context, n *reentrant.Node) (reentrant.SemaphoreState, error) {
			return n.InspectSemaphore(ctx, s.key)
		})
	var free []int64
	for _, r := range replies {
		if r.err != nil {
			continue
		}
		if err := r.value.CheckCapacity(s.key, int64(s.capacity)); err != nil {
			return 0, err
		}
		used := int64(0)
		for _, h := range r.value.Holders {
			used += h.Permits
		}
		free = append(free, max(int64(s.capacity)-used, 0))
	}
	if len(free) < s.quorum {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		return 0, &QuorumError{Op: "available", Needed: s.quorum, Agreed: len(free), Nodes: failures(s.c, replies)}
	}
	return int(quorumth(free, s.quorum)), nil
}

// Permit is the permits one Acquire took: one owner of the semaphore,
// holding them until Release. It is safe for concurrent use.
type Permit struct {
	permits int
	h       hold
}

// Permits returns how many permits this Permit holds (it holds them until
// released, or lost).
func (p *Permit) Permits() int { return p.permits }

// Owner returns the permit's owner id, CLIENTID:OWNERID, as stored in Redis.
func (p *Permit) Owner() string { return p.h.owner }

// ValidUntil returns the time until which the permits are known to be held
// (on the monotonic clock); the watchdog moves it forward at each renewal.
// The zero time once released.
func (p *Permit) ValidUntil() time.Time { return p.h.validTill() }

// Lost returns a channel that is closed when the permits are lost: their
// lease ran out without renewal, or too many nodes no longer have them for
// the quorum. It is closed no later than ValidUntil. Once the Permit is
// released it returns a closed channel; a channel it returned before stays
// open, unless the permits were lost first.
func (p *Permit) Lost() <-chan struct{} { return p.h.lostChan() }

// Release gives the permits back on every node and wakes waiters. It
// returns ErrNotHeld, sending nothing, when the Permit was already
// released; ErrLost when the permits had been lost (what is left of them is
// cleared anyway); a *QuorumError when fewer than the quorum confirmed (the
// other nodes keep being retried in the background until the lease would
// have run out); ErrClosed after Client.Close, which released them. As with
// Mutex.Unlock, the release is sent even when ctx has already ended.
func (p *Permit) Release(ctx context.Context) error { return p.h.unlock(ctx) }

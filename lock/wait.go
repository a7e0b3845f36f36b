package lock

import (
	"context"
	"time"

	"github.com/relock-go/relock/internal/backoff"
	"github.com/relock-go/relock/pubsub"
)

// waiter sleeps between the attempts of a blocking Lock. After the first
// failed attempt it subscribes to the lock's release channel and has the
// caller retry at once: that retry, the one that decides to sleep, comes
// after the subscription is confirmed, so a release in between is never
// missed. Then it sleeps until a release is handed to it, the holder's
// lease runs out, or ctx ends.
type waiter struct {
	sub    *pubsub.Waiter
	primed bool
	woken  bool              // the last sleep ended with a release's wake
	why    pubsub.WakeReason // what that wake was

	// For the observer: the sleeps so far, and how the last one ended.
	sleeps   int
	lastWake WaitEnd
}

// wait sleeps after a failed attempt until a wake comes or sleep passes,
// or returns ctx's error (or ErrClosed) when ctx ends (or the Client
// closes) first. A first waiter (one that holds the lock's tie-breaker) is
// woken before the others of its process.
func (w *waiter) wait(ctx context.Context, h *hold, sleep time.Duration, first bool) (err error) {
	if !w.primed {
		return w.prime(ctx, h)
	}
	w.woken, w.why = false, pubsub.WokenOther
	w.sub.SetFirst(first)
	t := time.NewTimer(sleep)
	defer t.Stop()
	h.c.stats.sleeping.Add(1)
	defer h.c.stats.sleeping.Add(-1)
	start := h.c.sleepStarted(ctx, h, sleep)
	defer func() { w.slept(ctx, h, start, err) }()
	select {
	case <-w.sub.Wake():
		w.woken, w.why = true, w.sub.WakeReason()
		h.c.stats.wokenByPub.Add(1)
		return nil
	case <-t.C:
		h.c.stats.wokenByTTL.Add(1)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-h.c.closing:
		return ErrClosed
	}
}

// prime subscribes to the lock's release channel, so that the attempts
// from now on can sleep when they fail: no release after them is missed.
// A Lock that expects contention primes before its first attempt, which
// then sleeps at once when it fails; another primes after it, and retries.
func (w *waiter) prime(ctx context.Context, h *hold) error {
	w.primed = true
	sub, err := h.c.broker.SubscribeOwner(ctx, h.key.WaitChannel(h.kind.mode), h.owner, releasesOf(h.owner))
	switch {
	case err == nil && ctx.Err() == nil:
		w.sub = sub
		return nil
	case err == nil:
		// Subscribed as ctx ended (the confirmation and ctx.Done can be
		// ready together, and either is taken): this Lock gives up, and
		// the share goes now. Kept by no one, it would keep the channel
		// subscribed for good, and, the oldest waiter of its process,
		// take the wakes meant for the others.
		sub.Close()
		return ctx.Err()
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		return ErrClosed
	}
}

// close drops the subscription share. A waiter that got the lock drops any
// wake it did not use (that release is the one it took); one that gave up
// passes it on to the next waiter.
func (w *waiter) close(acquired bool) {
	if w.sub == nil {
		return
	}
	if acquired {
		select {
		case <-w.sub.Wake():
		default:
		}
	}
	w.sub.Close()
}

// passOn drops the subscription share of a Lock that got a hold others
// may share (see holdKind.shared), and wakes the next waiter of its process
// on the lock's channel: the release that let this one in may let that one
// in too, and it would otherwise sleep out its lease. A waiter the wake
// does not help (it needs what this one now holds) tries once and sleeps
// again.
func (w *waiter) passOn() {
	if w.sub == nil {
		return
	}
	w.sub.PassOn()
}

// giveUp drops the subscription share of a Lock that ends without the
// lock. When its last wake led to an attempt that never reached the nodes
// (ctx ended in between), that release is still unclaimed: the wake goes to
// the next waiter.
func (w *waiter) giveUp(last attempt) {
	if w.sub != nil && w.woken && !last.sent {
		w.sub.GiveBack()
	}
	w.close(false)
}

// sleepAfter is how long to sleep after a failed attempt when no release
// arrives: the holder's remaining lease (the lock may be free then), or a
// jittered retry delay when that is unknown (a holder key without a TTL)
// or the failure was the nodes'. Never zero, so it never spins.
func sleepAfter(a attempt, retryDelay time.Duration) time.Duration {
	if a.contended && a.holderTTL >= 0 {
		return max(a.holderTTL, time.Millisecond)
	}
	return max(backoff.Jitter(retryDelay), time.Millisecond)
}

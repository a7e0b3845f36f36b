package lock

import (
	"context"
	"time"
)

// waiter sleeps between the attempts of a blocking Lock.
type waiter struct {
	primed bool // the first failed attempt has been followed by a retry
}

// wait sleeps after the failed attempt a, until the lock may be free, or
// returns ctx's error when ctx ends first.
func (w *waiter) wait(ctx context.Context, m *Mutex, a attempt) error {
	if !w.primed {
		// Retry once at once: the retry that decides to sleep comes after
		// the subscription is in place, so no release falls between.
		w.primed = true
		return nil
	}
	t := time.NewTimer(sleepAfter(a, m.c.opts.RetryDelay))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *waiter) close() {}

// sleepAfter is how long to sleep after a failed attempt: no longer than the
// holder's remaining lease (the lock may be free then), a jittered retry
// delay when that is unknown (a holder key without TTL) or the failure was
// the nodes', never zero.
func sleepAfter(a attempt, retryDelay time.Duration) time.Duration {
	d := jitter(retryDelay)
	if a.contended && a.holderTTL >= 0 {
		d = min(d, a.holderTTL)
	}
	return max(d, time.Millisecond)
}

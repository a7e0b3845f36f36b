// Package backoff is relock's one shape for retry delays: exponential
// growth from a first delay up to a ceiling, with optional jitter so that
// callers that failed together do not retry in lockstep.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Jitter returns a random delay in [d/2, 3d/2), or 0 when d is not
// positive. Its mean is d.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d)
}

// Backoff hands out delays that double from First up to Max. The zero value
// of its state starts at First; a Backoff is not safe for concurrent use.
type Backoff struct {
	First  time.Duration // the first delay (clamped to at least 1ns)
	Max    time.Duration // the ceiling of the doubling (at least First)
	Jitter bool          // spread each delay over [d/2, 3d/2)

	next time.Duration // the next delay before jitter; 0 means First
}

// Next returns the next delay and doubles the one after it, up to Max.
func (b *Backoff) Next() time.Duration {
	d := b.next
	if d <= 0 {
		d = max(b.First, 1)
	}
	b.next = min(2*d, max(b.Max, d))
	if b.Jitter {
		return Jitter(d)
	}
	return d
}

// Reset starts the doubling again from First: the thing retried worked.
func (b *Backoff) Reset() { b.next = 0 }

// Started reports whether Next has been called since New or Reset, that is
// whether a failure is being backed off from.
func (b *Backoff) Started() bool { return b.next > 0 }

// Package rtt estimates how long to wait for one node's answer from the
// round trips the node has taken so far, the way TCP sets its retransmission
// timer (RFC 6298): a smoothed round-trip time SRTT, its mean deviation
// RTTVAR, and a timeout of SRTT + 4·RTTVAR, clamped between a floor and a
// ceiling. Each timeout doubles the next ones (backoff) until an answer comes
// again, so a node that became slower is soon waited for long enough instead
// of being timed out forever.
package rtt

import (
	"sync"
	"sync/atomic"
	"time"
)

// Config bounds an Estimator.
type Config struct {
	// Floor is the least timeout: round trips on a quiet loopback are far
	// shorter than the pauses of a busy machine (scheduling, GC).
	Floor time.Duration
	// Ceiling is the greatest timeout, backoff included.
	Ceiling time.Duration
	// Initial is the timeout before the first sample (RFC 6298 uses 1 s).
	Initial time.Duration
}

// Token names the timer a call was given. The calls that time out together
// back the timer off once, not once each: only a token still current counts.
// A backoff starts a new timer, and so does the answer that ends a backoff.
type Token uint64

// Estimator tracks one node's round trips. It is safe for concurrent use;
// reading a timeout takes no lock.
type Estimator struct {
	cfg Config

	mu      sync.Mutex // serializes updates; readers load snap
	srtt    time.Duration
	rttvar  time.Duration
	sampled bool
	backoff uint // doublings since the last sample

	snap atomic.Pointer[snapshot]
	// next: an unremarkable sample (one within the timeout) arriving
	// before then (nanoseconds since epoch, on the monotonic clock) is
	// skipped, so the estimate moves once per round trip as RFC 6298
	// assumes, not once per call: under load a node answers hundreds of
	// calls per round trip, and their deviations would be forgotten at
	// once. Apart from snap, which is replaced only when what readers see
	// changes (each replacement an allocation): a node well within the
	// floor moves its estimate on every round trip, its timeouts seldom.
	next atomic.Int64
}

// epoch is what next counts from: a monotonic clock reading.
var epoch = time.Now()

// snapshot is what readers see: replaced whole when an update changes it.
type snapshot struct {
	timeout time.Duration // with backoff
	typical time.Duration // without backoff; Floor before the first sample
	token   Token
	// backedOff: a call timed out since the last answer.
	backedOff bool
}

// New returns an Estimator with no sample yet. A Floor that is not positive
// is taken as 1 ms; Ceiling is raised to Floor, and Initial is clamped
// between them.
func New(cfg Config) *Estimator {
	e := &Estimator{cfg: cfg.bounded()}
	e.publish(0)
	return e
}

// bounded returns cfg with the bounds New applies.
func (cfg Config) bounded() Config {
	cfg.Floor = max(cfg.Floor, time.Millisecond)
	cfg.Ceiling = max(cfg.Ceiling, cfg.Floor)
	cfg.Initial = min(max(cfg.Initial, cfg.Floor), cfg.Ceiling)
	return cfg
}

// FirstTimeout returns the timeout an Estimator made with cfg gives before
// its first sample: Initial, within the bounds New applies.
func (cfg Config) FirstTimeout() time.Duration { return cfg.bounded().Initial }

// Timeout returns how long to wait for the node's next answer, and the token
// to hand to Expired if it does not come in time.
func (e *Estimator) Timeout() (time.Duration, Token) {
	s := e.snap.Load()
	return s.timeout, s.token
}

// Typical returns the timeout the node's round trips alone call for,
// without backoff: clamp(SRTT + 4·RTTVAR, Floor, Ceiling), or Floor before
// the first sample. It is how long a node is worth waiting for when the
// outcome no longer depends on it.
func (e *Estimator) Typical() time.Duration { return e.snap.Load().typical }

// BackedOff reports whether a call timed out (Expired) since the node's
// last answer (Sample): the node is not answering now, as far as is known.
func (e *Estimator) BackedOff() bool { return e.snap.Load().backedOff }

// Sample records an answer that took rtt, measured from the moment the call
// was made. Any answer counts, also one that came after its timeout: it is
// not ambiguous (each call is answered once), and it tells the most about a
// node that became slower. It clears the backoff.
func (e *Estimator) Sample(rtt time.Duration) {
	now := time.Since(epoch)
	if rtt <= e.snap.Load().timeout && int64(now) < e.next.Load() {
		return // cheap path: an ordinary answer within this round trip
	}
	rtt = max(rtt, time.Microsecond) // the clock's granularity
	e.mu.Lock()
	defer e.mu.Unlock()
	if rtt <= e.snap.Load().timeout && int64(now) < e.next.Load() {
		return
	}
	if !e.sampled {
		e.srtt, e.rttvar, e.sampled = rtt, rtt/2, true // RFC 6298 (2.2)
	} else { // RFC 6298 (2.3), alpha 1/8 and beta 1/4; RTTVAR first
		e.rttvar = (3*e.rttvar + absDiff(e.srtt, rtt)) / 4
		e.srtt = (7*e.srtt + rtt) / 8
	}
	token := e.snap.Load().token
	if e.backoff > 0 { // a new timer: calls that timed out before it no longer count
		e.backoff = 0
		token++
	}
	e.next.Store(int64(now + e.srtt))
	e.publish(token)
}

// Expired records that a call given the timeout named token got no answer
// in time: the timeout doubles, up to Ceiling (RFC 6298 (5.5)), once per
// token, so a burst of calls that timed out together doubles it once. A
// timeout at Ceiling marks the node backed off (see BackedOff) once.
func (e *Estimator) Expired(token Token) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.snap.Load()
	if token != s.token || (s.timeout >= e.cfg.Ceiling && e.backoff > 0) {
		return
	}
	e.backoff++
	// The next answer is taken whatever its timing: it ends the backoff.
	e.next.Store(0)
	e.publish(s.token + 1)
}

// publish computes the timeouts from the estimate and makes them visible,
// if they changed. The caller holds mu (or owns e, in New).
func (e *Estimator) publish(token Token) {
	typical, base := e.cfg.Floor, e.cfg.Initial
	if e.sampled {
		typical = e.clamp(e.srtt + 4*e.rttvar)
		base = typical
	}
	timeout := base
	for range e.backoff {
		if timeout >= e.cfg.Ceiling {
			break
		}
		timeout *= 2
	}
	want := snapshot{timeout: e.clamp(timeout), typical: typical, token: token, backedOff: e.backoff > 0}
	if s := e.snap.Load(); s == nil || *s != want {
		replaced := want // on the heap only when it is
		e.snap.Store(&replaced)
	}
}

func (e *Estimator) clamp(d time.Duration) time.Duration {
	return min(max(d, e.cfg.Floor), e.cfg.Ceiling)
}

func absDiff(a, b time.Duration) time.Duration {
	if a > b {
		return a - b
	}
	return b - a
}

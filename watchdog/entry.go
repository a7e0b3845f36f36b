package watchdog

import "time"

// Entry is one watched lock.
type Entry struct {
	w      *Watchdog
	value  any
	every  time.Duration
	early  time.Duration // how long before the deadline a loss is reported
	onLost func(expired bool)

	// Guarded by w.mu.
	validUntil time.Time
	due        time.Time
	retry      bool // the last renewal failed: due is its retry's
	index      int  // position in the queue, -1 when not queued
	stopped    bool
	timer      *time.Timer // fires expire at validUntil
}

// ValidUntil returns the lock's current validity deadline.
func (e *Entry) ValidUntil() time.Time {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	return e.validUntil
}

// Extend moves the deadline to validUntil when that is later: the holder
// proved the lock held by some other operation (a re-entry, a partial
// unlock).
func (e *Entry) Extend(validUntil time.Time) {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	if e.stopped || !validUntil.After(e.validUntil) {
		return
	}
	e.validUntil = validUntil
	e.timer.Reset(e.untilLoss(validUntil))
}

// Stop ends the watch: no more renewals, and, when it returns true, no loss
// callback. It reports false when the entry had already stopped: lost (its
// callback may still be starting), stopped before, or its Watchdog closed.
func (e *Entry) Stop() bool {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	if e.timer != nil {
		e.timer.Stop()
	}
	if e.stopped {
		return false
	}
	e.detach()
	return true
}

// expire runs on the timer at the deadline: no renewal moved it, so the lock
// can no longer be proven held.
func (e *Entry) expire() {
	e.w.mu.Lock()
	if e.stopped || time.Now().Before(e.validUntil.Add(-e.early)) {
		// Stopped, or extended after the timer fired but before we got here.
		e.w.mu.Unlock()
		return
	}
	e.detach()
	e.w.mu.Unlock()
	e.onLost(true)
}

// detach marks the entry stopped and forgets it. The caller holds w.mu.
func (e *Entry) detach() {
	e.stopped = true
	if e.index >= 0 {
		e.w.queue.remove(e)
	}
	delete(e.w.all, e)
}

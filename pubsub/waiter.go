package pubsub

import "strings"

// Waiter is one local waiter's share of a channel subscription, returned by
// Broker.Subscribe. Its methods are safe for concurrent use.
type Waiter struct {
	b       *Broker
	channel string
	wake    chan struct{} // buffer 1: a pending wake never blocks the dispatcher
	closed  bool          // guarded by b.mu
	ignore  string        // payloads with this prefix do not wake w; "" for none
	owner   string        // the lock owner w waits for, named by hand-offs; "" for none
	first   bool          // woken before the channel's other waiters; guarded by b.mu
	// why: what woke w since WakeReason last read it. Guarded by b.mu.
	why   WakeReason
	wakes uint64 // wakes w was given, for a hand-off watch; guarded by b.mu
	// late holds, per node, the confirmation Subscribe stopped waiting for
	// (nil where the node had confirmed): when it comes, w is woken, since
	// a release published before it was missed. Guarded by b.mu.
	late []<-chan struct{}
}

func newWaiter(b *Broker, channel string) *Waiter {
	return &Waiter{b: b, channel: channel, wake: make(chan struct{}, 1)}
}

// Channel returns the channel w waits on.
func (w *Waiter) Channel() string { return w.channel }

// Wake returns a channel that receives a value when w should retry: a release
// was handed to it, a node's connection broke or came back (messages may have
// been lost), a waiter that gave up passed its wake on, or the Broker closed.
// At most one wake is pending at a time; wakes that arrive while one is
// pending merge into it. The channel is never closed.
func (w *Waiter) Wake() <-chan struct{} { return w.wake }

// Close drops w's share of the channel; the last share to go unsubscribes the
// channel on every node once the channel has had no waiter for
// Options.Linger. A wake w received but did not consume is handed to
// the next waiter of the channel. Close does not block on the network and is
// idempotent.
func (w *Waiter) Close() { w.leave(false) }

// PassOn closes w, as Close does, and wakes the next waiter of its channel
// as a release would: w's owner took a hold that others may share, and the
// release that let it in may let the next one in too. A wake w still had
// pending is that one, moved on (Stats counts it once).
func (w *Waiter) PassOn() { w.leave(true) }

// leave drops w's share; with pass, the next waiter is woken whether w had
// a wake pending or not.
func (w *Waiter) leave(pass bool) {
	b := w.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	if pass && w.takeWake() {
		b.reg.wakes-- // it moves on below, and counts where it lands
	}
	last := b.reg.remove(w)
	switch {
	case last && !b.closed:
		b.unwantLater(w.channel)
	case !last && pass:
		b.reg.dispatch(w.channel, "")
	}
}

// SetFirst sets whether w is woken before the other waiters of its channel
// (in order of arrival among those that are): a lock waiter that holds the
// lock's tie-breaker node is the one that must retry.
func (w *Waiter) SetFirst(first bool) {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	w.first = first
}

// WakeReason says why a waiter was woken.
type WakeReason int

const (
	// WokenOther: a release for any waiter, a wake passed on, a connection
	// change, or nothing since the last call.
	WokenOther WakeReason = iota
	// WokenHandOff: a hand-off named the waiter's owner: the lock was
	// released to it, so its next attempt should go straight to every node
	// rather than first ask who holds the lock.
	WokenHandOff
	// WokenWatch: the waiter was next in line after a hand-off whose target
	// has not taken the lock within Options.HandOffWatch (see message.go).
	WokenWatch
)

// WakeReason reports why w was woken since the last call, and forgets it.
// A hand-off outranks the other reasons when wakes merged.
func (w *Waiter) WakeReason() WakeReason {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	why := w.why
	w.why = WokenOther
	return why
}

// noteReason records why w is being woken. The caller holds b.mu.
func (w *Waiter) noteReason(why WakeReason) {
	if w.why != WokenHandOff {
		w.why = why
	}
}

// GiveBack returns a wake that w consumed but could not use (the retry it
// was for never reached the nodes), so that Close hands it to the next
// waiter of the channel instead of losing the release it announced. Call it
// just before Close.
func (w *Waiter) GiveBack() {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	w.wakeUp()
}

// wakeUp gives w a wake unless one is already pending, and reports whether
// it did. The caller holds b.mu.
func (w *Waiter) wakeUp() bool {
	select {
	case w.wake <- struct{}{}:
		w.wakes++
		return true
	default:
		return false
	}
}

// ignores reports whether a message with payload must not wake w.
func (w *Waiter) ignores(payload string) bool {
	return w.ignore != "" && payload != "" && strings.HasPrefix(payload, w.ignore)
}

// takeWake consumes w's pending wake, if any, and reports whether there was one.
func (w *Waiter) takeWake() bool {
	select {
	case <-w.wake:
		return true
	default:
		return false
	}
}

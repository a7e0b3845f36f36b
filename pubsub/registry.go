package pubsub

import "slices"

// registry knows the local waiters of each channel, oldest first, and decides
// who a wake goes to. It does no I/O and is not safe for concurrent use; the
// Broker calls it under its lock.
type registry struct {
	chans   map[string][]*Waiter
	waiters int
	wakes   uint64 // wakes handed to waiters, for Stats
}

func newRegistry() *registry {
	return &registry{chans: make(map[string][]*Waiter)}
}

// add appends w to its channel's queue and reports whether it is the
// channel's first waiter, i.e. whether the channel must now be subscribed.
func (r *registry) add(w *Waiter) (first bool) {
	q := r.chans[w.channel]
	r.chans[w.channel] = append(q, w)
	r.waiters++
	return len(q) == 0
}

// remove takes w out of its channel's queue and reports whether it was the
// channel's last waiter, i.e. whether the channel must now be unsubscribed.
// A wake w received but never consumed goes to the next waiter in line, so a
// waiter that gives up does not swallow a release someone else needs.
func (r *registry) remove(w *Waiter) (last bool) {
	q := r.chans[w.channel]
	i := slices.Index(q, w)
	if i < 0 {
		return false
	}
	q = slices.Delete(q, i, i+1)
	r.waiters--
	if len(q) == 0 {
		delete(r.chans, w.channel)
		last = true
	} else {
		r.chans[w.channel] = q
	}
	if w.takeWake() {
		r.wakes-- // it was never consumed; count it once, where it lands
		if !last {
			r.dispatch(w.channel, "")
		}
	}
	return last
}

// dispatch wakes the oldest waiter of channel that has no wake pending and
// does not ignore payload, first waiters (SetFirst) before the others, and
// reports whether there was one. Waiters that
// already hold a wake will retry anyway, so waking them again would only
// lose the release. A payload of "" (a wake passed on, a missed
// confirmation) is ignored by no one.
func (r *registry) dispatch(channel, payload string) bool {
	for _, first := range []bool{true, false} {
		for _, w := range r.chans[channel] {
			if w.first != first || w.ignores(payload) {
				continue
			}
			if w.wakeUp() {
				r.wakes++
				return true
			}
		}
	}
	return false
}

// wakeAll wakes every waiter of every channel.
func (r *registry) wakeAll() {
	for _, q := range r.chans {
		for _, w := range q {
			if w.wakeUp() {
				r.wakes++
			}
		}
	}
}

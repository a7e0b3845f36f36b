package pubsub

import (
	"slices"
	"strings"
)

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

// dispatch hands a due message of channel to the waiter it is for (see
// message.go) and reports whether it found one. A release for any waiter
// wakes the oldest waiter that has no wake pending and does not ignore
// payload, first waiters (SetFirst) before the others; waiters that already
// hold a wake will retry anyway, so waking them again would only lose the
// release. A message for keepers only wakes a first waiter or no one. A
// hand-off wakes its target, if it waits here, and returns in watch the
// waiter named after it, if it waits here, for the caller to wake later
// should the target not take the lock (see Broker.message). A payload of ""
// (a wake passed on, a missed confirmation) is ignored by no one.
func (r *registry) dispatch(channel, payload string) (claimed bool, watch *Waiter) {
	m := parseMessage(payload)
	switch {
	case m.kind == keepersOnly:
		return r.wakeOldest(channel, payload, true), nil
	case m.kind == handOff && m.target != "":
		return true, r.handOff(channel, m)
	}
	if r.wakeOldest(channel, payload, true) {
		return true, nil
	}
	return r.wakeOldest(channel, payload, false), nil
}

// handOff wakes the hand-off's target and returns the waiter to watch for
// it (see dispatch). An owner is CLIENT:ID, one CLIENT per process (per
// lock.Client): when the target or the next in line is of this process but
// no longer waits (it gave up, and the queue did not hear of it yet),
// another waiter of the process takes its place, so a queue entry that
// outlived its waiter costs nothing while its process lives.
func (r *registry) handOff(channel string, m message) (watch *Waiter) {
	q := r.chans[channel]
	target := exactOwner(q, m.target)
	next := exactOwner(q, m.next)
	// Stand-ins only where the owner named is not here: a waiter picked for
	// the target must not use up the one the next in line needs, nor be it.
	if target == nil {
		target = standIn(q, m.target, next)
	}
	if target != nil {
		target.noteReason(WokenHandOff)
		// The target goes straight to every node, where the releaser's
		// other releases may land just after its attempt: the copies for
		// keepers that announce them must wake it then, not be lost while
		// it is busy (it would sleep a retry delay). Its next wait sets
		// first again from what its attempt kept.
		target.first = true
		if target.wakeUp() {
			r.wakes++
		}
	}
	if next == nil {
		next = standIn(q, m.next, target)
	}
	return next
}

// exactOwner returns the waiter of q that waits for owner, or nil.
func exactOwner(q []*Waiter, owner string) *Waiter {
	for _, w := range q {
		if owner != "" && w.owner == owner {
			return w
		}
	}
	return nil
}

// standIn returns the oldest waiter of q of owner's process other than
// except, or nil: it takes the place of owner, who gave up.
func standIn(q []*Waiter, owner string, except *Waiter) *Waiter {
	for _, w := range q {
		if w != except && sameClient(w.owner, owner) {
			return w
		}
	}
	return nil
}

func sameClient(a, b string) bool {
	ca, _, okA := strings.Cut(a, ":")
	cb, _, okB := strings.Cut(b, ":")
	return okA && okB && ca != "" && ca == cb
}

// wakeOldest wakes the oldest waiter of channel with first set as given
// that has no wake pending and does not ignore payload.
func (r *registry) wakeOldest(channel, payload string, first bool) bool {
	for _, w := range r.chans[channel] {
		if w.first != first || w.ignores(payload) {
			continue
		}
		if w.wakeUp() {
			r.wakes++
			return true
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

package pubsub

import (
	"strconv"
	"strings"
)

// The messages a lock's release channel carries, as relock's release
// scripts publish them (lua/prelude.lua, announce). ID is the release's id,
// which begins with the releasing owner and a '/'; owners, CLIENT:ID with
// one CLIENT per process, hold no spaces. A waiter of TARGET's (or NEXT's)
// process stands in for it when it no longer waits.
//
//	ID                  a copy for any waiter. Every node the release freed
//	                    publishes one; the copies are counted (Options.Quorum).
//	ID TARGET NEXT      a hand-off, from the node that breaks the lock's ties,
//	                    the only copy: the lock goes to the waiting owner
//	                    TARGET, and NEXT is the owner queued after it, who
//	                    retries if TARGET does not take the lock within
//	                    Options.HandOffWatch (it may have died). An empty
//	                    TARGET (a fair lock's release; a Mutex's publishes
//	                    nothing then) means the queue was empty: any
//	                    waiter. It is
//	                    due at once: the other nodes' releases were sent
//	                    with it, and where the target's attempt still finds
//	                    the releaser, the target waits there (registered as
//	                    a keeper) for that node's ID k.
//	ID k                for keepers only: waiters marked SetFirst (they hold
//	                    part of the lock and wait for the rest, or cannot
//	                    reach the node that sends hand-offs), at once. A
//	                    node publishes it only when a waiter registered
//	                    there (an attempt of it was refused there), so a
//	                    plain hand-off costs one message, not one per node,
//	                    in every subscribed process. If no
//	                    hand-off of the same release arrives within
//	                    Options.Grace (the node that sends them failed, or
//	                    this process's subscription to it is down), the
//	                    release goes to one waiter here, as an ID would.
//	ID u                for keepers only, as ID k, from a clean-up (the undo
//	                    of a failed attempt, a retried release): no hand-off
//	                    is to come, so no one else wakes for it. Without
//	                    this, every undo of an attempt that lost the lock
//	                    would wake one waiter in every process.
//	ID *Q               a copy for any waiter, as ID, that is due once Q
//	                    copies are in instead of Options.Quorum: a hold
//	                    whose acquisitions need more nodes than the lock's
//	                    majority (a semaphore's) says how many, so that its
//	                    waiter retries when the release can let it in.
//
// An empty payload is a bare wake (a wake passed on, a late subscription
// confirmation): any waiter, at once.
// PersonalChannel returns the channel on which releases publish, instead of
// on channel itself, what concerns only the owners of the process whose
// owner ids begin with "process:" (the release script's personal, in
// lua/prelude.lua, derives it from an owner id): a hand-off to one of them
// or to the owner after it, and a copy for keepers of theirs. A Broker with
// Options.Process subscribes it beside every channel.
func PersonalChannel(channel, process string) string { return channel + ">" + process }

type message struct {
	kind   messageKind
	id     string // the release's id ("" for a bare wake)
	target string // hand-off only
	next   string // hand-off only
	need   int    // ID *Q only: the copies that make it due
	// cleanup: ID u, a copy for keepers that no hand-off follows.
	cleanup bool
}

type messageKind int

const (
	anyWaiter   messageKind = iota // ID: counted copies
	handOff                        // ID TARGET NEXT
	keepersOnly                    // ID k
)

// parseMessage reads a payload in the formats above. Anything else is read
// as a release for any waiter, as before these formats existed.
func parseMessage(payload string) message {
	id, rest, found := strings.Cut(payload, " ")
	if !found || id == "" {
		return message{kind: anyWaiter, id: id}
	}
	if rest == "k" || rest == "u" {
		return message{kind: keepersOnly, id: id, cleanup: rest == "u"}
	}
	if q, ok := strings.CutPrefix(rest, "*"); ok {
		if need, err := strconv.Atoi(q); err == nil && need > 0 {
			return message{kind: anyWaiter, id: id, need: need}
		}
	}
	target, next, found := strings.Cut(rest, " ")
	if !found {
		return message{kind: anyWaiter, id: payload}
	}
	return message{kind: handOff, id: id, target: target, next: next}
}

// handOffFollows reports whether the message is a copy for keepers of a
// release whose hand-off is to come (ID k, not ID u).
func (m message) handOffFollows() bool { return m.kind == keepersOnly && !m.cleanup }

// copiesNeeded is how many copies of the message make it due: a quorum's
// for a copy every node sends, one for the others.
func (m message) copiesNeeded(quorum int) int {
	switch {
	case m.need > 0:
		return m.need
	case m.kind == anyWaiter:
		return quorum
	}
	return 1
}

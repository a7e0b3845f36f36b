package lock

import (
	"github.com/google/uuid"

	"github.com/relock-go/relock/reentrant"
)

// FairMutex is a Mutex whose waiters get the lock in the order they asked
// for it, across every process: first come, first served.
//
// How: the lock's tie-breaker node (see Options.Nodes) keeps its wait
// queue, a sorted set of waiting owners by ticket (the time their Lock call
// began). A Lock asks with its ticket from its first attempt, and the
// tie-breaker lets an owner take the free lock only when it heads the
// queue (or the queue is empty); anyone else joins the queue, and the
// tie-breaker's refusal vetoes that attempt whatever the other nodes said.
// A release hands the lock to the head of the queue by name, so exactly
// one waiter across all processes wakes and tries. TryLock never jumps the
// queue: it fails while others wait.
//
// A waiter that gives up (its ctx ends) leaves the queue at once. One that
// dies without leaving keeps its place until its deadline on the
// tie-breaker passes: each attempt of a waiter moves its deadline to the
// holder's remaining lease plus the waiter's own lease from then, and a
// live waiter asks again before that. So a dead waiter holds up those
// behind it for at most about two leases.
//
// Fairness needs the tie-breaker. While it is down or does not answer in
// time, the quorum alone decides, as for a Mutex, and the order is not
// kept; the lock's safety never depends on the queue.
//
// Everything else is as for a Mutex: reentrant within the handle, leases
// renewed by the watchdog, Lost, fencing tokens, hold contexts.
type FairMutex struct {
	Mutex
}

// NewFairMutex returns a handle, and owner, for the fair lock named name.
// The lock's data on each node is a Mutex's, so a name must be used either
// fair or not by all its users: a Mutex's Lock does not wait its turn.
func (c *Client) NewFairMutex(name string, opts ...MutexOption) *FairMutex {
	kind := c.exclusiveKind()
	kind.fair = true
	kind.tune = func(op *reentrant.Op) { op.Fair = true }
	m := &FairMutex{Mutex{hold: c.newHold(name, c.id+":"+uuid.NewString(), kind)}}
	for _, o := range opts {
		o(&m.Mutex)
	}
	return m
}

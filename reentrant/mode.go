package reentrant

import "github.com/relock-go/relock/lua"

// Mode is the kind of hold an Op takes, renews or gives back. Each mode has
// its own scripts and keys on a node; all of them share the Op's fields
// (owner, absolute count, sequence number, lease) and the replies' shapes,
// so the lock package's quorum engine (fan-out, undo, clean-up, renewal)
// runs every mode the same way.
type Mode uint8

const (
	// Exclusive is a Mutex's hold: one owner at a time, reentrant.
	Exclusive Mode = iota
	// Semaphore is a Semaphore's hold: Op.Permits of Op.Capacity permits,
	// under the owner's own lease (see semaphore.go).
	Semaphore
)

// acquireCall is the script call of an acquire of op; its reply is
// {outcome, count or pttl, fence} (see acquisitionOf).
func (op Op) acquireCall() scriptCall {
	if op.Mode == Semaphore {
		return semAcquireCall(op)
	}
	return scriptCall{lua.Acquire, acquireKeys(op), acquireArgs(op)}
}

// releaseCall is the script call of a release of op that publishes
// releaseID when it frees the lock; its reply is a ReleaseResult.
func (op Op) releaseCall(releaseID string) scriptCall {
	if op.Mode == Semaphore {
		return semReleaseCall(op, releaseID)
	}
	return scriptCall{lua.Release, releaseKeys(op), releaseArgs(op, releaseID)}
}

// renewCall is the script call of a renewal of op; its reply is 1 when the
// owner still holds the lock here (its lease extended), 0 otherwise.
func (op Op) renewCall() scriptCall {
	if op.Mode == Semaphore {
		return semRenewCall(op)
	}
	return scriptCall{lua.Renew, []string{op.Key.Lock}, renewArgs(op)}
}

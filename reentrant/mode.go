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
	// Write is an RWMutex's write hold: the Exclusive hold at Key.Lock,
	// refused also while readers of other owners hold (Key.Readers) and
	// leaving the owner's mark (Key.WriterWaiting) when refused while it
	// waits (Op.Waiting).
	Write
	// Read is an RWMutex's read hold: shared by any number of owners, each
	// with its own lease, refused while another owner holds the write hold
	// or, for an owner not yet reading, while another owner's mark says a
	// writer waits.
	Read
	// Semaphore is a Semaphore's hold: Op.Permits of Op.Capacity permits,
	// under the owner's own lease (see semaphore.go).
	Semaphore
)

// acquireCall is the script call of an acquire of op; its reply is
// {outcome, count or pttl, fence} (see acquisitionOf).
func (op Op) acquireCall() scriptCall {
	switch op.Mode {
	case Read:
		k := op.Key
		return scriptCall{lua.ReadAcquire,
			[]string{k.Lock, k.Readers(), k.ReadLeases(), k.WriterWaiting(), k.ReadTombstone(op.Owner)},
			[]any{op.Owner, op.Lease.Milliseconds(), op.Count, op.Seq, flag(op.Reentry), flag(op.twice)}}
	case Write:
		k := op.Key
		return scriptCall{lua.Acquire,
			append(acquireKeys(op), k.Readers(), k.ReadLeases(), k.WriterWaiting()),
			acquireArgs(op)}
	case Semaphore:
		return semAcquireCall(op)
	}
	return scriptCall{lua.Acquire, acquireKeys(op), acquireArgs(op)}
}

// releaseCall is the script call of a release of op that publishes
// releaseID when it frees the lock; its reply is a ReleaseResult.
func (op Op) releaseCall(releaseID string) scriptCall {
	switch op.Mode {
	case Read:
		k := op.Key
		return scriptCall{lua.ReadRelease,
			[]string{k.Readers(), k.ReadLeases(), k.Channel, k.ReadTombstone(op.Owner)},
			[]any{op.Owner, op.Lease.Milliseconds(), op.Count, op.Seq, releaseID}}
	case Write:
		k := op.Key
		return scriptCall{lua.Release,
			append(releaseKeys(op), k.WriterWaiting(), k.ReadChannel()),
			releaseArgs(op, releaseID)}
	case Semaphore:
		return semReleaseCall(op, releaseID)
	}
	return scriptCall{lua.Release, releaseKeys(op), releaseArgs(op, releaseID)}
}

// renewCall is the script call of a renewal of op; its reply is 1 when the
// owner still holds the lock here (its lease extended), 0 otherwise.
func (op Op) renewCall() scriptCall {
	switch op.Mode {
	case Read:
		return scriptCall{lua.ReadRenew, []string{op.Key.Readers(), op.Key.ReadLeases()}, renewArgs(op)}
	case Semaphore:
		return semRenewCall(op)
	}
	return scriptCall{lua.Renew, []string{op.Key.Lock}, renewArgs(op)}
}

// WaitChannel returns the channel where the waiters for a hold of mode m
// on k listen: Key.ReadChannel for readers, Key.Channel for the others.
func (k Key) WaitChannel(m Mode) string {
	if m == Read {
		return k.ReadChannel()
	}
	return k.Channel
}

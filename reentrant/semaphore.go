package reentrant

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/relock-go/relock/lua"
)

// A semaphore on one node (Mode Semaphore) is two keys under the name's
// hash tag: a hash of OWNER = permits (and OWNER/seq, as a lock's hash
// has), and a sorted set of OWNER by the end of its lease in the server's
// time, so each holder's lease is its own. Every script drops the holders
// whose lease has ended before it looks, and an acquire of n permits is
// refused while the other live holders' permits plus n exceed the capacity:
// a node never counts more than the capacity. See lua/semaphore.lua.
//
// An Op of a Semaphore hold keeps the meaning of its fields: Count is the
// hold count (1 while the owner holds its permits, 0 to give them back),
// so undo, repair and renewal work as for a lock; Permits and Capacity say
// how many permits the hold is and of how many.

// NewSemaphoreKey returns the keys of the semaphore name under prefix
// (DefaultPrefix when empty): Lock is the hash of holders and their
// permits, Leases the sorted set of their leases, Channel announces each
// release; Tombstones as for a lock. They share the {NAME} hash tag with
// the lock of the same name but no key with it: a semaphore and a lock may
// share a name. Only the empty name is invalid.
func NewSemaphoreKey(prefix, name string) (Key, error) {
	k, err := NewKey(prefix, name)
	if err != nil {
		return Key{}, err
	}
	return k.Semaphore(), nil
}

// Semaphore returns the keys of the semaphore of the same name as the lock
// of k, as NewSemaphoreKey gives them; k itself when it is a semaphore's.
func (k Key) Semaphore() Key {
	if k.Leases != "" {
		return k
	}
	base := k.Permits()
	k.Lock, k.Leases, k.Channel, k.Tombstones = base, k.PermitLeases(), base+":released", base+":gone:"
	return k
}

// checkPermits checks the semaphore fields of op.
func (op Op) checkPermits() error {
	switch {
	case op.Key.Leases == "":
		return fmt.Errorf("%w: the semaphore's leases key is empty", ErrInvalidArgument)
	case op.Capacity < 1:
		return fmt.Errorf("%w: capacity %d is below 1", ErrInvalidArgument, op.Capacity)
	case op.Permits < 1 || op.Permits > op.Capacity:
		return fmt.Errorf("%w: %d permits is outside [1, %d]", ErrInvalidArgument, op.Permits, op.Capacity)
	}
	return nil
}

// semAcquireCall, semReleaseCall and semRenewCall are a Semaphore hold's
// script calls; their replies have the shapes of a lock's.
func semAcquireCall(op Op) scriptCall {
	return scriptCall{lua.SemAcquire, []string{op.Key.Lock, op.Key.Leases, op.Key.Tombstone(op.Owner)},
		[]any{op.Owner, op.Lease.Milliseconds(), op.Count, op.Seq, flag(op.Reentry), op.Permits, op.Capacity, flag(op.twice)}}
}

func semReleaseCall(op Op, releaseID string) scriptCall {
	return scriptCall{lua.SemRelease, []string{op.Key.Lock, op.Key.Leases, op.Key.Channel, op.Key.Tombstone(op.Owner)},
		[]any{op.Owner, op.Lease.Milliseconds(), op.Count, op.Seq, permitsReleaseID(releaseID, op.Quorum)}}
}

// permitsReleaseID is the message announcing permits given back: the
// release id, asking each waiter's broker to wake no one before copies of
// it came from that many nodes (or its grace passed; see pubsub's "ID *Q").
// A semaphore's acquisition may need more nodes than a majority, and a
// waiter woken before they all gave the permits back would be refused by
// the others and sleep on, the later copies being dropped as duplicates.
func permitsReleaseID(releaseID string, copies int) string {
	if copies > 1 {
		return releaseID + " *" + strconv.Itoa(copies)
	}
	return releaseID
}

func semRenewCall(op Op) scriptCall {
	return scriptCall{lua.SemRenew, []string{op.Key.Lock, op.Key.Leases}, renewArgs(op)}
}

// SemaphoreHolder is one live holder of a semaphore on one node.
type SemaphoreHolder struct {
	Permits int64         // the permits it holds
	TTL     time.Duration // what is left of its lease there
}

// SemaphoreState is a semaphore's state on one node.
type SemaphoreState struct {
	// Holders are its holders whose lease has not ended, by owner.
	Holders map[string]SemaphoreHolder
	// Capacity is the capacity its holders gave (see CapacityError); 0
	// when none is recorded, as when no one holds permits.
	Capacity int64
}

// CheckCapacity returns a *CapacityError when the holders here gave
// another capacity than asked, nil otherwise.
func (s SemaphoreState) CheckCapacity(key Key, asked int64) error {
	if s.Capacity != 0 && s.Capacity != asked {
		return &CapacityError{Key: key.Lock, Capacity: s.Capacity, Asked: asked}
	}
	return nil
}

// InspectSemaphore reads the live holders of the semaphore key (made by
// NewSemaphoreKey) on this node, and the capacity they gave, without
// changing anything: holders whose lease has ended are left out.
func (n *Node) InspectSemaphore(ctx context.Context, key Key) (SemaphoreState, error) {
	reply, err := n.calls.run(ctx, lua.SemInspect, []string{key.Lock, key.Leases}).Slice()
	if err != nil {
		return SemaphoreState{}, n.scriptError(key, err)
	}
	var list []any
	if len(reply) == 2 {
		list, _ = reply[0].([]any)
	}
	holds, err := leasedHolds(list)
	if err != nil || len(reply) != 2 {
		return SemaphoreState{}, fmt.Errorf("relock: inspect semaphore: unexpected reply %v", reply)
	}
	state := SemaphoreState{Holders: make(map[string]SemaphoreHolder, len(holds)), Capacity: asInt(reply[1])}
	for owner, h := range holds {
		state.Holders[owner] = SemaphoreHolder{Permits: h.Count, TTL: h.TTL}
	}
	return state, nil
}

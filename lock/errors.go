package lock

import (
	"errors"
	"fmt"
	"strings"

	"github.com/relock-go/relock/reentrant"
)

var (
	// ErrNotHeld is returned by Unlock when the handle holds nothing: it never
	// locked, or it already unlocked as many times as it locked. Nothing is
	// sent to Redis.
	ErrNotHeld = errors.New("relock: lock not held")
	// ErrLost is returned when the handle believed it held the lock but could
	// no longer prove it: the lease ran out without renewal, or a quorum of
	// nodes answered that the lock is not ours (for instance after a
	// ForceUnlock).
	ErrLost = errors.New("relock: lock lost")
	// ErrNoQuorum is matched by a *QuorumError: fewer than a majority of the
	// nodes agreed, or they agreed too late for the lease to still be valid.
	ErrNoQuorum = errors.New("relock: quorum not reached")
	// ErrNodeTimeout is a node's cause in a QuorumError when it did not
	// answer within Options.NodeTimeout. It is deliberately not
	// context.DeadlineExceeded: only the caller's own ctx produces that.
	ErrNodeTimeout = errors.New("relock: node did not answer in time")
	// ErrClosed is returned by every operation after Client.Close.
	ErrClosed = errors.New("relock: client closed")
	// ErrUpgrade is returned by RWMutex.Lock and TryLock when the handle
	// holds read holds and no write hold: a reader may not become a writer
	// (two readers waiting to write would wait for each other forever).
	// Nothing is sent to Redis; release the read holds first.
	ErrUpgrade = errors.New("relock: a read hold cannot be upgraded to a write hold")
	// ErrInvalidArgument is returned, wrapped with the option or argument at
	// fault and why, for bad input. Nothing is sent to Redis.
	ErrInvalidArgument = reentrant.ErrInvalidArgument
	// ErrNotReplicated is a node's cause in a QuorumError, in the replicated
	// mode (Options.Replicas), when a write ran on the node but fewer of its
	// replicas than Replicas acknowledged it within ReplicaTimeout.
	ErrNotReplicated = reentrant.ErrNotReplicated
	// ErrWrongType is matched by a *reentrant.WrongTypeError: the lock's key
	// holds data someone else stored. relock leaves it untouched.
	ErrWrongType = reentrant.ErrWrongType
	// ErrCapacityMismatch is a node's cause in a QuorumError, matched by a
	// *reentrant.CapacityError, when a Semaphore is acquired with another
	// capacity than its holders there gave (NewSemaphore's k): every user
	// of a name must give the same. Once so many nodes refuse it that no
	// quorum is left, the acquisition fails at once, without waiting, and
	// leaves nothing behind.
	ErrCapacityMismatch = reentrant.ErrCapacityMismatch
)

// NodeError is one node's failure within a quorum operation.
type NodeError struct {
	Node int    // index of the node in Options.Nodes
	Addr string // the node's address, when known
	Err  error  // what went wrong on that node
}

// Error names the node, by index and address, and what went wrong there.
func (e NodeError) Error() string {
	return fmt.Sprintf("node %d (%s): %v", e.Node, e.Addr, e.Err)
}

// Unwrap returns the node's cause, for errors.Is and errors.As.
func (e NodeError) Unwrap() error { return e.Err }

// QuorumError reports a quorum operation that fell short, with each failed
// node's cause. errors.Is(err, ErrNoQuorum) is true, and so is errors.Is for
// each node's cause.
type QuorumError struct {
	Op     string      // "acquire", "release", "renew", "inspect", ...
	Needed int         // the quorum: len(nodes)/2+1
	Agreed int         // how many nodes agreed
	Late   bool        // a quorum agreed, but after the lease's validity ran out
	Nodes  []NodeError // the nodes that failed, in node order
}

// Error says what fell short and by how much, and each failed node's cause.
func (e *QuorumError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "relock: %s: quorum not reached: %d of %d needed", e.Op, e.Agreed, e.Needed)
	if e.Late {
		b.WriteString(" (agreed after the lease's validity ran out)")
	}
	for _, n := range e.Nodes {
		b.WriteString("; ")
		b.WriteString(n.Error())
	}
	return b.String()
}

// Unwrap returns ErrNoQuorum followed by every node's error.
func (e *QuorumError) Unwrap() []error {
	errs := make([]error, 0, len(e.Nodes)+1)
	errs = append(errs, ErrNoQuorum)
	for _, n := range e.Nodes {
		errs = append(errs, n)
	}
	return errs
}

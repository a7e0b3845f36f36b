package lock

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/relock-go/relock/reentrant"
)

// NoExpiry is the TTL of a lock whose holder key has no expiry: someone
// other than relock wrote it, and it stays until deleted.
const NoExpiry time.Duration = -1

// NodeState is one node's view of a lock.
type NodeState struct {
	Node int            // index in Options.Nodes
	Addr string         // the node's address
	Info reentrant.Info // holders, counts, remaining lease, waiters
	Err  error          // the node could not be read
	// TieBreaker marks the name's tie-breaker node, which keeps the lock's
	// wait queue (see the README's "How it works").
	TieBreaker bool
}

// Inspect reads the lock named name on every node, without changing it.
// It waits for each node as long as Unlock does, and for every node alike
// (not cut short once a quorum answered): a node it reports unreachable
// did not answer for a tenth of the lease, or 4 × a fixed NodeTimeout. A
// node whose last call timed out is waited for only its usual round trip
// until it answers again, so that reading many locks past it stays quick.
func (c *Client) Inspect(ctx context.Context, name string) ([]NodeState, error) {
	return c.inspect(ctx, name, kindSurvey, (*reentrant.Node).Inspect)
}

// inspect reads the lock named name on every node with read, waiting as
// kind says: all of it (Node.Inspect), or its holds alone
// (Node.InspectHolds).
func (c *Client) inspect(ctx context.Context, name string, kind callKind, read func(*reentrant.Node, context.Context, reentrant.Key) (reentrant.Info, error)) ([]NodeState, error) {
	key, err := c.keyFor(name)
	if err != nil {
		return nil, err
	}
	if err := c.begin(); err != nil {
		return nil, err
	}
	defer c.end()
	if err := c.ident.check(ctx); err != nil {
		return nil, err
	}
	replies := fanOutFor(c, ctx, kind, c.opts.Lease, func(ctx context.Context, n *reentrant.Node) (reentrant.Info, error) {
		return read(n, ctx, key)
	})
	states, tie := make([]NodeState, len(replies)), c.tieBreaker(key)
	for i, r := range replies {
		states[i] = NodeState{Node: i, Addr: c.addrs[i], Info: r.value, Err: r.err, TieBreaker: i == tie}
	}
	return states, nil
}

// IsLocked reports whether one owner holds the lock named name on a quorum
// of the nodes (nodes held by different owners do not add up). It returns a
// *QuorumError when fewer than a quorum answered.
func (c *Client) IsLocked(ctx context.Context, name string) (bool, error) {
	_, held, err := c.readQuorum(ctx, name)
	return held, err
}

// TTL returns the remaining lease of the lock named name as a quorum sees it:
// the quorum-th longest lease among the nodes where the owner that holds it
// on a quorum does. It returns 0 when no owner holds it on a quorum, and
// NoExpiry when a quorum's copies never expire (a key someone else wrote).
func (c *Client) TTL(ctx context.Context, name string) (time.Duration, error) {
	ttl, _, err := c.readQuorum(ctx, name)
	return ttl, err
}

// readQuorum reads the lock's holds on every node (not who waits: IsLocked
// and TTL may be polled): held when one owner has it on a quorum, with the
// lease a quorum of that owner's copies still covers.
func (c *Client) readQuorum(ctx context.Context, name string) (time.Duration, bool, error) {
	states, err := c.inspect(ctx, name, kindAcquire, (*reentrant.Node).InspectHolds)
	if err != nil {
		return 0, false, err
	}
	ttls := make(map[string][]time.Duration) // owner → the leases of its copies
	answered := 0
	var failed []NodeError
	for _, s := range states {
		if s.Err != nil {
			failed = append(failed, NodeError{Node: s.Node, Addr: s.Addr, Err: s.Err})
			continue
		}
		answered++
		ttl := s.Info.TTL
		if ttl == NoExpiry {
			ttl = math.MaxInt64 // sorts above every lease
		}
		for owner := range s.Info.Holders {
			ttls[owner] = append(ttls[owner], ttl)
		}
	}
	if answered < c.quorum {
		return 0, false, &QuorumError{Op: "inspect", Needed: c.quorum, Agreed: answered, Nodes: failed}
	}
	for _, leases := range ttls {
		if len(leases) < c.quorum {
			continue
		}
		slices.Sort(leases)
		slices.Reverse(leases)
		ttl := leases[c.quorum-1]
		if ttl == math.MaxInt64 {
			return NoExpiry, true, nil
		}
		return max(ttl, 0), true, nil
	}
	return 0, false, nil
}

// ForceUnlock frees the name on every node of every hold on it, whoever
// holds it: a Mutex's or FairMutex's hold, an RWMutex's writer and its
// readers, and the holders of the Semaphore of the same name; it wakes the
// waiters of each. An evicted holder finds out at its next renewal, release
// or Unlock (ErrLost); a late operation of its, still in the network, is
// refused as after a release. It is meant for operators; it returns a
// *QuorumError when fewer than a quorum confirmed.
func (c *Client) ForceUnlock(ctx context.Context, name string) error {
	_, err := c.force(ctx, name, "force-unlock", func(ctx context.Context, n *reentrant.Node, key reentrant.Key, id string) (bool, error) {
		return n.ForceUnlock(ctx, key, id, len(c.nodes))
	})
	return err
}

// Evict frees the name on every node of the holds of one owner alone (an
// owner id as Mutex.Owner, Permit.Owner or Inspect give it), of every kind
// ForceUnlock frees, and wakes the waiters of what it freed; the other
// owners' holds stay. It is for a stuck holder among live ones: one
// Semaphore holder or RWMutex reader whose process hangs with a long lease.
// It reports whether owner held anything on a node that answered (false
// for an owner id with nothing of name, as after a typo); the evicted
// holder finds out as after ForceUnlock. It returns an error wrapping
// ErrInvalidArgument for an empty name or owner, and a *QuorumError when
// fewer than a quorum confirmed.
func (c *Client) Evict(ctx context.Context, name, owner string) (bool, error) {
	if owner == "" {
		return false, fmt.Errorf("%w: the owner to evict is empty", ErrInvalidArgument)
	}
	return c.force(ctx, name, "evict", func(ctx context.Context, n *reentrant.Node, key reentrant.Key, id string) (bool, error) {
		return n.Evict(ctx, key, owner, id, len(c.nodes))
	})
}

// force runs call, an operator's release of op, on every node, and reports
// whether any node freed something.
func (c *Client) force(ctx context.Context, name, op string, call func(context.Context, *reentrant.Node, reentrant.Key, string) (bool, error)) (bool, error) {
	key, err := c.keyFor(name)
	if err != nil {
		return false, err
	}
	if err := c.begin(); err != nil {
		return false, err
	}
	defer c.end()
	if err := c.ident.check(ctx); err != nil {
		return false, err
	}
	id := "force/" + c.id + "/" + time.Now().Format(time.RFC3339Nano)
	replies := fanOut(c, ctx, func(ctx context.Context, n *reentrant.Node) (bool, error) {
		return call(ctx, n, key, id)
	})
	failed := failures(c, replies)
	if len(replies)-len(failed) < c.quorum {
		return false, &QuorumError{Op: op, Needed: c.quorum, Agreed: len(replies) - len(failed), Nodes: failed}
	}
	return slices.ContainsFunc(replies, func(r reply[bool]) bool { return r.err == nil && r.value }), nil
}

func (c *Client) keyFor(name string) (reentrant.Key, error) {
	return reentrant.NewKey(c.opts.KeyPrefix, name)
}

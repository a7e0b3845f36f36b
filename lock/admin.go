package lock

import (
	"context"
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
	Info reentrant.Info // holders, counts, remaining lease
	Err  error          // the node could not be read
}

// Inspect reads the lock named name on every node, without changing it.
func (c *Client) Inspect(ctx context.Context, name string) ([]NodeState, error) {
	key, err := c.keyFor(name)
	if err != nil {
		return nil, err
	}
	replies := fanOut(c, ctx, func(ctx context.Context, n *reentrant.Node) (reentrant.Info, error) {
		return n.Inspect(ctx, key)
	})
	states := make([]NodeState, len(replies))
	for i, r := range replies {
		states[i] = NodeState{Node: i, Addr: c.addrs[i], Info: r.value, Err: r.err}
	}
	return states, nil
}

// IsLocked reports whether some owner holds the lock named name on a quorum
// of the nodes. It returns a *QuorumError when fewer than a quorum answered.
func (c *Client) IsLocked(ctx context.Context, name string) (bool, error) {
	_, held, err := c.readQuorum(ctx, name)
	return held, err
}

// TTL returns the remaining lease of the lock named name as a quorum sees it
// (the quorum-th longest of the nodes' leases), or 0 when it is free.
func (c *Client) TTL(ctx context.Context, name string) (time.Duration, error) {
	ttl, _, err := c.readQuorum(ctx, name)
	return ttl, err
}

// readQuorum reads the lock on every node: held when a quorum has holders,
// with the lease a quorum still covers.
func (c *Client) readQuorum(ctx context.Context, name string) (time.Duration, bool, error) {
	if c.isClosed() {
		return 0, false, ErrClosed
	}
	states, err := c.Inspect(ctx, name)
	if err != nil {
		return 0, false, err
	}
	var ttls []time.Duration
	answered := 0
	var failed []NodeError
	for _, s := range states {
		if s.Err != nil {
			failed = append(failed, NodeError{Node: s.Node, Addr: s.Addr, Err: s.Err})
			continue
		}
		answered++
		if len(s.Info.Holders) > 0 {
			ttls = append(ttls, s.Info.TTL)
		}
	}
	if answered < c.quorum {
		return 0, false, &QuorumError{Op: "inspect", Needed: c.quorum, Agreed: answered, Nodes: failed}
	}
	if len(ttls) < c.quorum {
		return 0, false, nil
	}
	slices.Sort(ttls)
	slices.Reverse(ttls)
	return max(ttls[c.quorum-1], 0), true, nil
}

// ForceUnlock deletes the lock named name on every node, whoever holds it,
// and wakes its waiters. The holder finds out at its next renewal or
// Unlock (ErrLost). It is meant for operators; it returns a *QuorumError
// when fewer than a quorum confirmed.
func (c *Client) ForceUnlock(ctx context.Context, name string) error {
	key, err := c.keyFor(name)
	if err != nil {
		return err
	}
	id := "force/" + c.id + "/" + time.Now().Format(time.RFC3339Nano)
	replies := fanOut(c, ctx, func(ctx context.Context, n *reentrant.Node) (bool, error) {
		return n.ForceUnlock(ctx, key, id)
	})
	failed := failures(c, replies)
	if len(replies)-len(failed) < c.quorum {
		return &QuorumError{Op: "force-unlock", Needed: c.quorum, Agreed: len(replies) - len(failed), Nodes: failed}
	}
	return nil
}

func (c *Client) keyFor(name string) (reentrant.Key, error) {
	if c.isClosed() {
		return reentrant.Key{}, ErrClosed
	}
	return reentrant.NewKey(c.opts.KeyPrefix, name)
}

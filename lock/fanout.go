package lock

import (
	"context"
	"errors"
	"time"

	"github.com/relock-go/relock/reentrant"
)

// reply is one node's answer within a fan-out.
type reply[T any] struct {
	node  int
	value T
	err   error
}

// fanOut runs call on every node in parallel and collects the answers. Each
// call is bounded by NodeTimeout here, not by trusting the go-redis client's
// settings: a node that has not answered when the timeout passes (or when ctx
// ends) gets ErrNodeTimeout (or ctx's error) and its call is left to finish
// in the background. replies[i] is node i's answer.
func fanOut[T any](c *Client, ctx context.Context, call func(context.Context, *reentrant.Node) (T, error)) []reply[T] {
	n := len(c.nodes)
	done := make(chan reply[T], n) // buffered: a late call never blocks
	callCtx, cancel := context.WithTimeout(ctx, c.opts.NodeTimeout)
	for i, node := range c.nodes {
		c.inflight.Add(1)
		go func() {
			defer c.inflight.Done()
			v, err := call(callCtx, node)
			done <- reply[T]{node: i, value: v, err: err}
		}()
	}

	replies := make([]reply[T], n)
	answered := make([]bool, n)
	timer := time.NewTimer(c.opts.NodeTimeout)
	defer timer.Stop()
collect:
	for got := 0; got < n; got++ {
		select {
		case r := <-done:
			replies[r.node], answered[r.node] = r, true
		case <-timer.C:
			break collect
		case <-ctx.Done():
			break collect
		}
	}
	cancel()
	for i := range replies {
		replies[i].node = i
		switch {
		case !answered[i] && ctx.Err() != nil:
			replies[i].err = ctx.Err()
		case !answered[i]:
			replies[i].err = ErrNodeTimeout
		case replies[i].err != nil && ctx.Err() == nil && errors.Is(replies[i].err, context.DeadlineExceeded):
			// The per-node deadline, not the caller's.
			replies[i].err = ErrNodeTimeout
		}
	}
	return replies
}

// failures lists the nodes whose answer carries an error, for a QuorumError.
func failures[T any](c *Client, replies []reply[T]) []NodeError {
	var out []NodeError
	for _, r := range replies {
		if r.err != nil {
			out = append(out, NodeError{Node: r.node, Addr: c.addrs[r.node], Err: r.err})
		}
	}
	return out
}

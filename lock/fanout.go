package lock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/relock-go/relock/reentrant"
)

// reply is one node's answer within a fan-out.
type reply[T any] struct {
	node  int
	value T
	err   error
	// late is set when the node had not answered when fanOut returned: its
	// call goes on in the background, and late.done closes when it ends.
	late *outcome[T]
}

// outcome is the eventual result of one node call.
type outcome[T any] struct {
	done  chan struct{}
	value T
	err   error
}

// fanOut runs call on every node in parallel and collects the answers. Each
// call is bounded by NodeTimeout here, not by trusting the go-redis client's
// settings: a node that has not answered when the timeout passes (or when ctx
// ends) gets ErrNodeTimeout (or ctx's error) and its call is left to finish
// in the background, observable through reply.late. replies[i] is node i's
// answer.
func fanOut[T any](c *Client, ctx context.Context, call func(context.Context, *reentrant.Node) (T, error)) []reply[T] {
	n := len(c.nodes)
	outcomes := make([]*outcome[T], n)
	finished := make(chan int, n) // buffered: a late call never blocks
	callCtx, cancel := context.WithTimeout(ctx, c.opts.NodeTimeout)
	for i, node := range c.nodes {
		o := &outcome[T]{done: make(chan struct{})}
		outcomes[i] = o
		c.inflight.Add(1)
		go func() {
			defer c.inflight.Done()
			o.value, o.err = call(callCtx, node)
			close(o.done)
			finished <- i
		}()
	}

	answered := make([]bool, n)
	timer := time.NewTimer(c.opts.NodeTimeout)
	defer timer.Stop()
collect:
	for got := 0; got < n; got++ {
		select {
		case i := <-finished:
			answered[i] = true
		case <-timer.C:
			break collect
		case <-ctx.Done():
			break collect
		}
	}
	cancel()

	replies := make([]reply[T], n)
	for i, o := range outcomes {
		r := &replies[i]
		r.node = i
		switch {
		case !answered[i]:
			r.late = o
			r.err = ErrNodeTimeout
			if ctx.Err() != nil {
				r.err = ctx.Err()
			}
		default:
			r.value, r.err = o.value, o.err
			if ctx.Err() == nil {
				r.err = asNodeTimeout(r.err)
			}
		}
	}
	return replies
}

// asNodeTimeout reports a node call that ran out of time as ErrNodeTimeout,
// whichever deadline caught it first: the per-node ctx (never reported as
// context.DeadlineExceeded, which belongs to the caller's ctx) or the
// client's socket timeout (kept as the cause).
func asNodeTimeout(err error) error {
	var netErr net.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return ErrNodeTimeout
	case errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("%w: %w", ErrNodeTimeout, err)
	}
	return err
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

package lock

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/relock-go/relock/reentrant"
)

// eachNode runs call on the given nodes in parallel and returns the nodes
// whose call failed.
func (c *Client) eachNode(ctx context.Context, nodes []int, call func(context.Context, int) error) []int {
	var (
		mu     sync.Mutex
		failed []int
		wg     sync.WaitGroup
	)
	for _, node := range nodes {
		wg.Add(1)
		c.inflight.Add(1)
		go func() {
			defer wg.Done()
			defer c.inflight.Done()
			if err := call(ctx, node); err != nil {
				mu.Lock()
				failed = append(failed, node)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failed
}

// retryUntil calls call on each node until it succeeds there, the deadline
// passes, or ctx ends.
func (c *Client) retryUntil(ctx context.Context, nodes []int, deadline time.Time, call func(context.Context, int) error) {
	c.everyBackoff(ctx, deadline, 10*time.Millisecond, 500*time.Millisecond, func() bool {
		nodes = c.eachNode(ctx, nodes, call)
		return len(nodes) == 0
	})
	if len(nodes) > 0 {
		c.opts.Logger.Debug("relock: gave up a background clean-up; the nodes' lease ends it", "nodes", nodes)
	}
}

// everyBackoff runs round after a jittered delay that doubles from first up
// to most, again and again, until round reports it is done, the deadline
// passes, or ctx ends.
func (c *Client) everyBackoff(ctx context.Context, deadline time.Time, first, most time.Duration, round func() (done bool)) {
	for backoff := first; time.Now().Before(deadline); backoff = min(2*backoff, most) {
		t := time.NewTimer(min(jitter(backoff), time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if round() {
			return
		}
	}
}

// releaseID is the payload published when op releases a lock: the same on
// every node for one release, so waiters count the N copies once.
func releaseID(op reentrant.Op) string {
	return op.Owner + "/" + strconv.FormatInt(op.Seq, 10)
}

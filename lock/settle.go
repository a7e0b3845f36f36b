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
// passes, or ctx ends, backing off from 10ms to 500ms between rounds.
func (c *Client) retryUntil(ctx context.Context, nodes []int, deadline time.Time, call func(context.Context, int) error) {
	backoff := 10 * time.Millisecond
	for len(nodes) > 0 && time.Now().Before(deadline) {
		t := time.NewTimer(jitter(backoff))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		nodes = c.eachNode(ctx, nodes, call)
		backoff = min(2*backoff, 500*time.Millisecond)
	}
	if len(nodes) > 0 {
		c.opts.Logger.Debug("relock: gave up a background clean-up; the nodes' lease ends it", "nodes", nodes)
	}
}

// releaseID is the payload published when op releases a lock: the same on
// every node for one release, so waiters count the N copies once.
func releaseID(op reentrant.Op) string {
	return op.Owner + "/" + strconv.FormatInt(op.Seq, 10)
}

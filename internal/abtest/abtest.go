// Package abtest holds switches for A/B benchmarks of relock's own designs.
// Not for production use: the benchmark sets them before making Clients.
package abtest

import "sync/atomic"

// SplitVotes, when set before lock.New, makes the Client contend as relock
// did before the tie-breaker: every failed attempt undoes at once and every
// woken waiter retries on all nodes.
var SplitVotes atomic.Bool

// WaitQueue, when set before lock.New, makes the Client wait in the
// tie-breaker's wait queue (see lock/contend.go, 4): one waiter across all
// processes wakes per release. Experimental and off by default: under the
// chaos suite's faults on a loaded machine it sometimes collapsed (waiters
// time out while the lock changes hands a few times in 30 s). The same
// collapse comes with it off under heavier load (every acquire times out on
// every node), so the queue is not its cause; an A/B at moderate load is
// still owed before it is turned on. A FairMutex always waits in the queue.
var WaitQueue atomic.Bool

// Package abtest holds switches for A/B benchmarks of relock's own designs.
// Not for production use: the benchmark sets them before making Clients.
package abtest

import "sync/atomic"

// SplitVotes, when set before lock.New, makes the Client contend as relock
// did before the tie-breaker: every failed attempt undoes at once and every
// woken waiter retries on all nodes.
var SplitVotes atomic.Bool

// NoWaitQueue, when set before lock.New, makes the Client's Mutexes wait as
// they did before the tie-breaker's wait queue (see lock/contend.go, 4):
// every node announces a release, one waiter per process wakes and probes
// the tie-breaker. The queue, on by default, wakes one waiter across all
// processes per release. A FairMutex always waits in the queue.
var NoWaitQueue atomic.Bool

// PipelinesPerNode, when above 0 as lock.New runs, sets how many pipelined
// round trips each of the Client's nodes keeps on the wire at once, instead
// of the node's share of the Client's four.
var PipelinesPerNode atomic.Int32

// Package abtest holds switches for A/B benchmarks of relock's own designs.
// Not for production use: the benchmark sets them before making Clients.
package abtest

import "sync/atomic"

// SplitVotes, when set before lock.New, makes the Client contend as relock
// did before the tie-breaker: every failed attempt undoes at once and every
// woken waiter retries on all nodes.
var SplitVotes atomic.Bool

// NoQueue, when set before lock.New, makes the Client contend with the
// tie-breaker but without its wait queue: every node announces a release
// for any waiter, and one waiter per process wakes and probes.
var NoQueue atomic.Bool

// Package lock is relock's public API: reentrant distributed locks over one
// or more independent Redis masters.
//
// A Client talks to N masters (N=1 for a single Redis, 3 or 5 for a Redlock
// quorum); a Mutex is one owner of one named lock. Lock blocks until the lock
// is free, woken by the holder's release rather than by polling; the same
// handle can lock again without blocking (it is reentrant) and must unlock as
// many times; without an explicit lease, a watchdog renews the lock every
// third of its lease until Unlock, and Lost tells the holder if it could not.
//
// Every operation goes to all nodes in parallel, each call bounded by
// Options.NodeTimeout, and counts only when a majority agree within the
// lease's validity (lease − elapsed − clock drift). An acquire that falls
// short is undone on every node that may have taken it.
//
// For a master with replicas (a Sentinel group) in place of independent
// masters, Options.Replicas turns on the replicated mode: each write counts
// on a node only once that many replicas acknowledged it (WAIT).
package lock

package lock

import "time"

// quorum is the number of nodes that must agree among n: a strict majority.
func quorum(n int) int { return n/2 + 1 }

// drift is the allowance for clock drift over a lease: Redlock's
// lease × factor + 2 ms.
func drift(lease time.Duration, factor float64) time.Duration {
	return time.Duration(float64(lease)*factor) + driftFloor
}

// validity is how long a lock taken with lease stays safely ours after an
// attempt that took elapsed: lease − elapsed − drift. Not positive means the
// attempt agreed too late to be used.
func validity(lease, elapsed time.Duration, factor float64) time.Duration {
	return lease - elapsed - drift(lease, factor)
}

package lock

import "testing"

func TestSemaphoreQuorumKnownValues(t *testing.T) {
	for _, c := range []struct{ nodes, k, want int }{
		{1, 1, 1}, {1, 5, 1},
		{3, 1, 2}, {3, 2, 3}, {3, 3, 3}, {3, 100, 3},
		{5, 1, 3}, {5, 2, 4}, {5, 3, 4}, {5, 4, 5},
		{7, 1, 4}, {7, 2, 5}, {7, 3, 6},
		{0, 1, 0}, {3, 0, 0}, {-1, 2, 0}, {3, -2, 0},
	} {
		if got := SemaphoreQuorum(c.nodes, c.k); got != c.want {
			t.Errorf("SemaphoreQuorum(%d, %d) = %d; want %d", c.nodes, c.k, got, c.want)
		}
	}
}

func TestSemaphoreQuorumIsTheMajorityForOnePermit(t *testing.T) {
	for n := 1; n <= 15; n++ {
		if SemaphoreQuorum(n, 1) != quorum(n) {
			t.Errorf("nodes %d: SemaphoreQuorum(n, 1) = %d, quorum(n) = %d", n, SemaphoreQuorum(n, 1), quorum(n))
		}
	}
}

// TestSemaphoreQuorumIsTheSmallestThatForcesASharedNode checks the
// derivation by brute force: with q, any k+1 acquisitions (each a set of q
// nodes) share a node; with q−1, some k+1 acquisitions share none.
func TestSemaphoreQuorumIsTheSmallestThatForcesASharedNode(t *testing.T) {
	for n := 1; n <= 7; n++ {
		for k := 1; k <= 6; k++ {
			q := SemaphoreQuorum(n, k)
			if q < 1 || q > n {
				t.Fatalf("SemaphoreQuorum(%d, %d) = %d, outside [1, %d]", n, k, q, n)
			}
			if !alwaysShare(n, q, k+1) {
				t.Errorf("nodes %d k %d: %d acquisitions of quorum %d need not share a node", n, k, k+1, q)
			}
			if q > 1 && alwaysShare(n, q-1, k+1) {
				t.Errorf("nodes %d k %d: quorum %d is not the smallest (%d suffices)", n, k, q, q-1)
			}
		}
	}
	if SemaphoreQuorum(3, 1<<62) != 3 || SemaphoreQuorum(1<<20, 1<<62) != 1<<20 {
		t.Error("a huge capacity must ask every node")
	}
}

// alwaysShare reports whether every choice of m subsets of size q of n
// nodes has a node common to all of them (with repetition allowed).
func alwaysShare(n, q, m int) bool {
	var subsets []uint
	for s := uint(0); s < 1<<n; s++ {
		if popcount(s) == q {
			subsets = append(subsets, s)
		}
	}
	var rec func(depth int, from int, inter uint) bool
	rec = func(depth, from int, inter uint) bool {
		if inter == 0 {
			return false
		}
		if depth == m {
			return true
		}
		for i := from; i < len(subsets); i++ {
			if !rec(depth+1, i, inter&subsets[i]) {
				return false
			}
		}
		return true
	}
	return rec(0, 0, 1<<n-1)
}

func popcount(s uint) int {
	c := 0
	for ; s != 0; s &= s - 1 {
		c++
	}
	return c
}

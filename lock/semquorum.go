package lock

// SemaphoreQuorum returns how many of nodes nodes must grant an acquisition
// of a semaphore of capacity permits (k) so that no more than k permits are
// ever held at once across the nodes:
//
//	q = ⌊nodes·k / (k+1)⌋ + 1
//
// Why a majority is not enough. Each node refuses an acquisition that
// would take its own count of live permits above k, but with k > 1 a
// majority of nodes does not keep the count: with k = 2 on 3 nodes, three
// holders can win {A,B}, {B,C} and {A,C}; every node then sees 2 ≤ k holders
// while 3 > k hold permits.
//
// The derivation. An acquisition granted by q nodes misses nodes−q of
// them. Take any k+1 acquisitions that are valid at once: together they
// miss at most (k+1)(nodes−q) nodes, so if (k+1)(nodes−q) < nodes some node
// granted all of them, and held all of them at once (a node keeps a grant
// for at least the lease its holder counts validity in). The smallest q
// with that property is the one above: nodes−q < nodes/(k+1) exactly when
// q > nodes·k/(k+1). For k = 1 it is the majority ⌊nodes/2⌋+1; for k = 2 it
// is 3 of 3, 4 of 5; as k grows it tends to every node.
//
// Acquisitions of n > 1 permits. Suppose permits above k were held at once.
// Take a smallest set S of those holds whose permits add up to more than
// k. Every hold has at least one permit, so if S had k+2 members, dropping
// any one would leave k+1 members with at least k+1 permits: S was not
// smallest. So S has at most k+1 members, some node granted all of them,
// and that node counted more than k live permits: it never does. Hence
// k+1 acquisitions sharing a node is enough, whatever their sizes.
//
// What it costs. An acquisition needs q nodes, so only nodes−q of them may
// be down or unreachable (nodes−q < nodes/(k+1)): with k+1 ≥ nodes, every
// node must answer. A release, a renewal and a repair use the same q. The
// result is never above nodes; nodes or permits below 1 give 0 (no quorum).
func SemaphoreQuorum(nodes, permits int) int {
	if nodes < 1 || permits < 1 {
		return 0
	}
	// ⌊nodes·k/(k+1)⌋ without overflow for any int k: nodes − ⌈nodes/(k+1)⌉.
	k1 := uint64(permits) + 1
	miss := (uint64(nodes) + k1 - 1) / k1 // ⌈nodes/(k+1)⌉
	return nodes - int(miss) + 1
}

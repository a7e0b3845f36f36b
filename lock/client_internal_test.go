package lock

import "testing"

// A Client's four pipelines are shared among its nodes, one at least each.
func TestPipelinesPerNode(t *testing.T) {
	for nodes, want := range map[int]int{1: 4, 2: 2, 3: 1, 4: 1, 5: 1, 7: 1} {
		if got := pipelinesPerNode(nodes); got != want {
			t.Errorf("pipelinesPerNode(%d) = %d; want %d", nodes, got, want)
		}
	}
}

package lock

import "testing"

func TestNodeSetHoldsWhatItWasGiven(t *testing.T) {
	var s nodeSet
	if s.has(0) || s.has(63) {
		t.Fatal("an empty set holds nodes below the 64th")
	}
	s = s.with(2).with(63)
	for i, want := range map[int]bool{0: false, 1: false, 2: true, 3: false, 63: true} {
		if s.has(i) != want {
			t.Errorf("has(%d) = %v, want %v", i, s.has(i), want)
		}
	}
	s = s.without(2)
	if s.has(2) || !s.has(63) {
		t.Errorf("without(2) took the wrong node: %b", s)
	}
	// Past the 64th node a set always holds the node: it can only err
	// towards leaving a tombstone.
	if !nodeSet(0).has(64) || !nodeSet(0).without(70).has(70) || nodeSet(0).with(64) != 0 {
		t.Error("nodes past the 64th must always be in the set and never change it")
	}
}

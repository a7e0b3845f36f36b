package lock

import (
	"errors"
	"slices"
	"testing"
)

func TestLockOrderSortsAndDropsRepeats(t *testing.T) {
	given := []string{"b", "a", "c", "a", "b"}
	order, err := lockOrder(given)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c"}; !slices.Equal(order, want) {
		t.Errorf("order %q, want %q", order, want)
	}
	if want := []string{"b", "a", "c", "a", "b"}; !slices.Equal(given, want) {
		t.Errorf("the caller's list changed to %q", given)
	}
	for _, bad := range [][]string{nil, {}, {""}, {"a", ""}} {
		if _, err := lockOrder(bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("lockOrder(%q): %v, want ErrInvalidArgument", bad, err)
		}
	}
}

package reentrant

import (
	"context"
	"testing"
	"time"
)

// A lone call's trip runs on its caller's values (a trace span for go-redis
// hooks) but not on its cancellation: the trip's own deadline decides.
func TestValuesOfKeepsValuesNotCancellation(t *testing.T) {
	type key struct{}
	caller, cancel := context.WithTimeout(context.WithValue(context.Background(), key{}, "span"), time.Millisecond)
	cancel()
	c := &call{values: valuesOf{caller}}
	ctx, stop := context.WithDeadline(&c.values, time.Now().Add(time.Hour))
	defer stop()
	if got := ctx.Value(key{}); got != "span" {
		t.Fatalf("value %v; want the caller's", got)
	}
	if ctx.Err() != nil {
		t.Fatalf("the trip's ctx ended with its caller's: %v", ctx.Err())
	}
	if d, _ := ctx.Deadline(); time.Until(d) < 59*time.Minute {
		t.Fatalf("deadline %v; want the trip's own", d)
	}
	if n := testing.AllocsPerRun(100, func() { c.values = valuesOf{caller} }); n != 0 {
		t.Fatalf("%v allocations to keep the caller's values; want 0", n)
	}
}

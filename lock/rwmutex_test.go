package lock

import (
	"context"
	"errors"
	"testing"

	"github.com/relock-go/relock/reentrant"
)

// An RWMutex is two holds of one owner: a shared read hold and a marking
// write hold, both on the Client's majority, neither under the Mutex's
// contention rules.
func TestRWMutexHolds(t *testing.T) {
	c := observedClient(t, nil)
	rw := c.NewRWMutex("catalog", WithHoldContext(context.Background()), WithFencing(CounterTokens))
	if rw.r.owner != rw.w.owner || rw.Owner() != rw.w.owner {
		t.Fatal("the two holds must share one owner")
	}
	if rw.r.kind.mode != reentrant.Read || !rw.r.kind.shared || rw.r.kind.marks || rw.r.kind.quorum != 2 {
		t.Errorf("read kind %+v", rw.r.kind)
	}
	if rw.w.kind.mode != reentrant.Write || rw.w.kind.shared || !rw.w.kind.marks || rw.w.kind.quorum != 2 {
		t.Errorf("write kind %+v", rw.w.kind)
	}
	if contends(reentrant.Read) || contends(reentrant.Write) || !contends(reentrant.Exclusive) {
		t.Error("only Exclusive holds follow the contention rules")
	}
	if rw.r.holdCtx == nil || rw.w.holdCtx == nil || rw.w.fencing != CounterTokens || rw.r.fencing != 0 {
		t.Error("WithHoldContext goes to both holds, WithFencing to the write hold")
	}
	if rw.Name() != "catalog" {
		t.Errorf("Name() = %q", rw.Name())
	}
}

// A handle that reads and does not write is refused the write hold at once,
// before anything is sent (the nodes here are unreachable).
func TestRWMutexUpgradeRefusedBeforeSending(t *testing.T) {
	c := observedClient(t, nil)
	rw := c.NewRWMutex("catalog")
	rw.r.count = 1
	if err := rw.Lock(context.Background()); !errors.Is(err, ErrUpgrade) {
		t.Fatalf("Lock = %v; want ErrUpgrade", err)
	}
	if ok, err := rw.TryLockFor(context.Background(), 0); ok || !errors.Is(err, ErrUpgrade) {
		t.Fatalf("TryLockFor = %v, %v; want ErrUpgrade", ok, err)
	}
	if got := c.Stats().Attempts; got != 0 {
		t.Fatalf("%d attempts sent", got)
	}
	rw.r.count = 0
	if err := c.NewRWMutex("").RLock(context.Background()); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("empty name: %v", err)
	}
}

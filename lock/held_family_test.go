package lock

import (
	"context"
	"errors"
	"testing"
)

// The rules of the family's context scopes that are decided before any
// node is asked: who refuses an upgrade, which scope a nested call enters
// through, what a semaphore scope refuses. The integration tests check the
// rest against real Redis.

// scopeCtx returns a context carrying s under its key, as open's does,
// without open's loss watch (these holds hold nothing on any node).
func scopeCtx(s *holdScope) context.Context {
	return context.WithValue(context.Background(), s.key, s)
}

func noFn(t *testing.T) func(context.Context) error {
	return func(context.Context) error { t.Error("fn ran"); return nil }
}

// A write nested in a read-only scope is ErrUpgrade at once: the handle
// refuses it before any node is asked (the Client here has none).
func TestRWScopeWriteInReadIsUpgrade(t *testing.T) {
	c := scopeClient()
	rw := c.NewRWMutex("a")
	rw.r.count = 1 // it reads, and does not write
	s := &holdScope{key: holdKey{c, rwReadScope, "a"}, h: rwRead{rw}}
	ctx := scopeCtx(s)
	if err := c.DoWrite(ctx, "a", noFn(t)); !errors.Is(err, ErrUpgrade) {
		t.Fatalf("DoWrite in a read scope: %v, want ErrUpgrade", err)
	}
	if _, _, err := c.WriteLockContext(ctx, "a"); !errors.Is(err, ErrUpgrade) {
		t.Fatalf("WriteLockContext in a read scope: %v, want ErrUpgrade", err)
	}
	// The same through a context that also carries the ended write scope
	// of a downgraded writer: its read scope is the nearer one.
	w := &holdScope{key: holdKey{c, rwWriteScope, "a"}, h: rwWrite{rw}, closed: true}
	down := context.WithValue(ctx, w.key, w)
	if err := c.DoWrite(down, "a", noFn(t)); !errors.Is(err, ErrUpgrade) {
		t.Fatalf("DoWrite after a downgrade: %v, want ErrUpgrade", err)
	}
	if n := rw.ReadHoldCount(); n != 1 {
		t.Fatalf("read holds %d, want 1: nothing changed", n)
	}
	if n := rw.WriteHoldCount(); n != 0 {
		t.Fatalf("write holds %d, want 0", n)
	}
}

// A context whose read scope has ended refuses both sides with ErrNotHeld,
// rather than taking a fresh owner no one would release.
func TestRWScopeEndedRefuses(t *testing.T) {
	c := scopeClient()
	rw := c.NewRWMutex("a")
	s := &holdScope{key: holdKey{c, rwReadScope, "a"}, h: rwRead{rw}, closed: true}
	ctx := scopeCtx(s)
	if err := c.DoRead(ctx, "a", noFn(t)); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("DoRead in an ended scope: %v, want ErrNotHeld", err)
	}
	if err := c.DoWrite(ctx, "a", noFn(t)); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("DoWrite in an ended scope: %v, want ErrNotHeld", err)
	}
	ws := &holdScope{key: holdKey{c, rwWriteScope, "a"}, h: rwWrite{rw}, closed: true}
	if _, _, err := c.ReadLockContext(scopeCtx(ws), "a"); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("ReadLockContext in an ended write scope: %v, want ErrNotHeld", err)
	}
}

// rwOf finds the handle behind either side.
func TestRWScopeSides(t *testing.T) {
	rw := scopeClient().NewRWMutex("a")
	if rwOf(rwRead{rw}) != rw || rwOf(rwWrite{rw}) != rw {
		t.Fatal("rwOf lost the handle")
	}
}

// A semaphore scope refuses, at once, a nested call asking for more
// permits than it holds, and bad n anywhere.
func TestSemaphoreScopeRefusesMore(t *testing.T) {
	c := scopeClient()
	s, err := c.NewSemaphore("a", 3)
	if err != nil {
		t.Fatal(err)
	}
	sc := &holdScope{key: holdKey{c, semaphoreScope, "a"}, h: &permitHold{s: s, n: 1}}
	ctx := scopeCtx(sc)
	if err := s.Do(ctx, 2, noFn(t)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("2 permits inside a scope of 1: %v, want ErrInvalidArgument", err)
	}
	if _, _, err := s.AcquireContext(ctx, 3); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("3 permits inside a scope of 1: %v, want ErrInvalidArgument", err)
	}
	for _, n := range []int{0, -1, 4} {
		if err := s.Do(context.Background(), n, noFn(t)); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("%d permits: %v, want ErrInvalidArgument", n, err)
		}
	}
}

package lock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// countHold is a handle reduced to the bookkeeping holdScope relies on: a
// hold count, a loss channel, and a Lock that can be made to block until
// its ctx ends. It stands in for no Redis behaviour: these tests check the
// scope's own rules (who re-enters, when a context's hold ends), which the
// integration tests check again against real Redis with real Mutexes.
type countHold struct {
	mu      sync.Mutex
	count   int
	locks   int           // Lock calls
	block   chan struct{} // non-nil: Lock waits for it or for ctx
	entered chan struct{} // signalled when a Lock starts
	lost    chan struct{}
}

func newCountHold() *countHold { return &countHold{lost: make(chan struct{})} }

func (h *countHold) Lock(ctx context.Context) error {
	h.mu.Lock()
	h.locks++
	block, entered := h.block, h.entered
	h.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	select {
	case <-h.lost:
		return ErrLost
	default:
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count++
	return nil
}

func (h *countHold) Unlock(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count == 0 {
		return ErrNotHeld
	}
	h.count--
	return nil
}

func (h *countHold) Lost() <-chan struct{} { return h.lost }

func (h *countHold) counts() (count, locks int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count, h.locks
}

func scopeClient() *Client { return &Client{closing: make(chan struct{})} }

// enterWith enters key on c, a fresh owner being h.
func enterWith(t *testing.T, c *Client, ctx context.Context, key holdKey, h *countHold) *holdScope {
	t.Helper()
	s, err := c.enter(ctx, key, func(holdKey) reentrantHold { return h })
	if err != nil {
		t.Fatalf("enter: %v", err)
	}
	return s
}

func TestScopeReentersOnlyItsOwnKey(t *testing.T) {
	c, other := scopeClient(), scopeClient()
	key := holdKey{c, mutexScope, "a"}
	h := newCountHold()
	s := enterWith(t, c, context.Background(), key, h)
	held := s.open(context.Background())

	// The same key, through a derived context: the same handle, once more.
	derived, cancel := context.WithTimeout(held, time.Minute)
	defer cancel()
	inner := enterWith(t, c, derived, key, newCountHold())
	if inner.h != h {
		t.Fatal("a derived context did not re-enter the owner it carries")
	}
	if n, _ := h.counts(); n != 2 {
		t.Fatalf("count %d after a re-entry, want 2", n)
	}

	// Another name, kind or Client, or an unrelated context: a fresh owner.
	for _, k := range []holdKey{{c, mutexScope, "b"}, {c, "other-kind", "a"}, {other, mutexScope, "a"}} {
		fresh := newCountHold()
		if got := enterWith(t, k.c, held, k, fresh); got.h != fresh {
			t.Fatalf("%v found the hold of %v", k, key)
		}
	}
	if fresh := newCountHold(); enterWith(t, c, context.Background(), key, fresh).h != fresh {
		t.Fatal("an unrelated context found the hold")
	}

	if err := inner.exit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.exit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := h.counts(); n != 0 {
		t.Fatalf("count %d after both exits", n)
	}
	if held.Err() == nil {
		t.Fatal("the held context did not end at exit")
	}
}

func TestScopeEndedRefusesReentry(t *testing.T) {
	c := scopeClient()
	key := holdKey{c, mutexScope, "a"}
	h := newCountHold()
	s := enterWith(t, c, context.Background(), key, h)
	held := context.WithoutCancel(s.open(context.Background())) // a context that outlives the scope
	if err := s.exit(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := c.enter(held, key, func(holdKey) reentrantHold { t.Fatal("a fresh owner for an ended scope"); return nil })
	if !errors.Is(err, ErrNotHeld) {
		t.Fatalf("re-entry after the scope ended: %v, want ErrNotHeld", err)
	}
	if err := s.exit(context.Background()); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("second exit: %v, want ErrNotHeld", err)
	}
	if n, locks := h.counts(); n != 0 || locks != 1 {
		t.Fatalf("count %d, locks %d: want 0 and 1 (nothing taken after the end)", n, locks)
	}
}

// A re-entry in progress when the scope ends gives up, and exit waits for
// it before unlocking, so it never becomes a fresh acquisition.
func TestScopeExitWaitsForReentryInProgress(t *testing.T) {
	c := scopeClient()
	key := holdKey{c, mutexScope, "a"}
	h := newCountHold()
	s := enterWith(t, c, context.Background(), key, h)
	held := context.WithoutCancel(s.open(context.Background()))

	h.mu.Lock()
	h.block, h.entered = make(chan struct{}), make(chan struct{})
	h.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		_, err := c.enter(held, key, nil)
		done <- err
	}()
	<-h.entered
	if err := s.exit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrNotHeld) || errors.Is(err, context.Canceled) {
		t.Fatalf("re-entry cut short by the end: %v, want ErrNotHeld alone", err)
	}
	if n, _ := h.counts(); n != 0 {
		t.Fatalf("count %d, want 0", n)
	}
}

func TestScopeContextEndsOnLossAndClose(t *testing.T) {
	c := scopeClient()
	key := holdKey{c, mutexScope, "a"}
	h := newCountHold()
	s := enterWith(t, c, context.Background(), key, h)
	held := s.open(context.Background())
	close(h.lost)
	<-held.Done()
	if !errors.Is(context.Cause(held), ErrLost) {
		t.Fatalf("cause %v, want ErrLost", context.Cause(held))
	}
	if _, err := c.enter(held, key, nil); !errors.Is(err, ErrLost) {
		t.Fatalf("re-entry of a lost hold: %v, want ErrLost", err)
	}
	if err := s.exit(context.Background()); !errors.Is(err, ErrLost) {
		t.Fatalf("exit after loss: %v, want ErrLost", err)
	}

	h2 := newCountHold()
	s2 := enterWith(t, c, context.Background(), holdKey{c, mutexScope, "b"}, h2)
	held2 := s2.open(context.Background())
	close(c.closing)
	<-held2.Done()
	if !errors.Is(context.Cause(held2), ErrClosed) {
		t.Fatalf("cause %v, want ErrClosed", context.Cause(held2))
	}
	_ = s2.exit(context.Background())
}

// Goroutines sharing one context re-enter concurrently, each balanced.
func TestScopeConcurrentReentries(t *testing.T) {
	c := scopeClient()
	key := holdKey{c, mutexScope, "a"}
	h := newCountHold()
	s := enterWith(t, c, context.Background(), key, h)
	held := s.open(context.Background())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				inner, err := c.enter(held, key, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if err := inner.exit(context.Background()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := s.exit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, locks := h.counts(); n != 0 || locks != 401 {
		t.Fatalf("count %d, locks %d: want 0 and 401", n, locks)
	}
}

package callctx

import (
	"context"
	"errors"
	"testing"
	"time"
)

type key struct{}

// A call's context has its parent's values, not its cancellation when the
// parent is ValuesOf the caller's ctx, and its own deadline.
func TestValuesNotCancellation(t *testing.T) {
	caller, cancel := context.WithTimeout(context.WithValue(context.Background(), key{}, "span"), time.Millisecond)
	cancel()
	x := &Context{Context: ValuesOf{caller}, At: time.Now().Add(time.Hour), Timed: true}
	defer x.End(context.Canceled)
	if got := x.Value(key{}); got != "span" {
		t.Fatalf("value %v; want the caller's", got)
	}
	if x.Err() != nil {
		t.Fatalf("the call's ctx ended with its caller's: %v", x.Err())
	}
	if d, ok := x.Deadline(); !ok || !d.Equal(x.At) {
		t.Fatalf("deadline %v %v; want its own", d, ok)
	}
}

// A parent's deadline earlier than the call's own is the one reported.
func TestDeadlineIsTheEarlier(t *testing.T) {
	parent, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Minute))
	defer cancel()
	want, _ := parent.Deadline()
	x := &Context{Context: parent, At: time.Now().Add(time.Hour)}
	if d, _ := x.Deadline(); !d.Equal(want) {
		t.Fatalf("deadline %v; want the parent's %v", d, want)
	}
}

// A call that nothing waits on costs no allocation: no context, timer or
// channel of its own.
func TestNoAllocationUnlessWaitedOn(t *testing.T) {
	caller := context.Background()
	var values ValuesOf // kept beside the Context, in the call's state
	var x Context
	n := testing.AllocsPerRun(100, func() {
		values = ValuesOf{caller}
		x = Context{Context: &values, At: time.Now().Add(time.Hour), Timed: true}
		_, _ = x.Deadline()
		_ = x.Err()
		x.End(context.Canceled)
	})
	if n != 0 {
		t.Fatalf("%v allocations for a call nobody waits on; want 0", n)
	}
}

// End ends the context: Done closes, whether asked for before or after,
// the first reason stays, and a Timed context's timer goes.
func TestEnd(t *testing.T) {
	x := &Context{Context: context.WithValue(context.Background(), key{}, "span"), At: time.Now().Add(time.Hour)}
	if x.Value(key{}) != "span" || x.Err() != nil {
		t.Fatalf("value %v, err %v; want the parent's value and no error", x.Value(key{}), x.Err())
	}
	done := x.Done()
	x.End(context.Canceled)
	x.End(context.DeadlineExceeded) // the first reason stays
	select {
	case <-done:
	default:
		t.Fatal("Done not closed after End")
	}
	if !errors.Is(x.Err(), context.Canceled) {
		t.Fatalf("err %v; want context.Canceled", x.Err())
	}

	timed := &Context{Context: context.Background(), At: time.Now().Add(time.Hour), Timed: true}
	timed.Done()
	e := timed.expiry
	timed.End(context.Canceled)
	if e == nil || e.t.Stop() {
		t.Fatal("End left the deadline's timer running (or none was armed)")
	}

	unwaited := &Context{Context: context.Background(), At: time.Now().Add(time.Hour), Timed: true}
	unwaited.End(context.Canceled)
	select {
	case <-unwaited.Done():
	default:
		t.Fatal("Done asked for after End is open")
	}
	if unwaited.expiry != nil {
		t.Fatal("a timer was armed for a context already ended")
	}
}

// Without Timed nothing but End ends it, not even its deadline: its owner
// keeps the time.
func TestUntimedEndsOnlyWhenTold(t *testing.T) {
	x := &Context{Context: context.Background(), At: time.Now().Add(-time.Second)}
	if x.Err() != nil {
		t.Fatalf("an untimed context ended by itself: %v", x.Err())
	}
	select {
	case <-x.Done():
		t.Fatal("an untimed context's Done closed by itself")
	default:
	}
	x.End(context.DeadlineExceeded)
	if !errors.Is(x.Err(), context.DeadlineExceeded) {
		t.Fatalf("err %v; want DeadlineExceeded", x.Err())
	}
}

// A Timed context ends at its deadline, for a waiter on Done and for Err
// alike; and as its parent is cancelled, well before it.
func TestTimedEndsAtItsDeadlineOrWithItsParent(t *testing.T) {
	x := &Context{Context: context.Background(), At: time.Now().Add(20 * time.Millisecond), Timed: true}
	if err := x.Err(); err != nil {
		t.Fatalf("Err before the deadline: %v", err)
	}
	awaitEnd(t, "at its deadline", x, x.Done(), context.DeadlineExceeded)

	late := &Context{Context: context.Background(), At: time.Now().Add(-time.Millisecond), Timed: true}
	if err := late.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err past the deadline: %v; want DeadlineExceeded", err)
	}
	select {
	case <-late.Done():
	default:
		t.Fatal("Done of a context past its deadline is open")
	}

	parent, cancel := context.WithCancel(context.Background())
	x = &Context{Context: parent, At: time.Now().Add(time.Hour), Timed: true}
	done := x.Done()
	cancel()
	awaitEnd(t, "as its parent was cancelled", x, done, context.Canceled)

	parent, cancel = context.WithCancel(context.Background())
	x = &Context{Context: parent, At: time.Now().Add(time.Hour), Timed: true}
	cancel()
	if !errors.Is(x.Err(), context.Canceled) {
		t.Fatalf("Err of a context whose parent was cancelled, nobody waiting: %v", x.Err())
	}
}

// awaitEnd fails t unless x ends (done closes) within 10 s with the error
// want.
func awaitEnd(t *testing.T, when string, x *Context, done <-chan struct{}, want error) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the context did not end %s", when)
	}
	if !errors.Is(x.Err(), want) {
		t.Fatalf("ended %s with %v; want %v", when, x.Err(), want)
	}
}

// An expiry disarmed before it fired is used again, and then ends only the
// context it was armed for.
func TestExpiryEndsOnlyTheContextItIsArmedFor(t *testing.T) {
	first := &Context{Context: context.Background(), At: time.Now().Add(time.Hour), Timed: true}
	first.Done()
	first.End(context.Canceled) // disarmed before firing: back in the pool
	second := &Context{Context: context.Background(), At: time.Now().Add(20 * time.Millisecond), Timed: true}
	awaitEnd(t, "at its deadline through an expiry used before", second, second.Done(), context.DeadlineExceeded)
	if !errors.Is(first.Err(), context.Canceled) {
		t.Fatalf("the first context's err became %v; want context.Canceled", first.Err())
	}
}

// Done and End from several goroutines at once (go-redis's pool wait on
// one, the call's end on another, the timer on a third): the race
// detector's check.
func TestConcurrentUse(t *testing.T) {
	for range 100 {
		x := &Context{Context: context.Background(), At: time.Now().Add(time.Millisecond), Timed: true}
		waited := make(chan struct{})
		go func() {
			<-x.Done()
			_ = x.Err()
			close(waited)
		}()
		x.End(context.Canceled)
		<-waited
		if x.Err() == nil {
			t.Fatal("Err nil after End")
		}
	}
}

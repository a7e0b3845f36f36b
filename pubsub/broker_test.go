package pubsub

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newTestBroker returns a Broker without nodes whose dedup expects copies
// copies of each release, for driving the dispatch logic by hand.
func newTestBroker(t *testing.T, copies int) *Broker {
	t.Helper()
	b := NewBroker(nil, Options{})
	b.dedup = newDedup(time.Second, copies, 1)
	t.Cleanup(b.Close)
	return b
}

func subscribeN(t *testing.T, b *Broker, channel string, n int) []*Waiter {
	t.Helper()
	ws := make([]*Waiter, n)
	for i := range ws {
		w, err := b.Subscribe(context.Background(), channel)
		if err != nil {
			t.Fatal(err)
		}
		ws[i] = w
	}
	return ws
}

func TestBrokerOneReleaseWakesOneWaiter(t *testing.T) {
	b := newTestBroker(t, 3)
	ws := subscribeN(t, b, "c", 10)
	for node := range 3 {
		b.message(node, "c", "release-1", false)
	}
	if got := woken(ws); len(got) != 1 || got[0] != 0 {
		t.Fatalf("three copies of one release woke %v, want [0]", got)
	}
	for i, id := range []string{"r2", "r3", "r4"} {
		b.message(i, "c", id, false)
	}
	if got := woken(ws); len(got) != 3 {
		t.Fatalf("three releases woke %v, want three waiters", got)
	}
	s := b.Stats()
	if s.Duplicates != 2 || s.Wakes != 4 || s.Waiters != 10 || s.Channels != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// A hand-off wakes its target at once, without waiting for other nodes'
// copies (their releases publish nothing unless a keeper registered there),
// and once: the same hand-off again is a duplicate.
func TestBrokerHandOffIsDueAtOnce(t *testing.T) {
	b := newTestBroker(t, 5)
	b.dedup = newDedup(time.Second, 5, 3)
	var ws []*Waiter
	for _, owner := range []string{"c:a", "c:t"} {
		w, err := b.SubscribeOwner(context.Background(), "c", owner, owner+"/")
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	b.message(0, "c", "c:o/1 c:t ", false)
	if got := woken(ws); len(got) != 1 || got[0] != 1 {
		t.Fatalf("a hand-off of a 5 nodes' release woke %v, want its target [1] at once", got)
	}
	b.message(0, "c", "c:o/1 c:t ", false)
	if got := woken(ws); len(got) != 0 {
		t.Fatalf("the same hand-off again woke %v", got)
	}
	if s := b.Stats(); s.Duplicates != 1 {
		t.Fatalf("stats %+v, want one duplicate", s)
	}
}

// A copy for keepers with no keeper to take it wakes one waiter here at
// its grace time when no hand-off of its release came (the node that hands
// off failed to), unless it came on this process's personal channel: then
// it was meant for a keeper here, and the hand-off went to another process.
func TestBrokerPersonalKeepersCopyStandsInForNoHandOff(t *testing.T) {
	b := newTestBroker(t, 3)
	b.opts.Grace = 5 * time.Millisecond
	ws := subscribeN(t, b, "c", 1)

	b.message(1, "c", "c:o/1 k", true)
	time.Sleep(50 * time.Millisecond)
	if got := woken(ws); len(got) != 0 {
		t.Fatalf("a personal copy for keepers woke %v", got)
	}
	if n := b.Stats().StandIns; n != 0 {
		t.Fatalf("%d stand-ins for a personal copy", n)
	}
	b.message(1, "c", "c:o/2 k", false)
	deadline := time.Now().Add(2 * time.Second)
	for {
		if got := woken(ws); len(got) == 1 {
			if n := b.Stats().StandIns; n != 1 {
				t.Fatalf("the wake for a missing hand-off counted as %d stand-ins, want 1", n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a copy for keepers on the lock's channel, with no hand-off, woke no one")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestBrokerEmptyPayloadsCountEachTime(t *testing.T) {
	b := newTestBroker(t, 3)
	ws := subscribeN(t, b, "c", 5)
	for node := range 3 {
		b.message(node, "c", "", false)
	}
	if got := woken(ws); len(got) != 3 {
		t.Fatalf("three empty messages woke %v, want three waiters", got)
	}
}

func TestBrokerReleaseWithoutFreeWaiterIsUnclaimed(t *testing.T) {
	b := newTestBroker(t, 1)
	subscribeN(t, b, "c", 1)
	b.message(0, "c", "r1", false)
	b.message(0, "c", "r2", false)
	b.message(0, "other", "r3", false)
	if s := b.Stats(); s.Unclaimed != 2 || s.Wakes != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestBrokerWaiterCloseHandsWakeOnAndIsIdempotent(t *testing.T) {
	b := newTestBroker(t, 1)
	ws := subscribeN(t, b, "c", 2)
	b.message(0, "c", "r1", false)
	ws[0].Close()
	ws[0].Close()
	select {
	case <-ws[1].Wake():
	default:
		t.Fatal("pending wake of the closed waiter was not handed on")
	}
	ws[1].Close()
	if s := b.Stats(); s.Waiters != 0 || s.Channels != 0 {
		t.Fatalf("stats after closing all: %+v", s)
	}
}

func TestBrokerConnectionChangeWakesEveryone(t *testing.T) {
	b := newTestBroker(t, 1)
	ws := append(subscribeN(t, b, "c", 3), subscribeN(t, b, "d", 3)...)
	b.connectionChanged(0, true)
	if got := woken(ws); len(got) != 6 {
		t.Fatalf("woken %v, want all six", got)
	}
	b.connectionChanged(0, false)
	if got := woken(ws); len(got) != 6 {
		t.Fatalf("woken %v after restore, want all six", got)
	}
	if s := b.Stats(); s.Disconnects != 1 || s.Reconnects != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestBrokerReportsConnectionChanges(t *testing.T) {
	var got []string
	b := NewBroker(nil, Options{OnConnection: func(node int, up bool) { got = append(got, fmt.Sprint(node, up)) }})
	t.Cleanup(b.Close)
	b.connectionChanged(2, true)
	b.connectionChanged(2, false)
	if want := []string{"2 false", "2 true"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("OnConnection calls %q; want %q (lost, then back up)", got, want)
	}
}

func TestBrokerSubscribeCancelledContext(t *testing.T) {
	b := newTestBroker(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w, err := b.Subscribe(ctx, "c")
	if !errors.Is(err, context.Canceled) || w != nil {
		t.Fatalf("Subscribe = %v, %v; want nil, context.Canceled", w, err)
	}
	if s := b.Stats(); s.Waiters != 0 || s.Channels != 0 {
		t.Fatalf("a share was left behind: %+v", s)
	}
}

func TestBrokerCloseWakesWaitersAndRefusesSubscribe(t *testing.T) {
	b := NewBroker(nil, Options{})
	ws := subscribeN(t, b, "c", 3)
	b.Close()
	b.Close()
	if got := woken(ws); len(got) != 3 {
		t.Fatalf("Close woke %v, want all three", got)
	}
	if _, err := b.Subscribe(context.Background(), "c"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Subscribe after Close: %v, want ErrClosed", err)
	}
	for _, w := range ws {
		w.Close() // still fine after the Broker closed
	}
}

func TestAwaitConfirmed(t *testing.T) {
	b := newTestBroker(t, 1)
	b.opts.SubscribeTimeout = 50 * time.Millisecond
	confirmed := make(chan struct{})
	close(confirmed)
	never := make(chan struct{})

	if err := b.awaitConfirmed(context.Background(), []<-chan struct{}{confirmed, confirmed}); err != nil {
		t.Fatalf("all confirmed: %v", err)
	}

	start := time.Now()
	if err := b.awaitConfirmed(context.Background(), []<-chan struct{}{never, confirmed}); err != nil {
		t.Fatalf("one node silent: %v, want nil after the timeout", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > time.Second {
		t.Fatalf("waited %v for a silent node, want about 50ms", d)
	}

	// From here on the timer must not be ready too: a pause longer than it
	// on a loaded machine would leave select a random pick.
	b.opts.SubscribeTimeout = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := b.awaitConfirmed(ctx, []<-chan struct{}{never}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ctx ended: %v, want context.DeadlineExceeded", err)
	}

	b.Close()
	if err := b.awaitConfirmed(context.Background(), []<-chan struct{}{never}); !errors.Is(err, ErrClosed) {
		t.Fatalf("broker closed: %v, want ErrClosed", err)
	}
}

func TestNewBrokerRejectsNilClient(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a nil client")
		}
	}()
	NewBroker([]redis.UniversalClient{nil}, Options{})
}

// A hand-off's next in line that leaves, unwoken, before the watch runs out
// leaves the retry to another waiter of the channel: otherwise nobody would
// move the queue on past a target that never took the lock.
func TestBrokerHandOffWatchOfANextThatLeftWakesAnother(t *testing.T) {
	b := newTestBroker(t, 1)
	ctx := context.Background()
	next, err := b.SubscribeOwner(ctx, "c", "p1:n", "p1:n/")
	if err != nil {
		t.Fatal(err)
	}
	after, err := b.SubscribeOwner(ctx, "c", "p1:m", "p1:m/")
	if err != nil {
		t.Fatal(err)
	}
	b.message(0, "c", "p9:o/1 p8:t p1:n", true) // the target is another process's
	next.Close()
	select {
	case <-after.Wake():
	case <-time.After(time.Second):
		t.Fatalf("nobody retried for the next in line that left: %+v", b.Stats())
	}
}

package lock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/reentrant"
)

// These tests need no Redis: they check the wait policy of nodeWaits.

func waitsFor(t *testing.T, opts Options, nodes int) *nodeWaits {
	t.Helper()
	for i := range nodes {
		opts.Nodes = append(opts.Nodes, redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", i+1)}))
	}
	t.Cleanup(func() {
		for _, n := range opts.Nodes {
			_ = n.Close()
		}
	})
	o, err := opts.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return newNodeWaits(o)
}

func TestWaitsAdaptiveDefaults(t *testing.T) {
	w := waitsFor(t, Options{}, 3)
	lease := DefaultLease
	if d, _ := w.wait(0, kindAcquire, lease); d != NodeTimeoutInitial {
		t.Fatalf("acquire wait before any answer = %v; want %v", d, NodeTimeoutInitial)
	}
	if d, _ := w.wait(0, kindRelease, lease); d != lease/10 {
		t.Fatalf("release wait before any answer = %v; want 4 × 1s capped at lease/10 = %v", d, lease/10)
	}
	w.est[0].Sample(time.Millisecond) // a loopback node: the floor
	if d, _ := w.wait(0, kindAcquire, lease); d != NodeTimeoutFloor {
		t.Fatalf("acquire wait of a fast node = %v; want the floor %v", d, NodeTimeoutFloor)
	}
	if d, _ := w.wait(0, kindRelease, lease); d != lease/10 {
		t.Fatalf("release wait of a fast node = %v; want lease/10 = %v, not a multiple of its round trip", d, lease/10)
	}
	if d, _ := w.wait(0, kindSurvey, lease); d != lease/10 {
		t.Fatalf("survey wait of a fast node = %v; want lease/10 = %v", d, lease/10)
	}
	_, tok := w.est[0].Timeout()
	w.est[0].Expired(tok) // not answering now: a survey waits its usual round trip
	if d, _ := w.wait(0, kindSurvey, lease); d != NodeTimeoutFloor {
		t.Fatalf("survey wait of a node that timed out = %v; want its typical %v", d, NodeTimeoutFloor)
	}
	if d, _ := w.wait(0, kindRelease, lease); d != lease/10 {
		t.Fatalf("release wait of a node that timed out = %v; want lease/10 = %v", d, lease/10)
	}
	w.est[0].Sample(time.Millisecond) // answering again
	if d, _ := w.wait(0, kindSurvey, lease); d != lease/10 {
		t.Fatalf("survey wait of a node answering again = %v; want lease/10 = %v", d, lease/10)
	}
	if d, _ := w.wait(0, kindRenew, lease); d != lease/10 {
		t.Fatalf("renewal wait of a fast node = %v; want lease/10 = %v", d, lease/10)
	}
	w.est[1].Sample(150 * time.Millisecond) // 150 + 4·75 ms
	if d, _ := w.wait(1, kindAcquire, lease); d != 450*time.Millisecond {
		t.Fatalf("acquire wait of a 150ms node = %v; want 450ms", d)
	}
	if d, _ := w.wait(1, kindRelease, lease); d != lease/10 {
		t.Fatalf("release wait of a 150ms node = %v; want lease/10 = %v", d, lease/10)
	}
	// An explicit short lease lowers the ceiling of its own calls.
	if d, _ := w.wait(1, kindAcquire, 2*time.Second); d != 200*time.Millisecond {
		t.Fatalf("acquire wait for a 2s lease = %v; want lease/10 = 200ms", d)
	}
	if d, _ := w.wait(1, kindRelease, 2*time.Second); d != 400*time.Millisecond {
		t.Fatalf("release wait for a 2s lease = %v; want 4 floors = 400ms", d)
	}
}

// Whatever the estimate, an acquire that waited the longest keeps a
// positive validity: the ceiling is a tenth of the lease.
func TestWaitsCeilingKeepsValidity(t *testing.T) {
	for _, lease := range []time.Duration{10 * time.Millisecond, 500 * time.Millisecond, time.Second, DefaultLease, 5 * time.Minute} {
		w := waitsFor(t, Options{Lease: lease}, 1)
		for range 20 {
			_, tok := w.est[0].Timeout()
			w.est[0].Expired(tok)
		}
		d, _ := w.wait(0, kindAcquire, lease)
		if v := validity(lease, d, DefaultClockDriftFactor); v <= 0 || d > lease/10 {
			t.Fatalf("lease %v: acquire wait %v leaves validity %v", lease, d, v)
		}
	}
}

func TestWaitsShortLeaseShrinksFloor(t *testing.T) {
	w := waitsFor(t, Options{Lease: 500 * time.Millisecond}, 1)
	if w.floor != 50*time.Millisecond {
		t.Fatalf("floor = %v for a 500ms lease; want 50ms", w.floor)
	}
	if d, _ := w.wait(0, kindAcquire, 500*time.Millisecond); d != 50*time.Millisecond {
		t.Fatalf("initial acquire wait = %v; want lease/10", d)
	}
}

func TestWaitsFixed(t *testing.T) {
	w := waitsFor(t, Options{NodeTimeout: 70 * time.Millisecond}, 3)
	if w.est != nil {
		t.Fatal("a fixed NodeTimeout must not estimate")
	}
	if d, _ := w.wait(2, kindAcquire, time.Hour); d != 70*time.Millisecond {
		t.Fatalf("acquire wait = %v; want 70ms", d)
	}
	if d, _ := w.wait(2, kindRelease, time.Hour); d != 280*time.Millisecond {
		t.Fatalf("release wait = %v; want 4 × 70ms", d)
	}
	if d := w.typical(1, []bool{true, false, true}); d != 70*time.Millisecond {
		t.Fatalf("typical = %v; want 70ms", d)
	}
	w.observe(0, 0, time.Millisecond, time.Second, false, nil) // no estimator: no panic
}

// Once a quorum answered, a straggler is worth its usual round trip, at
// least the answered nodes': a node never heard from, or one that just went
// dead and backed off, is not waited for longer than the healthy ones.
func TestWaitsTypicalForStragglers(t *testing.T) {
	w := waitsFor(t, Options{}, 3)
	w.est[0].Sample(150 * time.Millisecond) // typical 450 ms
	w.est[1].Sample(time.Millisecond)       // floor
	if d := w.typical(2, []bool{false, true, false}); d != NodeTimeoutFloor {
		t.Fatalf("typical of a node never heard from = %v; want the floor", d)
	}
	if d := w.typical(2, []bool{true, true, false}); d != 450*time.Millisecond {
		t.Fatalf("typical = %v; want the answered nodes' 450ms", d)
	}
	for range 5 {
		_, tok := w.est[2].Timeout()
		w.est[2].Expired(tok)
	}
	if d := w.typical(2, []bool{false, true, false}); d != NodeTimeoutFloor {
		t.Fatalf("typical of a backed-off node = %v; want the floor", d)
	}
}

func TestObserve(t *testing.T) {
	w := waitsFor(t, Options{}, 1)
	_, tok := w.est[0].Timeout()
	refused := &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}
	w.observe(0, tok, time.Second, 10*time.Millisecond, false, refused) // refused fast: nothing
	if d, _ := w.wait(0, kindAcquire, DefaultLease); d != NodeTimeoutInitial || w.est[0].BackedOff() {
		t.Fatalf("wait = %v after a fast failure; want unchanged", d)
	}
	w.observe(0, tok, time.Second, time.Second, false, context.DeadlineExceeded) // no answer in time: back off
	if d, _ := w.wait(0, kindAcquire, DefaultLease); d != 2*time.Second {
		t.Fatalf("wait = %v after a timeout; want 2s", d)
	}
	w.observe(0, tok, time.Second, 200*time.Millisecond, true, nil) // an answer
	if d, _ := w.wait(0, kindAcquire, DefaultLease); d != 600*time.Millisecond {
		t.Fatalf("wait = %v after a 200ms answer; want 600ms", d)
	}
	// The go-redis client's own read timeout ended the call a little
	// before the wait did: no answer in time either.
	_, tok = w.est[0].Timeout()
	readTimeout := &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}
	w.observe(0, tok, 600*time.Millisecond, 599*time.Millisecond, false, fmt.Errorf("%w: %w", ErrNodeTimeout, readTimeout))
	if d, _ := w.wait(0, kindAcquire, DefaultLease); d != 1200*time.Millisecond || !w.est[0].BackedOff() {
		t.Fatalf("wait = %v after the client's own timeout; want 1.2s, backed off", d)
	}
}

func TestIsAnswer(t *testing.T) {
	cases := []struct {
		name  string
		value any
		err   error
		want  bool
	}{
		{"reply", reentrant.Acquisition{}, nil, true},
		{"timeout", reentrant.Acquisition{}, context.DeadlineExceeded, false},
		{"refused", nil, errors.New("dial tcp: connection refused"), false},
		{"client closed", nil, fmt.Errorf("wrapped: %w", redis.ErrClosed), false},
		{"server error", nil, fmt.Errorf("wrapped: %w", serverError("ERR busy")), true},
		{"wrong type", nil, &reentrant.WrongTypeError{Key: "k", Type: "string"}, true},
		{"renewals answered", []reentrant.RenewResult{{Err: context.Canceled}, {Held: true}}, nil, true},
		{"renewals all failed", []reentrant.RenewResult{{Err: context.Canceled}, {Err: context.Canceled}}, nil, false},
	}
	for _, tc := range cases {
		if got := isAnswer(tc.value, tc.err); got != tc.want {
			t.Errorf("%s: isAnswer = %v; want %v", tc.name, got, tc.want)
		}
	}
}

func TestIsAgreement(t *testing.T) {
	for _, tc := range []struct {
		value any
		want  bool
	}{
		{reentrant.Acquisition{Acquired: true}, true},
		{reentrant.Acquisition{HolderTTL: time.Second}, false},
		{reentrant.Released, true},
		{reentrant.StillHeld, true},
		{reentrant.NotHeld, false},
		{reentrant.Info{}, true},
		{[]reentrant.RenewResult{{Held: true}}, true},
		{[]reentrant.RenewResult{{Held: true}, {Held: false}}, false},
		{[]reentrant.RenewResult{{Held: true}, {Err: context.Canceled}}, false},
	} {
		if got := isAgreement(tc.value); got != tc.want {
			t.Errorf("isAgreement(%#v) = %v; want %v", tc.value, got, tc.want)
		}
	}
}

// serverError stands for an error reply of Redis (go-redis's own type is
// internal).
type serverError string

func (e serverError) Error() string { return string(e) }
func (serverError) RedisError()     {}

func TestCallableHereNeedsOneBoundedNode(t *testing.T) {
	bounded := func(o *redis.Options) *redis.Options {
		o.ContextTimeoutEnabled = true
		return o
	}
	one := func(o *redis.Options) *nodeWaits {
		rdb := redis.NewClient(o)
		t.Cleanup(func() { _ = rdb.Close() })
		return newNodeWaits(Options{Nodes: []redis.UniversalClient{rdb}})
	}

	if got := one(bounded(&redis.Options{Addr: "127.0.0.1:1"})).callableHere(-1); got != 0 {
		t.Fatalf("one bounded node: %d; want 0", got)
	}
	if got := one(&redis.Options{Addr: "127.0.0.1:1"}).callableHere(-1); got != -1 {
		t.Fatalf("a client that ignores ctx deadlines: %d; want -1", got)
	}
	if got := one(bounded(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: -2})).callableHere(-1); got != -1 {
		t.Fatalf("a client without read deadlines: %d; want -1", got)
	}

	three := waitsFor(t, Options{}, 3)
	for i := range three.bounded {
		three.bounded[i] = true
	}
	if got := three.callableHere(-1); got != -1 {
		t.Fatalf("a fan-out to 3 nodes: %d; want -1", got)
	}
	if got := three.callableHere(2); got != 2 {
		t.Fatalf("a probe of node 2 alone: %d; want 2", got)
	}
}

func TestSeesCancelInAllowsACancellableContextOnlyForAShortWait(t *testing.T) {
	w := waitsFor(t, Options{}, 1)
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	endless := context.WithoutCancel(cancellable)

	if !w.seesCancelIn(endless, time.Hour) {
		t.Fatal("a ctx that cannot be cancelled: any wait should do")
	}
	if !w.seesCancelIn(cancellable, w.floor) {
		t.Fatalf("a cancellable ctx and the floor's wait (%v): should run here", w.floor)
	}
	if w.seesCancelIn(cancellable, w.floor+time.Millisecond) {
		t.Fatal("a cancellable ctx and a wait above the floor: want a worker, so the fan-out sees the cancellation at once")
	}
	if w.seesCancelIn(cancellable, NodeTimeoutInitial) {
		t.Fatal("a node never heard from (the initial wait): want a worker")
	}
}

// The first-contact duplicate check waits as long as a first acquire call
// to a node that never answered does: the adaptive initial timeout within
// the Client's bounds, or the fixed timeout.
func TestWaitsFirstContactIsAFirstCallsWait(t *testing.T) {
	for _, opts := range []Options{{}, {Lease: 500 * time.Millisecond}, {Lease: 5 * time.Minute}, {NodeTimeout: 70 * time.Millisecond}} {
		w := waitsFor(t, opts, 1)
		want, _ := w.wait(0, kindAcquire, cmp.Or(opts.Lease, DefaultLease))
		if got := w.firstContact(); got != want {
			t.Fatalf("%+v: first contact waits %v; a first acquire call %v", opts, got, want)
		}
	}
	if got := waitsFor(t, Options{}, 1).firstContact(); got != NodeTimeoutInitial {
		t.Fatalf("default first contact = %v; want %v, not the floor", got, NodeTimeoutInitial)
	}
}

package lock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/reentrant"
)

// These tests need no Redis: they drive the observer's side of the Client
// with the values the quorum engine hands it.

// observedClient is a Client over three nodes nobody listens on (New does
// not contact them, and these tests never send), with obs as its Observer.
func observedClient(t testing.TB, obs *Observer) *Client {
	t.Helper()
	var nodes []redis.UniversalClient
	for port := 1; port <= 3; port++ {
		rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
		t.Cleanup(func() { _ = rdb.Close() })
		nodes = append(nodes, rdb)
	}
	c, err := New(Options{Nodes: nodes, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// wonAttempt is an attempt two of three nodes took, the third timed out.
func wonAttempt(op reentrant.Op) attempt {
	return attempt{sent: true, acquired: true, deadline: time.Now().Add(op.Lease - time.Millisecond),
		replies: []reply[reentrant.Acquisition]{
			{node: 0, value: reentrant.Acquisition{Acquired: true, Count: 1}},
			{node: 1, value: reentrant.Acquisition{Acquired: true, Count: 1}},
			{node: 2, err: ErrNodeTimeout},
		}}
}

// cycleInput is what the quorum engine hands the observer helpers in one
// cycle, made before measuring: the engine makes it anyway.
type cycleInput struct {
	op       reentrant.Op
	won      attempt
	replies  []reply[reentrant.ReleaseResult]
	renewals []reply[[]reentrant.RenewResult]
	cleanup  []reentrant.ChangeResult
}

func newCycleInput(withErrors bool) cycleInput {
	in := cycleInput{
		op:       testOp(1),
		replies:  []reply[reentrant.ReleaseResult]{{node: 0, value: reentrant.Released}, {node: 1, value: reentrant.Released}},
		renewals: []reply[[]reentrant.RenewResult]{{node: 0, value: []reentrant.RenewResult{{Held: true}}}},
		cleanup:  []reentrant.ChangeResult{{}},
	}
	in.won = wonAttempt(in.op)
	if withErrors {
		in.replies = append(in.replies, reply[reentrant.ReleaseResult]{node: 2, err: ErrNodeTimeout})
	}
	return in
}

// cycle runs every observer helper a Lock, a sleep, an Unlock, a Do, a
// renewal batch and a clean-up round call, with the values they see.
func cycle(c *Client, m *hold, in *cycleInput) {
	ctx := context.Background()
	op := in.op
	dctx, start := c.doStarted(ctx, "x")
	lctx, call := c.lockStarted(dctx, m, time.Second, true, true)
	var w waiter
	c.attempted(lctx, m, op, -1, in.won, &call)
	slept := c.sleepStarted(lctx, m, time.Millisecond)
	w.slept(lctx, m, slept, nil)
	c.holdChanged(m, true)
	c.lockEnded(lctx, m, &call, &w, true, true, nil)
	uctx := c.unlockStarted(dctx, m)
	t := c.newReleaseTally()
	t.target, t.reached, t.agreed = 0, 2, 2
	noteNodeErrors(c, uctx, in.replies)
	c.released(uctx, m, false, &t, nil)
	c.holdChanged(m, false)
	c.doEnded(dctx, "x", start, true, nil)
	c.renewed([]reentrant.Op{op}, in.renewals, 1, 0, time.Millisecond)
	c.lost(m, LossNotHeld)
	c.noteCleanupErrors(0, in.cleanup)
}

// The hooks a Client calls cost no allocation when no Observer is set:
// no event is built.
func TestObserverUnsetAllocatesNothing(t *testing.T) {
	c := observedClient(t, nil)
	m := &c.NewMutex("x").hold
	in := newCycleInput(true)
	if n := testing.AllocsPerRun(200, func() { cycle(c, m, &in) }); n != 0 {
		t.Fatalf("%v allocations per cycle without an Observer; want 0", n)
	}
}

// Events are passed by value: building and delivering them allocates
// nothing either, so an observer's cost is its own.
func TestObserverEventsAllocateNothing(t *testing.T) {
	var n int
	count := func() { n++ }
	obs := &Observer{
		LockStart:    func(ctx context.Context, _ LockStartInfo) context.Context { count(); return ctx },
		LockDone:     func(context.Context, LockDoneInfo) { count() },
		Attempt:      func(context.Context, AttemptInfo) { count() },
		SleepStart:   func(context.Context, SleepStartInfo) { count() },
		SleepDone:    func(context.Context, SleepDoneInfo) { count() },
		UnlockStart:  func(ctx context.Context, _ UnlockStartInfo) context.Context { count(); return ctx },
		Release:      func(context.Context, ReleaseInfo) { count() },
		DoStart:      func(ctx context.Context, _ DoStartInfo) context.Context { count(); return ctx },
		DoDone:       func(context.Context, DoDoneInfo) { count() },
		Hold:         func(HoldInfo) { count() },
		Renewal:      func(RenewalInfo) { count() },
		Loss:         func(LossInfo) { count() },
		NodeError:    func(context.Context, NodeErrorInfo) { count() },
		PubSub:       func(PubSubInfo) { count() },
		ClockTrouble: func(ClockTroubleInfo) { count() },
	}
	c := observedClient(t, obs)
	m := &c.NewMutex("x").hold
	in := newCycleInput(false)
	cycle(c, m, &in)
	// Every hook of the cycle but PubSub, the node error (none here) and
	// clock trouble (none at these timings), with Hold twice.
	if want := 13; n != want {
		t.Fatalf("%d events in a cycle; want %d", n, want)
	}
	if allocs := testing.AllocsPerRun(200, func() { cycle(c, m, &in) }); allocs != 0 {
		t.Fatalf("%v allocations per observed cycle; want 0", allocs)
	}
}

// BenchmarkObserverHooks is a cycle's worth of observer calls, without an
// Observer and with one whose hooks do nothing: the library's own share of
// an observer's cost.
func BenchmarkObserverHooks(b *testing.B) {
	for _, tc := range []struct {
		name string
		obs  *Observer
	}{
		{"unset", nil},
		{"noop", &Observer{
			LockStart: func(ctx context.Context, _ LockStartInfo) context.Context { return ctx },
			LockDone:  func(context.Context, LockDoneInfo) {},
			Attempt:   func(context.Context, AttemptInfo) {},
			Release:   func(context.Context, ReleaseInfo) {},
			NodeError: func(context.Context, NodeErrorInfo) {},
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := observedClient(b, tc.obs)
			m := &c.NewMutex("x").hold
			in := newCycleInput(false)
			b.ReportAllocs()
			for b.Loop() {
				cycle(c, m, &in)
			}
		})
	}
}

func TestMergeCallsEveryHookInOrderAndChainsContexts(t *testing.T) {
	type key string
	var order []string
	mark := func(name string) *Observer {
		return &Observer{
			LockStart: func(ctx context.Context, e LockStartInfo) context.Context {
				order = append(order, name+" start")
				return context.WithValue(ctx, key(name), e.Name)
			},
			LockDone: func(ctx context.Context, _ LockDoneInfo) {
				order = append(order, fmt.Sprintf("%s done a=%v b=%v", name, ctx.Value(key("a")), ctx.Value(key("b"))))
			},
			Loss: func(LossInfo) { order = append(order, name+" loss") },
		}
	}
	obs := Merge(mark("a"), nil, mark("b"), &Observer{})
	if obs.Attempt != nil || obs.PubSub != nil {
		t.Fatal("a hook no observer sets must stay nil, so that it costs nothing")
	}
	c := observedClient(t, obs)
	m := &c.NewMutex("x").hold
	ctx, call := c.lockStarted(context.Background(), m, time.Second, true, true)
	var w waiter
	c.lockEnded(ctx, m, &call, &w, true, true, nil)
	c.lost(m, LossNotHeld)
	want := []string{"a start", "b start", "a done a=x b=x", "b done a=x b=x", "a loss", "b loss"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("calls %q; want %q", order, want)
	}

	one := mark("only")
	if got := Merge(nil, one); fmt.Sprintf("%p", got.Loss) != fmt.Sprintf("%p", one.Loss) {
		t.Fatal("merging one observer must keep its hooks as they are")
	}
}

// A Start hook that returns nil leaves the caller's ctx in place.
func TestStartHookReturningNilKeepsTheContext(t *testing.T) {
	c := observedClient(t, &Observer{UnlockStart: func(context.Context, UnlockStartInfo) context.Context { return nil }})
	ctx := context.Background()
	if got := c.unlockStarted(ctx, &c.NewMutex("x").hold); got != ctx {
		t.Fatal("the caller's ctx was replaced by nil")
	}
}

func TestAttemptEventsAndClockTrouble(t *testing.T) {
	var attempts []AttemptInfo
	var trouble []ClockTroubleInfo
	c := observedClient(t, &Observer{
		Attempt:      func(_ context.Context, e AttemptInfo) { attempts = append(attempts, e) },
		ClockTrouble: func(e ClockTroubleInfo) { trouble = append(trouble, e) },
	})
	m := &c.NewMutex("orders").hold
	op := testOp(1)
	op.Lease = time.Second
	var call lockCall

	c.attempted(context.Background(), m, op, -1, attempt{}, &call) // never sent: not an attempt
	if call.attempts != 0 || len(attempts) != 0 {
		t.Fatal("an attempt that was never sent must not count")
	}
	c.attempted(context.Background(), m, op, -1, wonAttempt(op), &call)
	e := attempts[0]
	if call.attempts != 1 || e.Outcome != AttemptAcquired || e.Agreed != 2 || e.Nodes != 3 || e.Quorum != 2 || e.Name != "orders" {
		t.Fatalf("attempt %+v (counted %d)", e, call.attempts)
	}
	if e.Drift != 12*time.Millisecond || e.Validity != time.Second-e.Elapsed-e.Drift {
		t.Fatalf("drift %v validity %v elapsed %v: want 1s × 0.01 + 2ms and lease − elapsed − drift", e.Drift, e.Validity, e.Elapsed)
	}
	if len(trouble) != 0 {
		t.Fatalf("clock trouble for a fast attempt: %+v", trouble)
	}

	// A quorum that agreed 1.1 s after the start of a 1 s lease: too late.
	late := wonAttempt(op)
	late.acquired = false
	late.deadline = time.Now().Add(op.Lease - 1100*time.Millisecond)
	late.err = &QuorumError{Op: "acquire", Needed: 2, Agreed: 2, Late: true}
	c.attempted(context.Background(), m, op, -1, late, &call)
	if got := attempts[1].Outcome; got != AttemptLate {
		t.Fatalf("outcome %q; want late", got)
	}
	if len(trouble) != 2 || trouble[0].Kind != ValidityExhausted || trouble[1].Kind != SlowerThanDrift ||
		trouble[0].Validity > 0 || trouble[1].Elapsed <= trouble[1].Drift || trouble[0].Op != OpAcquire {
		t.Fatalf("clock trouble %+v; want validity exhausted and slower than drift", trouble)
	}
}

func TestAttemptOutcomes(t *testing.T) {
	c := observedClient(t, nil)
	op := testOp(1)
	reentry := op
	reentry.Reentry = true
	notAsked := reply[reentrant.Acquisition]{err: errNotAsked}
	cases := []struct {
		name   string
		a      attempt
		op     reentrant.Op
		only   int
		agreed int
		want   AttemptOutcome
	}{
		{"acquired", attempt{acquired: true}, op, -1, 3, AttemptAcquired},
		{"ctx ended", attempt{err: context.DeadlineExceeded}, op, -1, 0, AttemptCanceled},
		{"late", attempt{err: &QuorumError{Late: true}}, op, -1, 2, AttemptLate},
		{"re-entry found the hold gone", attempt{contended: true, absent: 2}, reentry, -1, 0, AttemptLost},
		{"held by another owner", attempt{contended: true, absent: 2}, op, -1, 0, AttemptContended},
		{"probe met the holder", attempt{contended: true, absent: 1}, op, 1, 0, AttemptContended},
		{"probe won the tie-breaker", attempt{err: &QuorumError{}, replies: []reply[reentrant.Acquisition]{notAsked, {value: reentrant.Acquisition{Acquired: true}}, notAsked}}, op, 1, 1, AttemptProbeWon},
		{"nodes down", attempt{err: &QuorumError{}}, op, -1, 1, AttemptNoQuorum},
		{"split with failures", attempt{contended: true, err: &QuorumError{}}, op, -1, 1, AttemptNoQuorum},
	}
	for _, tc := range cases {
		if got := c.attemptOutcome(tc.a, tc.op, tc.only, tc.agreed); got != tc.want {
			t.Errorf("%s: %q; want %q", tc.name, got, tc.want)
		}
	}
}

func TestLockOutcomes(t *testing.T) {
	cases := []struct {
		acquired bool
		err      error
		want     LockOutcome
	}{
		{true, nil, LockAcquired},
		{false, nil, LockBusy},
		{false, ErrClosed, LockClosed},
		{false, errors.Join(context.DeadlineExceeded, &QuorumError{}), LockTimedOut},
		{false, context.Canceled, LockTimedOut},
		{false, ErrLost, LockLost},
		{false, &QuorumError{}, LockNoQuorum},
		{false, fmt.Errorf("%w: lease", ErrInvalidArgument), LockFailed},
	}
	for _, tc := range cases {
		if got := lockOutcome(tc.acquired, tc.err); got != tc.want {
			t.Errorf("lockOutcome(%v, %v) = %q; want %q", tc.acquired, tc.err, got, tc.want)
		}
	}
}

func TestReleaseOutcomes(t *testing.T) {
	var got []ReleaseInfo
	c := observedClient(t, &Observer{Release: func(_ context.Context, e ReleaseInfo) { got = append(got, e) }})
	m := &c.NewMutex("x").hold
	ctx := context.Background()
	cases := []struct {
		target int64
		err    error
		want   ReleaseOutcome
	}{
		{0, nil, Released},
		{2, nil, ReleaseStillHeld},
		{-1, ErrClosed, ReleaseClosed},
		{-1, ErrNotHeld, ReleaseNotHeld},
		{0, ErrLost, ReleaseLost},
		{1, &QuorumError{}, ReleaseNoQuorum},
	}
	for _, tc := range cases {
		c.released(ctx, m, false, &releaseTally{target: tc.target, reached: 3, agreed: 2}, tc.err)
	}
	c.released(ctx, m, true, &releaseTally{target: -1}, nil) // Close found nothing held: no release
	if len(got) != len(cases) {
		t.Fatalf("%d release events; want %d", len(got), len(cases))
	}
	for i, tc := range cases {
		if e := got[i]; e.Outcome != tc.want || e.Full != (tc.target == 0) || e.Count != max(tc.target, 0) || e.Nodes != 3 {
			t.Errorf("release %d: %+v; want outcome %q, target %d", i, e, tc.want, tc.target)
		}
	}
}

// fakeRedisError stands for an error reply of the server (go-redis's own
// type for them is internal).
type fakeRedisError string

func (e fakeRedisError) Error() string { return string(e) }
func (fakeRedisError) RedisError()     {}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestNodeErrorKinds(t *testing.T) {
	cases := []struct {
		err  error
		want NodeErrorKind
	}{
		{ErrNodeTimeout, NodeTimeout},
		{asNodeTimeout(&net.OpError{Op: "read", Err: timeoutError{}}), NodeTimeout},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, NodeUnreachable},
		{io.EOF, NodeUnreachable},
		{&os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}, NodeUnreachable},
		{redis.ErrClosed, NodeUnreachable},
		{&reentrant.WrongTypeError{Key: "relock:{x}", Type: "string"}, NodeWrongType},
		{fmt.Errorf("%w: 0 of 1 within 50ms", ErrNotReplicated), NodeNotReplicated},
		{fakeRedisError("LOADING Redis is loading the dataset in memory"), NodeServerError},
		{errors.New("relock: release: unexpected reply 7"), NodeOtherError},
	}
	for _, tc := range cases {
		if got := nodeErrorKind(tc.err); got != tc.want {
			t.Errorf("nodeErrorKind(%v) = %q; want %q", tc.err, got, tc.want)
		}
	}
}

func TestNodeErrorsAreTheNodesNotTheCallers(t *testing.T) {
	var got []NodeErrorInfo
	c := observedClient(t, &Observer{NodeError: func(_ context.Context, e NodeErrorInfo) { got = append(got, e) }})

	// A probe's nodes not asked, and answers, are no failure; a timeout is.
	noteNodeErrors(c, context.Background(), []reply[reentrant.Acquisition]{
		{node: 0, err: errNotAsked}, {node: 1, value: reentrant.Acquisition{Acquired: true}}, {node: 2, err: ErrNodeTimeout},
	})
	if len(got) != 1 || got[0].Node != 2 || got[0].Addr != "127.0.0.1:3" || got[0].Op != OpAcquire || got[0].Kind != NodeTimeout {
		t.Fatalf("node errors %+v; want node 2's timeout on acquire", got)
	}

	// Calls cut short by the caller's own ctx are not the nodes' failures.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	noteNodeErrors(c, ctx, []reply[reentrant.ReleaseResult]{{node: 0, err: context.Canceled}, {node: 1, err: fmt.Errorf("%w: %w", reentrant.ErrNotSent, context.Canceled)}})
	if len(got) != 1 {
		t.Fatalf("a cancelled caller's calls reported as node errors: %+v", got[1:])
	}

	// A renewal batch the node failed as a whole is one failure of that node.
	noteNodeErrors(c, context.Background(), []reply[[]reentrant.RenewResult]{
		{node: 0, value: []reentrant.RenewResult{{Held: true}, {Held: false}}},
		{node: 1, value: []reentrant.RenewResult{{Err: io.EOF}, {Err: io.EOF}}},
	})
	if len(got) != 2 || got[1].Node != 1 || got[1].Op != OpRenew || got[1].Kind != NodeUnreachable {
		t.Fatalf("node errors %+v; want node 1's failed renewal batch", got)
	}

	// A background round: one failure per round, not per change.
	c.noteCleanupErrors(2, []reentrant.ChangeResult{{Err: ErrNodeTimeout}, {Err: ErrNodeTimeout}})
	if len(got) != 3 || got[2].Op != OpCleanup || got[2].Node != 2 {
		t.Fatalf("node errors %+v; want one clean-up failure of node 2", got)
	}

	for op, want := range map[NodeOp]NodeOp{nodeOpOf[reentrant.Info](): OpInspect, nodeOpOf[reentrant.SemaphoreState](): OpInspect, nodeOpOf[int64](): OpFence, nodeOpOf[bool](): OpForceUnlock, nodeOpOf[reentrant.ReleaseResult](): OpRelease} {
		if op != want {
			t.Errorf("op %q; want %q", op, want)
		}
	}
}

func TestRenewalBatchEvent(t *testing.T) {
	var got []RenewalInfo
	var trouble []ClockTroubleInfo
	c := observedClient(t, &Observer{
		Renewal:      func(e RenewalInfo) { got = append(got, e) },
		ClockTrouble: func(e ClockTroubleInfo) { trouble = append(trouble, e) },
	})
	ops := []reentrant.Op{testOp(1), testOp(2), {}, testOp(3)} // the third was skipped
	replies := []reply[[]reentrant.RenewResult]{
		{node: 0, value: []reentrant.RenewResult{{Held: true}, {Held: true}, {}, {Held: false}}},
		{node: 1, value: []reentrant.RenewResult{{Held: true}, {Held: true}, {}, {Held: false}}},
		{node: 2, err: ErrNodeTimeout},
	}
	c.renewed(ops, replies, 2, 1, 400*time.Millisecond) // above the default lease's 302 ms drift
	want := RenewalInfo{Locks: 4, Renewed: 2, Failed: 0, Lost: 1, Skipped: 1, Answered: 2, Nodes: 3, Elapsed: 400 * time.Millisecond}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("renewal %+v; want %+v", got, want)
	}
	if len(trouble) != 1 || trouble[0].Kind != SlowerThanDrift || trouble[0].Op != OpRenew || trouble[0].Drift != 302*time.Millisecond {
		t.Fatalf("clock trouble %+v; want one batch slower than its drift", trouble)
	}
}

func TestHoldEventsFollowTheHeldSet(t *testing.T) {
	var held int
	c := observedClient(t, &Observer{Hold: func(e HoldInfo) {
		if e.Held {
			held++
		} else {
			held--
		}
	}})
	m := &c.NewMutex("x").hold
	c.track(m, true)
	c.track(m, true) // already tracked: no event
	if held != 1 {
		t.Fatalf("held %d after tracking one handle twice; want 1", held)
	}
	c.track(m, false)
	c.track(m, false)
	if held != 0 || c.Stats().HeldNow != 0 {
		t.Fatalf("held %d (Stats %d) after untracking; want 0", held, c.Stats().HeldNow)
	}
}

func TestLossReasons(t *testing.T) {
	var got []LossInfo
	c := observedClient(t, &Observer{Loss: func(e LossInfo) { got = append(got, e) }})
	m := &c.NewMutex("x").hold
	lost := make(chan struct{})
	m.lost = lost
	m.markLost(lost, expiredReason(true))
	m.markLost(lost, LossNotHeld) // the same hold: reported once
	if len(got) != 1 || got[0] != (LossInfo{Name: "x", Reason: LossRenewalFailed}) || c.Stats().Losses != 1 {
		t.Fatalf("losses %+v; want one renewal failure", got)
	}
	if expiredReason(false) != LossLeaseExpired {
		t.Fatal("an explicit lease that ran out is lease_expired")
	}
}

package reentrant

import (
	"slices"
	"testing"
	"time"
)

// A prepared Op's calls send what its unprepared copy would: the same
// script, KEYS and ARGV, as the EVALSHA argv go-redis would build.
func TestPreparedCallsSendWhatUnpreparedOnesDo(t *testing.T) {
	key, err := NewKey("", "name")
	if err != nil {
		t.Fatal(err)
	}
	base := Op{Key: key, Owner: "c:o", Lease: 30 * time.Second}.Prepare()
	for _, lease := range []time.Duration{30 * time.Second, 1500 * time.Millisecond} {
		for _, wake := range []Wake{WakeAny, WakeQueue, WakeKeepers, WakeFair} {
			op := base
			op.Lease, op.Count, op.Seq, op.Reentry, op.Ticket, op.Fair, op.Wake = lease, 2, 1000, true, 7, true, wake
			if !op.prepared.fits(op) {
				t.Fatal("a copy of a prepared Op does not fit it")
			}
			checkPrepared(t, "acquire", op.prepared.acquireCall(op), op.acquireCall())
			checkPrepared(t, "release", op.prepared.releaseCall(op, "id"), op.releaseCall("id"))
		}
	}
	other := base
	other.Owner = "c:other"
	if base.prepared.fits(other) {
		t.Fatal("a copy with another owner fits the prepared Op")
	}
	if p := (Op{Key: key, Owner: "c:o", Lease: time.Second, Mode: Read}).Prepare().prepared; p != nil {
		t.Fatal("a Read Op was prepared")
	}
}

func checkPrepared(t *testing.T, what string, got preparedCall, want scriptCall) {
	t.Helper()
	if got.script != want.script || !slices.Equal(got.keys, want.keys) || !slices.Equal(got.args, want.args) {
		t.Fatalf("%s: prepared %v %v %v; want %v %v %v", what, got.script.Name(), got.keys, got.args, want.script.Name(), want.keys, want.args)
	}
	argv := []any{"evalsha", want.script.SHA(), len(want.keys)}
	for _, k := range want.keys {
		argv = append(argv, k)
	}
	if argv = append(argv, want.args...); !slices.Equal(got.argv, argv) {
		t.Fatalf("%s: argv %v; want %v", what, got.argv, argv)
	}
}

// A caller may take a turn until the node's limit of turns is in use
// (DefaultPipelines, or what LimitPipelines set, never below 1).
func TestMayTakeUntilEveryTurnIsInUse(t *testing.T) {
	for _, c := range []struct{ set, want int }{{0, DefaultPipelines}, {-3, 1}, {1, 1}, {2, 2}, {9, 9}} {
		n := NewNode(nil, 0)
		if c.set != 0 {
			n.LimitPipelines(c.set)
		}
		p := n.calls
		for range c.want {
			if !p.mayTake() {
				t.Fatalf("limit set %d: no free turn with %d of %d in use", c.set, p.turns, c.want)
			}
			p.turns++
		}
		if p.mayTake() {
			t.Fatalf("limit set %d: a free turn with all %d in use", c.set, p.turns)
		}
	}
	p := &pipeliner{limit: DefaultPipelines, turns: DefaultPipelines}
	p.passTurn() // nobody queued: the turn is given back
	if !p.mayTake() {
		t.Fatal("no free turn after one was given back")
	}
}

// A node limited to one trip lets further trips leave, up to
// DefaultPipelines, while every trip out has been out longer than
// stuckAfter, and returns to its limit once they are not.
func TestStuckTripsLetFurtherTripsLeave(t *testing.T) {
	p := &pipeliner{limit: 1}
	p.turns = 1
	p.out = []time.Time{time.Now()}
	if p.mayTake() {
		t.Fatal("a free turn past the limit while the one trip out is fresh")
	}
	p.out = []time.Time{time.Now().Add(-2 * stuckAfter)}
	for p.turns < DefaultPipelines {
		if !p.mayTake() {
			t.Fatalf("no free turn with %d in use, every trip out stuck", p.turns)
		}
		p.turns++
	}
	if p.mayTake() {
		t.Fatalf("a free turn with %d in use", p.turns)
	}

	// A queued caller gets a returning turn while the trips out are stuck...
	queued := &call{turn: make(chan struct{}, 1)}
	p.queue = []*call{queued}
	p.passTurn()
	if !queued.given || p.turns != DefaultPipelines {
		t.Fatalf("stuck trips out: queued caller given %v, %d turns in use", queued.given, p.turns)
	}
	// ...but not once a fresh trip is out: the turn is given back.
	p.out = append(p.out, time.Now())
	next := &call{turn: make(chan struct{}, 1)}
	p.queue = append(p.queue, next)
	p.passTurn()
	if next.given || p.turns != DefaultPipelines-1 {
		t.Fatalf("a fresh trip out: queued caller given %v, %d turns in use", next.given, p.turns)
	}
}

// A caller queued behind a fresh trip gets a turn past the limit when its
// node's watch finds the trips out stuck, with no other caller coming.
func TestQueuedCallerIsUnstuck(t *testing.T) {
	p := &pipeliner{limit: 1, turns: 1, out: []time.Time{time.Now()}}
	c := &call{turn: make(chan struct{}, 1)}
	p.mu.Lock()
	p.queue = []*call{c}
	p.watchForStuck()
	p.mu.Unlock()
	defer p.unstick.Stop()
	select {
	case <-c.turn:
	case <-time.After(time.Second):
		t.Fatal("no turn for the queued caller 1 s after the trip out was stuck")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !c.given || p.turns != 2 || p.watching {
		t.Fatalf("given %v, %d turns in use, watching %v; want true, 2, false", c.given, p.turns, p.watching)
	}
}

package lock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/reentrant"
)

// idleCleaner is a one-node Client's cleaner whose drainer counts as
// running, so the queue can be examined without Redis or goroutines.
func idleCleaner() (*Client, *cleaner) {
	// A node without a server behind it: these tests never send.
	c := &Client{nodes: []*reentrant.Node{reentrant.NewNode(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), 0)}}
	w := newCleaner(c, 0)
	w.running = true
	c.cleaners = []*cleaner{w}
	return c, w
}

func testOp(seq int64) reentrant.Op {
	return reentrant.Op{Key: reentrant.Key{Lock: "relock:{x}", Channel: "relock:{x}:released"},
		Owner: "c:o", Lease: time.Second, Count: 1, Seq: seq}
}

func onlyEntry(t *testing.T, w *cleaner) *cleanup {
	t.Helper()
	if len(w.pending) != 1 {
		t.Fatalf("%d entries; want 1 per lock and owner", len(w.pending))
	}
	for _, e := range w.pending {
		return e
	}
	return nil
}

func TestCleanupKeepsTheNewestReleaseAndTheLatestDeadlines(t *testing.T) {
	c, w := idleCleaner()
	now := time.Now()
	c.keepReleasing(testOp(5), 0, now.Add(3*time.Second))
	c.releaseOn(testOp(9), []int{0}, now.Add(time.Second))
	c.releaseOn(testOp(7), []int{0}, now.Add(2*time.Second)) // older: does not replace 9
	e := onlyEntry(t, w)
	if e.release.Seq != 9 {
		t.Fatalf("release seq %d; want the newest, 9", e.release.Seq)
	}
	if !e.deadline.Equal(now.Add(3*time.Second)) || !e.until.Equal(now.Add(3*time.Second)) {
		t.Fatalf("deadline %v until %v; want both the latest, +3s", e.deadline.Sub(now), e.until.Sub(now))
	}
	// Another owner of the same lock is another entry.
	other := testOp(1)
	other.Owner = "c:p"
	c.releaseOn(other, []int{0}, now.Add(time.Second))
	if len(w.pending) != 2 {
		t.Fatalf("%d entries; want one per owner", len(w.pending))
	}
}

// dueRound takes the round due at now, which must hold one entry.
func dueRound(t *testing.T, w *cleaner, now time.Time) []item {
	t.Helper()
	round, _, more := w.take(now)
	if !more || len(round) != 1 {
		t.Fatalf("take: %d entries, more %v; want the one entry due", len(round), more)
	}
	return round
}

func TestCleanupTakesWhatIsDueAndDropsWhatExpired(t *testing.T) {
	c, w := idleCleaner()
	c.releaseOn(testOp(3), []int{0}, time.Now().Add(time.Second))
	// An entry is due from when it was added: now is taken after that (a
	// loaded machine may pause longer than the look-ahead in between).
	now := time.Now()
	round, _, more := w.take(now)
	if !more || len(round) != 1 || round[0].undo == nil || round[0].undo.Op.Seq != 3 || !round[0].undo.Release {
		t.Fatalf("take: %+v, more %v; want the release of seq 3", round, more)
	}
	if id := round[0].undo.ReleaseID; id != "c:o/3" {
		t.Fatalf("release id %q", id)
	}
	// Past its deadline, once sent, the release is dropped, and the queue
	// is empty.
	round[0].rel = 0
	w.settle(round, []reentrant.ChangeResult{{Err: errors.New("boom")}})
	round, _, more = w.take(now.Add(2 * time.Second))
	if more || len(round) != 0 || len(w.pending) != 0 || w.running {
		t.Fatalf("after the deadline: round %d, more %v, %d pending, running %v", len(round), more, len(w.pending), w.running)
	}
}

func TestCleanupSettleRetriesFailuresAndResendsUnknownNodes(t *testing.T) {
	c, w := idleCleaner()
	c.releaseOn(testOp(3), []int{0}, time.Now().Add(time.Minute))
	now := time.Now()
	round := dueRound(t, w, now)
	round[0].rel = 0
	w.settle(round, []reentrant.ChangeResult{{Err: errors.New("boom")}})
	e := onlyEntry(t, w)
	if !e.due.After(now) {
		t.Fatal("a failed release must come due again after a backoff")
	}
	round = dueRound(t, w, e.due)
	round[0].rel = 0
	w.settle(round, []reentrant.ChangeResult{{Released: reentrant.Released}})
	if len(w.pending) != 0 {
		t.Fatal("a release that got through once is done")
	}

	// An unknown node: sent again after it got through, until its deadline.
	c.keepReleasing(testOp(5), 0, time.Now().Add(time.Minute))
	round = dueRound(t, w, time.Now())
	round[0].rel = 0
	settled := time.Now() // the backoff may be as short as 5 ms: compare with before the settle
	w.settle(round, []reentrant.ChangeResult{{Released: reentrant.NotHeld}})
	if e := onlyEntry(t, w); !e.due.After(settled) || e.release.Seq != 5 {
		t.Fatalf("the undo of an unknown node must be sent again later; entry %+v", e)
	}
}

func TestCleanupSettleKeepsWorkMergedDuringTheRound(t *testing.T) {
	c, w := idleCleaner()
	c.releaseOn(testOp(3), []int{0}, time.Now().Add(time.Minute))
	round := dueRound(t, w, time.Now())
	c.releaseOn(testOp(8), []int{0}, time.Now().Add(time.Minute)) // arrives while round is out
	round[0].rel = 0
	w.settle(round, []reentrant.ChangeResult{{Released: reentrant.Released}})
	if e := onlyEntry(t, w); e.release.Seq != 8 {
		t.Fatalf("release seq %d; the newer release must survive the older one's success", e.release.Seq)
	}
}

func TestCleanupUndoOfALateReplyGoesAtOnce(t *testing.T) {
	// The acquire's client may wait seconds for its reply (go-redis's
	// defaults), holding the node meanwhile: the undo does not wait for it.
	for _, tc := range []struct {
		name  string
		reply reentrant.Acquisition
		err   error
		kept  bool // sent again until the deadline
	}{
		{"took the lock", reentrant.Acquisition{Acquired: true}, nil, false},
		{"found another holder", reentrant.Acquisition{}, nil, false},
		{"no reply", reentrant.Acquisition{}, ErrNodeTimeout, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, w := idleCleaner()
			late := &outcome[reentrant.Acquisition]{done: make(chan struct{})}
			deadline := time.Now().Add(time.Minute)
			c.undoLate(testOp(4), 0, late, deadline)
			round, _, _ := w.take(time.Now())
			if len(round) != 1 || round[0].undo == nil {
				t.Fatal("the undo waits for the late reply")
			}
			if undo := round[0].undo.Op; undo.Seq != 5 || undo.Count != 0 {
				t.Fatalf("undo %+v; want count 0 with the reserved seq 5", undo)
			}
			round[0].rel = 0
			w.settle(round, []reentrant.ChangeResult{{Released: reentrant.Released}})
			if round, _, _ := w.take(time.Now().Add(time.Second)); len(round) != 0 {
				t.Fatal("sent again before the late reply said whether it is needed")
			}

			late.value, late.err = tc.reply, tc.err
			close(late.done)
			round, _, _ = w.take(time.Now().Add(2 * time.Second))
			if !tc.kept {
				if len(round) != 0 || len(w.pending) != 0 {
					t.Fatal("the undo got through and the reply needs no more, yet the entry stays")
				}
				return
			}
			if len(round) != 1 || round[0].undo == nil {
				t.Fatal("no reply: the undo is not sent again")
			}
			if !onlyEntry(t, w).until.Equal(deadline) {
				t.Fatal("no reply: not kept until the attempt's deadline")
			}
		})
	}
}

func TestCleanupEarlyUndoOfALateReplyIsRetriedUntilItGetsThrough(t *testing.T) {
	c, w := idleCleaner()
	late := &outcome[reentrant.Acquisition]{done: make(chan struct{})}
	c.undoLate(testOp(4), 0, late, time.Now().Add(time.Minute))
	round, _, _ := w.take(time.Now())
	round[0].rel = 0
	w.settle(round, []reentrant.ChangeResult{{Err: ErrNodeTimeout}})
	round, _, _ = w.take(time.Now().Add(time.Second))
	if len(round) != 1 || round[0].undo == nil {
		t.Fatal("a failed early undo is not retried while the reply is late")
	}
}

func TestCleanupLateReplyMergedWithOtherWorkIsUnknown(t *testing.T) {
	c, w := idleCleaner()
	deadline := time.Now().Add(time.Minute)
	c.keepReleasing(testOp(2), 0, deadline.Add(-time.Second))
	c.undoLate(testOp(4), 0, &outcome[reentrant.Acquisition]{done: make(chan struct{})}, deadline)
	e := onlyEntry(t, w)
	if e.late != nil || !e.until.Equal(deadline) || e.release.Seq != 5 {
		t.Fatalf("entry %+v: want the newest undo, kept until the late attempt's deadline", e)
	}
}

func TestCleanupSendsAKeptReleaseOneLastTimeAtItsEnd(t *testing.T) {
	c, w := idleCleaner()
	until := time.Now().Add(30 * time.Millisecond)
	c.keepReleasing(testOp(3), 0, until)
	round, _, _ := w.take(time.Now())
	round[0].rel = 0
	w.settle(round, []reentrant.ChangeResult{{Released: reentrant.NotHeld}})
	e := onlyEntry(t, w)
	if e.due.After(until) {
		t.Fatalf("next send %v after the end; want it at the end at the latest", e.due.Sub(until))
	}
	// Even when the drainer wakes after the end, the last send goes out.
	e.due, e.once = until, true
	time.Sleep(time.Until(until) + 10*time.Millisecond)
	round, _, _ = w.take(time.Now())
	if len(round) != 1 || round[0].undo == nil {
		t.Fatal("the last send at the end was dropped")
	}
	round[0].rel = 0
	w.settle(round, []reentrant.ChangeResult{{Released: reentrant.NotHeld}})
	if len(w.pending) != 0 {
		t.Fatal("after its last send the release is done")
	}
}

// Close's flush carries every queued release, in round trips of at most
// maxCleanupBatch: before 2026-12-04 it took the first 1,000 and the rest
// were dropped with the queue.
func TestCleanupFlushCarriesEveryQueuedRelease(t *testing.T) {
	c, w := idleCleaner()
	const queued = 2*maxCleanupBatch + 500
	for i := range queued {
		op := testOp(3)
		op.Owner = fmt.Sprintf("c:o%d", i)
		c.releaseOn(op, []int{0}, time.Now().Add(time.Second))
	}
	batches := w.flushBatches()
	sent := map[string]bool{}
	for _, b := range batches {
		if len(b) > maxCleanupBatch {
			t.Fatalf("a round trip of %d changes; want at most %d", len(b), maxCleanupBatch)
		}
		for _, ch := range b {
			sent[ch.Op.Owner] = true
		}
	}
	if len(batches) != 3 || len(sent) != queued {
		t.Fatalf("%d batches carrying %d releases; want 3 carrying all %d", len(batches), len(sent), queued)
	}
}

func TestCleanupSendsEveryReleaseOnceEvenPastItsDeadline(t *testing.T) {
	c, w := idleCleaner()
	c.releaseOn(testOp(3), []int{0}, time.Now().Add(-time.Second))
	round, _, _ := w.take(time.Now())
	if len(round) != 1 || round[0].undo == nil {
		t.Fatal("a release whose deadline had passed when it was queued was never sent")
	}
	round[0].rel = 0
	w.settle(round, []reentrant.ChangeResult{{Err: errors.New("boom")}})
	if round, _, _ = w.take(time.Now().Add(time.Hour)); len(round) != 0 || len(w.pending) != 0 {
		t.Fatal("past its deadline a failed release is not retried")
	}
}

// A round that runs out of time doubles the next one's timeout, up to a
// tenth of the lease; an answer starts over from the release timeout; a
// round that failed otherwise (the node refused the connection, the
// Client closed) changes nothing.
func TestCleanupRoundTimeoutDoublesAfterTimeoutsOnly(t *testing.T) {
	c, w := idleCleaner()
	c.opts = Options{NodeTimeout: 100 * time.Millisecond, Lease: 30 * time.Second}
	c.waits = newNodeWaits(c.opts)
	timedOut := []reentrant.ChangeResult{{Err: context.DeadlineExceeded}}
	refused := []reentrant.ChangeResult{{Err: errors.New("dial tcp: connection refused")}}
	answered := []reentrant.ChangeResult{{Err: context.DeadlineExceeded}, {}}

	want := []time.Duration{400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, 3 * time.Second, 3 * time.Second}
	for i, d := range want {
		if got := w.roundTimeout(); got != d {
			t.Fatalf("after %d rounds timed out: round timeout %v; want %v", i, got, d)
		}
		w.noteRound(timedOut)
	}
	w.noteRound(refused)
	if got := w.roundTimeout(); got != 3*time.Second {
		t.Fatalf("after a refused round: %v; want it unchanged, 3s", got)
	}
	w.noteRound(answered)
	if got := w.roundTimeout(); got != 400*time.Millisecond {
		t.Fatalf("after a round with an answer: %v; want the release timeout, 400ms", got)
	}

	// A release timeout above a tenth of the lease is never cut.
	c.opts = Options{NodeTimeout: time.Second, Lease: 10 * time.Second}
	c.waits = newNodeWaits(c.opts)
	w.noteRound(timedOut)
	if got := w.roundTimeout(); got != 4*time.Second {
		t.Fatalf("release timeout 4s, lease 10s: %v; want 4s", got)
	}
}

// A release's ID starts with releasesOf its owner (its own waiters ignore
// it), names its sequence number, and costs one allocation.
func TestReleaseIDOfAnOwnersRelease(t *testing.T) {
	op := testOp(1234567)
	id := releaseID(op)
	if want := releasesOf(op.Owner) + "1234567"; id != want {
		t.Fatalf("releaseID = %q; want %q", id, want)
	}
	if n := testing.AllocsPerRun(100, func() { _ = releaseID(op) }); n != 1 {
		t.Fatalf("%v allocations per release ID; want 1", n)
	}
}

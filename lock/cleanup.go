package lock

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relock-go/relock/internal/backoff"
	"github.com/relock-go/relock/reentrant"
)

// cleaner does one node's background clean-ups: the undo of failed
// acquires, the releases that did not get through, and the repair of locks
// the node lost. The work is a queue with one entry per (lock, owner), so it
// grows with the locks being cleaned up, never the goroutines: one goroutine
// per node drains it while it is not empty, sending everything due in one
// pipelined round trip.
type cleaner struct {
	c    *Client
	node int
	wake chan struct{} // new work may be due before the drainer would wake

	mu      sync.Mutex
	pending map[cleanupKey]*cleanup
	running bool // a drainer goroutine is on the queue

	// timedOut counts the rounds in a row that ran out of time; each one
	// doubles the next round's timeout (see roundTimeout). The drainer
	// writes it; Close's flush reads it too, while a drainer may still run.
	timedOut atomic.Int32
}

// cleanupKey names one owner's hold of one lock, of one kind: an owner's
// holds of different kinds (an RWMutex's read and write holds) number
// their operations apart, so their releases never merge.
type cleanupKey struct {
	lock, owner string
	mode        reentrant.Mode
}

// cleanup is what is left to do for one owner of one lock on one node.
//
// Only the owner's newest release matters: its sequence number is above
// those of every older operation, so sending it also undoes any older
// acquire that is still on its way to the node. Merging releases keeps the
// newest one and the latest of their deadlines.
type cleanup struct {
	release  reentrant.Op // the release to send; Owner is "" when none
	deadline time.Time    // a failed release is retried until then
	// until: the release is sent again and again until then, even after it
	// got through, because the node's state is unknown: an acquire queued
	// there (a paused node, a lost reply) may land after any one release.
	until time.Time
	// late, when set, is the acquire the release undoes, still running: its
	// reply decides whether to send again until lateUntil (no reply) or not
	// (it took the lock, or found another holder). The release goes out at
	// once all the same, without waiting for that reply: the acquire may
	// hold the node for as long as its client waits (go-redis's defaults: a
	// 3 s read timeout, 3 retries), and a release that gets there first
	// leaves a tombstone that refuses it. undoneEarly: it got through.
	late        *outcome[reentrant.Acquisition]
	lateUntil   time.Time
	undoneEarly bool

	repair   *hold     // write the holder's count back on the node, once
	repairBy time.Time // or give up then: the next renewal asks again
	// fillIn: the repair is a fill-in (see fillInLater): sent again, with
	// backoff, while another owner's hold refuses it, until repairBy. It
	// carries the owner's ticket, so that it takes the owner out of the
	// node's queue where its acquisition was refused with it.
	fillIn bool
	ticket int64

	due time.Time
	// once: the release goes out once more before it may expire (it is new,
	// or this is its last send, at its end).
	once  bool
	retry backoff.Backoff
	gen   int // grows with each change, so a round's result never drops newer work
}

// Clean-ups retry with backoff from a few ms to a second, so a node that is
// down costs about one round trip a second, however many locks wait on it.
const (
	cleanupFirstRetry = 10 * time.Millisecond
	cleanupMaxRetry   = time.Second
)

func newCleaner(c *Client, node int) *cleaner {
	return &cleaner{c: c, node: node, wake: make(chan struct{}, 1), pending: make(map[cleanupKey]*cleanup)}
}

// callTimeout bounds one background round trip to a node: a release's
// wait for that node (fixed, or adapted to its round trips).
func (c *Client) callTimeout(node int) time.Duration {
	d, _ := c.waits.wait(node, kindRelease, c.opts.Lease)
	return d
}

// maxCleanupDoublings bounds how often a cleaner doubles its round timeout
// (and keeps the shift in range); the lease's tenth caps it first.
const maxCleanupDoublings = 8

// roundTimeout bounds the drainer's next round trip: the node's release
// timeout, doubled for each round in a row that ran out of time, up to a
// tenth of the lease (never below the release timeout itself). Nobody
// waits for a clean-up, and a round that always times out never lands: a
// link slower than a fixed NodeTimeout's release wait (or a reconnect that
// pays the link's delay more than once) would leave each undone attempt
// and each Unlock's missing node held until its lease ran out.
func (w *cleaner) roundTimeout() time.Duration {
	base := w.c.callTimeout(w.node)
	return min(base<<min(w.timedOut.Load(), maxCleanupDoublings), max(base, w.c.opts.Lease/10))
}

// noteRound counts a round that ran out of time (every change that was
// sent failed with a timeout), and starts over after one that got an
// answer.
func (w *cleaner) noteRound(results []reentrant.ChangeResult) {
	timedOut := false
	for _, r := range results {
		switch {
		case r.Err == nil:
			w.timedOut.Store(0)
			return
		case errors.Is(asNodeTimeout(r.Err), ErrNodeTimeout):
			timedOut = true
		}
	}
	if timedOut {
		w.timedOut.Add(1)
	}
}

// setBack undoes the acquire op on the given nodes, which took it: one
// release that gets through is enough; failures are retried until deadline.
func (c *Client) setBack(op reentrant.Op, nodes []int, deadline time.Time) {
	c.releaseOn(undoOf(op), nodes, deadline)
}

// releaseOn sends op's release to the given nodes in the background,
// retrying each until it gets through or deadline passes.
func (c *Client) releaseOn(op reentrant.Op, nodes []int, deadline time.Time) {
	c.releaseAfter(op, nodes, time.Time{}, deadline)
}

// releaseAfter is releaseOn for a hold whose owner was told it lost it:
// op goes out no earlier than notBefore, the hold's ValidUntil (zero: at
// once). The owner may count on the hold until then (its loss is reported
// a little before), so another owner must not be let in sooner, as freeing
// the nodes at once would. A newer release of the owner merged in since
// goes at once.
func (c *Client) releaseAfter(op reentrant.Op, nodes []int, notBefore, deadline time.Time) {
	for _, node := range nodes {
		c.cleaners[node].add(op, func(e *cleanup, _ bool) {
			e.deadline = later(e.deadline, deadline)
			if !notBefore.IsZero() && e.release.Seq == op.Seq {
				// Past the look-ahead too, which sends what is due soon.
				e.due = later(e.due, notBefore.Add(cleanupLookAhead))
			}
		})
	}
}

// keepReleasing sends op's release to node again and again until deadline:
// the node's state is unknown, and an older acquire may still land there.
func (c *Client) keepReleasing(op reentrant.Op, node int, deadline time.Time) {
	c.cleaners[node].add(op, func(e *cleanup, _ bool) {
		e.deadline = later(e.deadline, deadline)
		e.until = later(e.until, deadline)
	})
}

// undoLate undoes the acquire whose reply from node is late: at once, and
// again until deadline if the reply, when it comes, leaves the node's state
// unknown.
func (c *Client) undoLate(op reentrant.Op, node int, late *outcome[reentrant.Acquisition], deadline time.Time) {
	undo := undoOf(op)
	c.cleaners[node].add(undo, func(e *cleanup, alone bool) {
		e.deadline = later(e.deadline, deadline)
		if alone && e.until.IsZero() {
			// Nothing else to send: the reply decides.
			e.late, e.lateUntil = late, deadline
			return
		}
		// Merged with another release of the owner (an earlier attempt's,
		// whose hold a later attempt may have carried on): assume the worst.
		e.until = later(e.until, deadline)
	})
}

// repairLater writes m's current count back on the given nodes, which
// answered "not held" while a quorum holds the lock: one attempt, made by
// by at the latest. The repair is an acquire with the current count: it changes
// nothing where another owner took the lock meanwhile.
func (c *Client) repairLater(h *hold, nodes []int, by time.Time) {
	for _, node := range nodes {
		w := c.cleaners[node]
		w.mu.Lock()
		e := w.entry(h.key.Lock, h.owner, h.kind.mode)
		e.repair, e.repairBy, e.fillIn, e.ticket = h, later(e.repairBy, by), false, 0
		w.mu.Unlock()
		w.start()
	}
}

// fillInLater writes h's hold on the given nodes, where another owner's
// hold refused the acquisition that won the quorum, once that hold is gone:
// the acquisition followed a hand-off, or kept the tie-breaker, so the
// owner it met there is the releaser whose release is still on its way, or
// a contender whose undo is. Without it the new holder would hold one node
// short of every node until its first renewal's repair, a third of a
// lease later, and a node failing meanwhile would cost it the lock. The
// first try goes after cleanupFirstRetry, and a refused one is tried again
// with the clean-ups' backoff until by, when the renewal takes over.
//
// ticket is the Lock call's place in the queue: the acquisition, refused
// there with it, registered the owner there.
func (c *Client) fillInLater(h *hold, nodes []int, by time.Time, ticket int64) {
	for _, node := range nodes {
		w := c.cleaners[node]
		w.mu.Lock()
		e := w.entry(h.key.Lock, h.owner, h.kind.mode)
		if e.repair == nil {
			e.fillIn, e.ticket = true, ticket
		}
		e.repair, e.repairBy = h, later(e.repairBy, by)
		if e.release.Owner == "" {
			e.due = e.due.Add(cleanupFirstRetry) // the release it waits for is a round trip away
		}
		w.mu.Unlock()
		w.start()
	}
}

// add merges the release op into the entry of its lock and owner, keeping
// the newer one, lets set adjust the entry's deadlines, and starts the
// drainer.
func (w *cleaner) add(op reentrant.Op, set func(e *cleanup, alone bool)) {
	w.mu.Lock()
	e := w.entry(op.Key.Lock, op.Owner, op.Mode)
	alone := e.release.Owner == "" // no other release of the owner is pending here
	if e.late != nil {
		// Two operations to reason about: treat the late one as unknown.
		e.until = later(e.until, e.lateUntil)
		e.deadline = later(e.deadline, e.lateUntil)
		e.late, e.undoneEarly = nil, false
	}
	if alone || op.Seq > e.release.Seq {
		e.release, e.once = op, true // every release is sent at least once
	}
	set(e, alone)
	w.mu.Unlock()
	w.start()
}

// entry returns the entry of (lock, owner), made due now. The caller holds
// w.mu.
func (w *cleaner) entry(lock, owner string, mode reentrant.Mode) *cleanup {
	k := cleanupKey{lock, owner, mode}
	e := w.pending[k]
	if e == nil {
		e = &cleanup{retry: backoff.Backoff{First: cleanupFirstRetry, Max: cleanupMaxRetry, Jitter: true}}
		w.pending[k] = e
	}
	e.gen++
	e.due = time.Now()
	return e
}

// undoOf is the release that takes back op: one hold fewer, with the
// sequence number the caller reserved right after op's.
func undoOf(op reentrant.Op) reentrant.Op {
	undo := op
	undo.Count = op.Count - 1
	undo.Seq = op.Seq + 1
	return undo
}

// releaseID is the payload published when op releases a lock: the same on
// every node for one release, so waiters count the N copies once.
func releaseID(op reentrant.Op) string {
	var seq [20]byte
	digits := strconv.AppendInt(seq[:0], op.Seq, 10)
	var id strings.Builder // one allocation, where a + b + c makes three
	id.Grow(len(op.Owner) + 1 + len(digits))
	id.WriteString(op.Owner)
	id.WriteByte('/')
	id.Write(digits)
	return id.String()
}

// releasesOf is the prefix of every release ID of owner: its waiters ignore
// them (the undo of their own failed attempt frees nothing they wait for).
func releasesOf(owner string) string { return owner + "/" }

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

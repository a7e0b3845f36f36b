package lock

import (
	"context"
	"errors"
	"hash/fnv"
	"time"

	"github.com/relock-go/relock/internal/abtest"
	"github.com/relock-go/relock/internal/backoff"
	"github.com/relock-go/relock/reentrant"
)

// Contention: the tie-breaker.
//
// When a lock is released, waiters of several processes try for it at once.
// Under plain Redlock each contacts every node; they split the nodes between
// them, none reaches a quorum, all undo, and the round repeats. relock breaks
// the tie with one node per lock name, its tie-breaker: node
// hash(lock key) mod N, the same in every process as long as every process
// lists the same nodes in the same order (Options.Nodes says so).
//
//  1. A first attempt (a Lock call's first try, or any TryLock) goes to
//     every node, as in Redlock, unless the handle met contention lately
//     (see 3). Uncontended, nothing else happens.
//  2. A failed attempt that took the tie-breaker keeps what it took instead
//     of undoing it, and retries when woken (its process wakes it before
//     its other waiters). Only one owner can hold the tie-breaker at a time,
//     so only one contender keeps: the others undo, their undos' releases
//     wake it, and its next attempt finds their nodes free. Someone always
//     wins, and nobody undoes a winning position. But an attempt that
//     one other owner refused on a quorum of the nodes has no tie to
//     break: that owner holds the lock without the tie-breaker (the node
//     lost its hold: it restarted empty, or failed over to a replica that
//     never saw it), and its renewal is about to write the hold back there.
//     Such an attempt (its replies name the owner, reentrant.Op.AskHolder)
//     gives the tie-breaker back at once and silently, and its waiter is
//     woken by that holder's releases of the other nodes (see mayKeep),
//     unless a hand-off named it: then the owner is most likely the
//     releaser, its releases still on their way.
//  3. A waiter woken by a release whose last attempt met another holder on
//     the tie-breaker asks the tie-breaker alone (a probe: one script on one
//     node). If it gets it, it goes on at once to every node, as in 2; if
//     not, it sleeps again having cost one script. Of the waiters that wake
//     across all processes, only the one that wins the tie-breaker contacts
//     the other nodes.
//
//     A Lock of a handle whose Lock met another holder within the last
//     lease expects contention: its first attempt is already a probe.
//     Where a released lock is taken
//     again at once by its last holder while its waiter wakes, the two
//     would otherwise split the nodes; the probe gives the waiter, who
//     goes straight to every node, a round trip's head start.
//  4. Who wakes. The tie-breaker also keeps the lock's wait queue
//     (reentrant.Key.Queue): a blocking Lock whose attempt found another
//     owner holding the tie-breaker joins it, with a ticket drawn once per
//     Lock call (its wall-clock time) and carried from its first attempt
//     on (the first attempt's to the tie-breaker alone, see queueing).
//     A hold taken on a node where the owner is surely not registered
//     skips the dequeue (reentrant.Op.Unqueued; hold.queued keeps where
//     it may be): an uncontended Lock never touches the queue, and a
//     hand-off's target, whose entry the release took out, pays no
//     dequeue on the tie-breaker. A release that frees the lock on the
//     tie-breaker takes the lowest ticket out of the queue and names that
//     owner in its message (a hand-off), with the owner after it; a
//     release that finds the queue empty publishes nothing, since every
//     waiting Lock joined the queue when refused. Across all processes
//     exactly one waiter wakes, and it goes
//     straight to every node at once, with no probe and no race. The other
//     nodes' releases wake only keepers (2), and only where one waits: an
//     attempt that carries a ticket and is refused on a node registers
//     there (in that node's copy of the queue key, which only the
//     tie-breaker orders), and a release there publishes for keepers only
//     when that key exists. A target whose attempt overtook the release on
//     some node keeps (it holds the tie-breaker), registered there, and
//     that node's release wakes it; one that wins through the other nodes
//     fills that node in once the release reaches it (Client.fillInLater),
//     instead of holding one node short until its first renewal's repair.
//     A plain hand-off thus costs one message
//     where it cost one per node, each read by every subscribed process.
//     The tie-breaker also keeps a handed-off lock for its target for a
//     moment (reentrant.Op.TakesTurn): another waiting owner that asks
//     there meanwhile, typically the releaser locking again at once, is
//     refused and queued instead of taking the tie-breaker from under the
//     target, which would leave both with part of the nodes.
//     If the hand-off's target does not take the lock (it died, or gave
//     up), the next in line wakes by itself shortly after
//     (Options.RetryDelay; the reservation lapses by then) and
//     probes, and a target that gave up leaves the queue at once. When
//     the tie-breaker's release fails, Unlock announces the release on the
//     nodes that did free the lock, for any waiter, as before the queue.
//     (Without the queue, abtest.NoWaitQueue, the A/B's "before": every
//     node announces a release, and one waiter per process wakes and
//     probes as in 3.)
//
// Safety is the quorum rule's alone: a kept partial hold is a partial hold
// like any other, held under its lease, and a contender that gives up (ctx
// ended, Close) undoes everything it kept. The tie-breaker only decides who
// goes on trying. Keeping is bounded in time: a contender keeps for at most
// one lease, then gives everything back and waits as anyone else (so two
// processes that disagree on the node order cannot block each other for
// longer). A tie-breaker that is down or does not answer makes everyone
// fall back to 1: plain Redlock attempts, which still win, less cheaply.
// A waiter it does not answer is not in the queue, so no hand-off names it:
// the other nodes' releases wake it, as they wake keepers, and when the
// attempt a wake led to meets a holder (the release is still on its way to
// some node, and its later copies wake no one) it looks again with doubling
// delays (see contender.rechecks) rather than sleep out the holder's lease.

// wakeOn is how the release op that frees its lock on node announces it:
// a hand-off from the tie-breaker, a copy for keepers from the others (see
// 4 above), or, with the contention rules off (or a hold of a mode they do
// not apply to, see contends), a copy for any waiter. handOff says the
// tie-breaker's release of the same op hands the lock off: an Unlock of a
// hold that took the tie-breaker. Without it (a clean-up, or a hold that
// never had the tie-breaker) the copies for keepers say so, and no process
// wakes a waiter of its own for want of a hand-off.
func (c *Client) wakeOn(node int, op reentrant.Op, handOff bool) reentrant.Wake {
	atTie := node == c.tieBreaker(op.Key)
	switch {
	case op.Fair && atTie:
		return reentrant.WakeFair
	case op.Fair:
		// A fair lock's other nodes wake keepers, whatever the switches.
	case c.splitVotes || c.noQueue || !contends(op.Mode):
		return reentrant.WakeAny
	case atTie && len(c.nodes) == 1:
		return reentrant.WakeQueueAlone // no acquire takes turns: nothing to reserve
	case atTie:
		return reentrant.WakeQueue
	}
	if !handOff {
		return reentrant.WakeCleanup
	}
	return reentrant.WakeKeepers
}

// tieBreaker returns the index of key's tie-breaker node.
func (c *Client) tieBreaker(key reentrant.Key) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key.Lock))
	return int(h.Sum32() % uint32(len(c.nodes)))
}

// contender is one blocking Lock call's state in the contention protocol.
type contender struct {
	enabled bool // the tie-breaker rules apply (several nodes, a waiting Lock)
	tie     int  // the tie-breaker node

	probe bool // the next attempt asks the tie-breaker alone

	// keeping: the last attempt failed but kept the nodes it took, the
	// tie-breaker among them; kept is that attempt, to undo if the call
	// ends without the lock. keepUntil bounds the keeping: one lease from
	// the first time this Lock call kept.
	keeping   bool
	kept      reentrant.Op
	keptTry   attempt
	keepUntil time.Time
	keeps     int // failed attempts kept in a row
	// keptFull: the keeping was decided on an attempt to every node (see
	// mayKeep), not only on a probe of the tie-breaker.
	keptFull bool
	// handOff: the attempt being settled followed a hand-off that named
	// this waiter.
	handOff bool
	// yielded: the last attempt took the tie-breaker and gave it back,
	// quietly, to an owner that holds a quorum without it (see settle).
	yielded bool

	// queue: this Lock call waits in the lock's queue on the tie-breaker
	// (see 4 above); ticket is its place there, drawn when the call
	// begins. The tie-breaker rules need several nodes, the queue does
	// not. firstTry: no attempt of the call went out yet (see queueing).
	queue    bool
	ticket   int64
	firstTry bool
	fair     bool
	// expect: what the next attempt most likely finds (reentrant.Op.Expect):
	// another holder after a refusal with no sleep since, or when the
	// handle met contention lately; the lock handed off after a hand-off.
	expect reentrant.Expectation
	// tieLost: the last attempt got no answer from the tie-breaker, so no
	// hand-off will name this waiter; it is woken by the other nodes'
	// releases instead, as keepers are.
	tieLost bool

	// rechecks: how many times in a row the waiter has looked again
	// shortly, rather than sleep out the holder's lease, after an attempt
	// that met a holder just after a release woke it (0: it sleeps as
	// usual). A probe that meets a holder on the tie-breaker looks once:
	// the tie-breaker's own release, if still on its way, hands the lock
	// off. A waiter the tie-breaker does not answer (tieLost) hears no
	// hand-off, and the copies of one release wake a process once, so a
	// release still on its way to one of the other nodes (a slow link, a
	// loaded holder) would find it asleep: it looks again up to
	// maxRechecks times, each delay twice the last.
	rechecks int
}

// maxRechecks bounds a tie-lost waiter's looks after a wake: the delays add
// up to 127 retry delays (2.5 s with the default), and the last is 64, the
// longest a keeper waits between looks. A release slower than that still
// reaches the waiter at the holder's lease end, as before.
const maxRechecks = 7

func newContender(c *Client, key reentrant.Key, wait, fair bool) *contender {
	k := &contender{
		enabled: wait && len(c.nodes) > 1 && !c.splitVotes,
		queue:   wait && (fair || !c.splitVotes && !c.noQueue),
		tie:     c.tieBreaker(key),
		fair:    fair,
	}
	if k.queue {
		// The waiter asks with its ticket from the first attempt: refused,
		// it is queued at once, so a release that finds the queue empty
		// has no one to tell.
		k.ticket = time.Now().UnixMicro()
		k.firstTry = true
	}
	return k
}

// queueing is how one attempt of a waiting Lock meets the wait queue.
type queueing struct {
	// first: no attempt of the Lock call went out yet. Its ticket goes to
	// the tie-breaker alone: registered on another node, its process would
	// hear that node's copies for keepers and, with no hand-off for it
	// among them, wake a waiter for nothing.
	first bool
	tie   int
	// queued: the nodes where the owner may be registered in the queue
	// key (hold.queued). Elsewhere a hold taken skips the dequeue
	// (reentrant.Op.Unqueued). A fair lock's owner may be queued anywhere
	// (its turn is read from the queue): it always dequeues.
	queued nodeSet
	fair   bool
}

// ticketTo reports whether node i, of nodes, gets the ticket.
func (q queueing) ticketTo(i, nodes int) bool { return !q.first || nodes == 1 || i == q.tie }

// unqueued reports whether the owner is surely not registered on node i.
func (q queueing) unqueued(i int) bool { return !q.fair && !q.queued.has(i) }

// after returns where the owner may be registered after the attempt a,
// which went out with the ticket: where it was refused or got no answer,
// not where it took the lock (the script dequeued it there).
func (q queueing) after(c *Client, a attempt) nodeSet {
	queued := q.queued
	for i, r := range a.replies {
		switch {
		case !q.ticketTo(i, len(c.nodes)), r.err != nil && c.nodes[i].NeverReached(r.err):
			// No ticket went there.
		case r.err == nil && r.value.Acquired:
			queued = queued.without(i)
		default:
			queued = queued.with(i)
		}
	}
	return queued
}

// target is the node the next first-hold attempt goes to alone, or -1 for
// every node.
func (k *contender) target() int {
	if k.enabled && k.probe && !k.keeping {
		return k.tie
	}
	return -1
}

// settle decides what becomes of a failed first-hold attempt a (of op):
// kept or undone, and what the next attempt will be. It reports whether to
// retry at once rather than sleep (a probe that won the tie-breaker). woken
// says a release's wake led to the attempt.
func (k *contender) settle(c *Client, op reentrant.Op, a attempt, lease time.Duration, woken bool) (retryNow bool) {
	tie := tieReply(a, k.tie)
	k.tieLost = k.queue && ctxAlive(a) && tie.err != nil && !errors.Is(tie.err, errNotAsked)
	won := tie.err == nil && tie.value.Acquired
	handOff := k.handOff
	k.handOff = false
	now := time.Now()
	if k.enabled && won && ctxAlive(a) && k.mayKeep(a, handOff) {
		if k.keepUntil.IsZero() {
			k.keepUntil = now.Add(lease) // once per Lock call: after it, no more keeping
		}
		if now.Before(k.keepUntil) {
			c.undo(op, a, true)
			probed := k.probe
			k.keeping, k.kept, k.keptTry = true, op, a
			k.keptFull, k.yielded = k.keptFull || !probed, false
			k.keeps++
			k.probe = false
			return probed
		}
	}
	// An attempt refused by one owner holding a quorum gives the
	// tie-breaker back without a word: a hand-off would pass it to the next
	// waiter, who would meet the same holder, and so on from waiter to
	// waiter, each taking it from under the holder's repair. Such a waiter
	// is woken as keepers are (first): no hand-off from the tie-breaker
	// will come while that holder lacks it there.
	k.yielded = won && a.quorumHolder != ""
	if k.yielded {
		op = quietly(op)
	}
	k.abandon(c, k.yielded) // what earlier attempts kept: this one may not have reached those nodes
	c.undo(op, a, false)
	k.keeps = 0
	switch {
	case won:
		k.rechecks = 0
	case woken && (k.probe || k.tieLost):
		k.rechecks = 1
	case k.rechecks > 0 && k.rechecks < maxRechecks && k.tieLost:
		k.rechecks++
	default:
		k.rechecks = 0
	}
	// Probe next time only if another owner holds the tie-breaker: it, or
	// whoever wins it, goes on, and this waiter sleeps until a release.
	k.probe = k.enabled && tie.err == nil && !tie.value.Acquired && !tie.value.Stale && !tie.value.Missing
	return false
}

// mayKeep reports whether a failed attempt a that took the tie-breaker may
// keep it. Keeping breaks a tie between contenders; it must not hold the
// tie-breaker from an owner that holds a quorum of the other nodes (its
// hold on the tie-breaker was lost: the node restarted empty or failed over
// to a replica that never saw it), whose renewal is about to write its hold
// back there. So an attempt that one owner refused on a quorum does not
// start keeping, unless a hand-off named this waiter (handOff): then that
// owner is most likely the releaser, its releases of the other nodes still
// on their way. A probe sees the tie-breaker alone: it keeps, and the
// attempt to every node that follows at once decides; keeping decided on
// such an attempt goes on (bounded by keepUntil).
func (k *contender) mayKeep(a attempt, handOff bool) bool {
	return k.probe || k.keeping && k.keptFull || a.quorumHolder == "" || handOff
}

// quietly marks the undo of op as one that announces nothing (see
// cleaner.releaseChange).
func quietly(op reentrant.Op) reentrant.Op {
	op.Wake = reentrant.WakeSilent
	return op
}

// sleep is how long to sleep after the failed attempt a when no wake comes.
// A keeper does not wait for the holder's lease: the owners it met may be
// undoing their own attempts, and their undos' releases arrive as copies of
// one release it may not be woken by, so it looks again after a retry
// delay that doubles with each kept attempt, up to the holder's lease.
func (k *contender) sleep(a attempt, retryDelay time.Duration) time.Duration {
	d := sleepAfter(a, retryDelay)
	switch {
	case k.keeping:
		return min(d, backoff.Jitter(retryDelay<<min(k.keeps-1, 6)))
	case k.rechecks > 0:
		return min(d, backoff.Jitter(retryDelay<<(k.rechecks-1)))
	}
	return d
}

// abandon undoes what the contender kept: the Lock call ends without the
// lock, or stops keeping. Each kept attempt may carry holds of earlier kept
// attempts on nodes it did not reach itself, so the undo of the last one
// goes to every node (its sequence number is above all of theirs), and its
// own late replies are followed as any failed attempt's are.
//
// quiet: give the tie-breaker back without a hand-off (see settle).
func (k *contender) abandon(c *Client, quiet bool) {
	if !k.keeping {
		return
	}
	kept := k.kept
	if quiet {
		kept = quietly(kept)
	}
	c.releaseOn(undoOf(kept), c.allNodes(), k.keptTry.deadline)
	c.undo(kept, k.keptTry, false)
	k.keeping, k.keptFull = false, false
}

// first reports whether the waiter is woken by releases meant for keepers
// (pubsub's SetFirst): it keeps part of the lock, or the tie-breaker did not
// answer its last attempt, or it gave the tie-breaker back to a holder that
// lacks it (yielded), so no hand-off will reach it.
func (k *contender) first() bool { return k.keeping || k.tieLost || k.yielded }

// expectContention makes the first attempt a probe of the tie-breaker (see
// 3): the handle met another holder lately.
func (k *contender) expectContention() {
	k.probe, k.expect = k.enabled, reentrant.ExpectHeld
}

// queueArgs sets op's ticket and expectation for the next attempt, and
// returns how that attempt meets the queue, the owner being registered on
// the nodes queued.
func (k *contender) queueArgs(op *reentrant.Op, queued nodeSet) queueing {
	op.Ticket, op.Expect = k.ticket, k.expect
	return queueing{first: k.firstTry, tie: k.tie, queued: queued, fair: k.fair}
}

// sent records that the failed attempt a went out: the call's later
// attempts are not its first. One that met another holder makes the next
// expect a holder too, unless a sleep comes between (see slept).
func (k *contender) sent(a attempt) {
	if !a.sent {
		return
	}
	k.firstTry = false
	k.expect = reentrant.ExpectFree
	if a.contended && !a.retryNow {
		k.expect = reentrant.ExpectHeld
	}
}

// slept is told that the waiter slept after its last attempt, until a wake
// or the holder's lease end: the lock may well be free now.
func (k *contender) slept() { k.expect = reentrant.ExpectFree }

// handedOff is told that the last wake was a hand-off naming this waiter:
// the lock was freed for it, so the next attempt goes to every node, and
// expects the lock handed off to it there (the hold's caller records that
// the release took it out of the queue there).
func (k *contender) handedOff() {
	k.probe, k.rechecks, k.handOff = false, 0, true
	k.expect = reentrant.ExpectHandOff
}

// leaveQueue takes a Lock call that ends without the lock out of the queue
// on the nodes queued, where it may be registered, in the background, so
// that no release hands the lock to it. A Dequeue that fails costs the
// next waiter one hand-off watch.
func (k *contender) leaveQueue(c *Client, key reentrant.Key, owner string, queued nodeSet) {
	if k.ticket == 0 {
		return // not queued
	}
	k.ticket = 0
	// The others may hold its registration as a keeper, which would make
	// their releases publish for no one until it expires. A tie-breaker
	// that does not answer is left alone: the watch moves on.
	for i, n := range c.nodes {
		if !queued.has(i) || i == k.tie && k.tieLost {
			continue
		}
		c.inBackground(func(life context.Context) {
			ctx, cancel := context.WithTimeout(life, c.callTimeout(i))
			defer cancel()
			_ = n.Dequeue(ctx, key, owner)
		})
	}
}

// tieReply is the tie-breaker's answer within a.
func tieReply(a attempt, tie int) reply[reentrant.Acquisition] {
	if tie < len(a.replies) {
		return a.replies[tie]
	}
	return reply[reentrant.Acquisition]{err: errNotAsked}
}

// ctxAlive reports whether the attempt's ctx had not ended by its end.
func ctxAlive(a attempt) bool {
	return a.sent && !errors.Is(a.err, context.Canceled) && !errors.Is(a.err, context.DeadlineExceeded)
}

// splitVotesAtNew and noQueueAtNew read the A/B switches when a Client is
// made.
func splitVotesAtNew() bool { return abtest.SplitVotes.Load() }
func noQueueAtNew() bool    { return abtest.NoWaitQueue.Load() }

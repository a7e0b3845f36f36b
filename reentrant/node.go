// Package reentrant is relock's single-node primitive: it acquires, releases,
// renews and inspects one reentrant lock on ONE Redis node.
//
// A lock is a hash whose field is the owner's id and whose value is that
// owner's hold count; the key's PTTL is the lease. Every call carries the
// owner's hold count as an absolute value, never an increment, together with
// a sequence number that grows with each of the owner's operations: a call
// retried after a lost reply, or one that arrives late, cannot count a hold
// twice or undo a newer operation. When a hold ends (a release to zero, the
// undo of a failed attempt, a force-unlock) the node keeps the owner's last
// sequence number for one lease in a tombstone key of its own (Key.Tombstone),
// so that a delayed acquire of that owner cannot bring the lock back; see
// lua/acquire.lua. The quorum over several nodes is the lock
// package's job; this package speaks to one node and says exactly what it
// found.
package reentrant

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lua"
)

// Node runs lock operations on one Redis server. Calls made concurrently
// share pipelined round trips. It is safe for concurrent use.
type Node struct {
	rdb   redis.UniversalClient
	calls *pipeliner
	rep   Replication // writes wait for replicas when on
	// noRetries: the client never sends a command twice (MaxRetries -1),
	// so a failure to connect is the whole story of a call.
	noRetries bool
}

// DefaultCallTimeout bounds one round trip of a Node unless NewNode is told
// otherwise.
const DefaultCallTimeout = time.Second

// NewNode returns a Node over rdb. The caller keeps ownership of rdb.
// Calls made together share a round trip, which waits for its replies
// callTimeout after it leaves (DefaultCallTimeout when not positive), or as
// long as the most patient of its callers had left when it called if that
// is longer (counted from the moment the trip leaves), through a client
// that ends a call at its context's deadline (ContextTimeoutEnabled): go-redis
// ignores the deadline on another's socket reads, which its ReadTimeout
// (3 s by default) ends instead. A caller whose ctx ends first stops
// waiting unless its call is already on the wire. Over a
// *redis.Client the node keeps a few of the pool's connections between its
// round trips (DefaultPipelines at most, and half the pool's size), each
// given back after 100 ms unused and all of them by Close.
func NewNode(rdb redis.UniversalClient, callTimeout time.Duration) *Node {
	n, _ := NewReplicatedNode(rdb, callTimeout, Replication{})
	return n
}

// NewReplicatedNode is NewNode in the replicated mode rep (see
// Replication): each write call answers only once rep.Replicas replicas
// acknowledged it, or fails with ErrNotReplicated after rep.Timeout. The
// Timeout adds to a call's round trip, so callTimeout should exceed it. A
// zero rep is NewNode. A mode WAIT cannot carry out on rdb is an error
// (see Replication.CheckFor).
func NewReplicatedNode(rdb redis.UniversalClient, callTimeout time.Duration, rep Replication) (*Node, error) {
	if err := rep.CheckFor(rdb); err != nil {
		return nil, err
	}
	if callTimeout <= 0 {
		callTimeout = DefaultCallTimeout
	}
	calls := &pipeliner{rdb: rdb, timeout: callTimeout, rep: rep, limit: DefaultPipelines, conns: newKeptConns(rdb)}
	return &Node{rdb: rdb, calls: calls, rep: rep, noRetries: retriesOff(rdb)}, nil
}

// Close gives back to rdb's pool the connections the node keeps between
// its round trips (see NewNode); a trip on the wire gives its own back as
// it returns. rdb stays open. A node used after Close still works, keeping
// nothing.
func (n *Node) Close() {
	n.calls.conns.close()
}

// LimitPipelines sets how many pipelined round trips the node keeps on the
// wire at once, at least 1 (DefaultPipelines until set). Calls made while
// they are all out queue and leave together in the next one, so fewer
// pipelines carry more calls each: less CPU per call under load, and a
// call may wait for one round trip to come back before it leaves. While
// every trip out has been out over 5 ms, more leave, up to
// DefaultPipelines, so that no call waits behind a node that stopped
// answering. Call it before the node's first call.
func (n *Node) LimitPipelines(pipelines int) {
	n.calls.limit = max(pipelines, 1)
}

// NeverReached reports whether err, the failure of a call to this node,
// proves that nothing of the call can have run there: it was never sent
// (NotSent), or the client could not connect and does not retry. A client
// that retries (go-redis's default: 3 retries) may have written an earlier
// try before its connection broke and failed only the redial, so for it a
// failure to connect proves nothing.
func (n *Node) NeverReached(err error) bool {
	return NotSent(err) || n.noRetries && connectFailed(err)
}

// retriesOff reports whether rdb is known never to retry a command.
func retriesOff(rdb redis.UniversalClient) bool {
	// go-redis turns MaxRetries -1 into 0 and 0 into its default of 3 when
	// it makes the client: here 0 means none. A cluster client also sends a
	// call again after a network error, to the same node or another, up to
	// MaxRedirects times (-1 made 0, 0 made 3), whatever MaxRetries says.
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().MaxRetries <= 0
	case *redis.ClusterClient:
		return c.Options().MaxRetries <= 0 && c.Options().MaxRedirects <= 0
	}
	return false
}

// Dequeue takes owner out of the lock's wait queue (Key.Queue) on this
// node: a waiter that gives up leaves it, so that no release hands it the
// lock. The queue is a hint (see Op.Ticket), so a Dequeue that fails only
// costs a waiter elsewhere a short wait.
func (n *Node) Dequeue(ctx context.Context, key Key, owner string) error {
	_, err := n.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, key.Queue, owner)
		p.ZRem(ctx, key.QueueDeadlines, owner)
		return nil
	})
	return err
}

// Client returns the go-redis client the node talks through.
func (n *Node) Client() redis.UniversalClient { return n.rdb }

// Op identifies one operation of one owner on one lock.
type Op struct {
	Key   Key
	Owner string        // the owner's field: CLIENTID:OWNERID
	Lease time.Duration // the lease to set, at least 1 ms
	Count int64         // the hold count the owner will have after the operation
	Seq   int64         // the owner's operation sequence number, growing
	// Reentry marks an acquire that nests in a hold the owner already has:
	// a node where that hold has ended (released, expired, force-unlocked)
	// answers Missing and changes nothing, instead of creating the hold
	// afresh. Repairs, which write a hold back on a node that lost it, leave
	// it false.
	Reentry bool
	// Fence asks an acquire to read the lock's fencing counter
	// (Acquisition.Fence); without it the counter's key is not read and
	// Fence is 0.
	Fence bool
	// Ticket, when above 0, is a waiting owner's place in the lock's wait
	// queue (Key.Queue): an acquire that finds another owner holding the
	// lock puts the owner in the queue with this ticket, unless it is there
	// already (it keeps its first ticket). Lower tickets are woken first.
	Ticket int64
	// Unqueued says that the owner is in no wait queue on this node (it
	// was never refused here with its Ticket, or a hand-off took it out):
	// an acquire that takes the lock skips taking the owner out of the
	// queue, one command fewer. Not with Fair.
	Unqueued bool
	// Expect is what a first acquisition expects to find (see
	// Expectation): it orders the script's reads so that the expected
	// case costs the fewest commands. A hint only: the result is the same.
	Expect Expectation
	// Fair makes an acquire on the node that keeps the lock's queue a fair
	// lock's (see Acquisition.Queued): the lock goes to the owner at the
	// head of the queue, and waiting owners' entries carry deadlines
	// (Key.QueueDeadlines). Sent to that node alone.
	Fair bool
	// TakesTurn makes a waiting owner's acquire (Ticket above 0) on the
	// node that keeps a Mutex's queue respect a hand-off: for a short while
	// after a release there handed the lock to another owner (WakeQueue),
	// a free lock is refused to everyone else (Acquisition.Queued), so that
	// an owner that asks just then does not take it from under the one it
	// was handed to. Sent to that node alone; not with Fair.
	TakesTurn bool
	// AskHolder makes an acquire refused by another owner's hold name that
	// owner (Acquisition.Holder), at the cost of one HKEYS on the refusing
	// node: a waiter that took the tie-breaker learns from it whether one
	// owner holds a quorum of the other nodes.
	AskHolder bool
	// Wake says how a release that frees the lock announces it (see Wake).
	Wake Wake
	// Mode is the kind of hold (see Mode); the zero value is Exclusive.
	Mode Mode
	// Waiting marks an acquire of an owner that waits for the hold: for
	// a Write hold, a refusal leaves the owner's mark (Key.WriterWaiting).
	// Other modes ignore it.
	Waiting bool
	// Permits and Capacity, for a Semaphore hold: the permits the owner
	// takes (1 ≤ Permits ≤ Capacity) and the semaphore's capacity.
	Permits, Capacity int64
	// Quorum, for a Semaphore hold, is how many nodes its acquisitions
	// need: its releases ask waiters to retry once that many nodes' copies
	// are in (pubsub's "ID *Q" message), not a majority's.
	Quorum int
	// NoStrays says that no call of the owner that could create its hold
	// on this node (an acquire, a repair) may still land there: every one
	// it sent has answered, or the tombstone a release left since covers
	// it. Through a client that never sends a call twice (MaxRetries -1),
	// a release to zero (Exclusive, Write) then leaves no tombstone, as
	// there is nothing for one to refuse, and an acquire, expecting none,
	// looks for the lock and the tombstone in one command. For an acquire
	// it is only a hint, which orders the script's reads: the lock package
	// also leaves it unset where the owner's tombstone may still be (its
	// last release or undo there left one), so that the script reads the
	// lock and the tombstone apart. Through a client that may retry it
	// changes nothing. The lock package sets it per node.
	NoStrays bool
	// LeaveQueue, for a release to zero of an Exclusive hold, says that the
	// owner may still be registered in the lock's wait queue on this node:
	// it was refused here with its Ticket while it waited, and took the
	// lock through the other nodes. A release to zero then takes it out of
	// the queue (one command), whether it finds the owner's hold (a
	// renewal's repair wrote it) or none, so that this node's releases stop
	// naming an owner that is not waiting. Not
	// with Fair (a fair queue's entries expire by their deadlines).
	LeaveQueue bool

	// prepared, set by Prepare, holds the parts of op's script calls that
	// its copies share.
	prepared *prepared
	// twice, set by the Node that sends an acquire or a release, says that
	// its client may send the call more than once (go-redis retries): the
	// scripts then bury an acquire's sequence number when they refuse it,
	// so that a copy landing later cannot take the lock behind the owner's
	// back, and NoStrays is void.
	twice bool
}

// Expectation is what an owner's first acquisition expects to find on a
// node (Op.Expect).
type Expectation int

const (
	// ExpectFree: the lock free, no hand-off's reservation for another
	// owner beside it (where it takes turns, Op.TakesTurn, one EXISTS
	// looks for both).
	ExpectFree Expectation = iota
	// ExpectHeld: another owner's hold (its last attempt was refused):
	// the owner's own fields and the lock's TTL are read first, so that a
	// refusal costs those two commands, and a free lock one more.
	ExpectHeld
	// ExpectHandOff: the lock handed off to this owner (a release named
	// it): free, with a reservation that is most likely its own, read
	// apart from the lock and ended as it is read.
	ExpectHandOff
)

// Prepare returns op with the parts of its acquire and release script
// calls that do not change from one operation of its owner on its lock to
// the next (the keys, the owner, the scripts' SHAs, and op.Lease) built
// once: a copy of it, whatever its count, sequence number, lease and flags,
// sends them without building or boxing them again. A handle prepares one
// Op and copies it for each call. A copy whose Key, Owner or Mode differs
// from op's is sent as an unprepared Op is. Only Exclusive Ops are
// prepared (the others are sent as before).
func (op Op) Prepare() Op {
	if op.Mode == Exclusive {
		op.prepared = prepare(op)
	}
	return op
}

// Wake is how a release that frees a lock announces it on the lock's
// channel, as the lock package's contention rules ask of each node.
type Wake int

const (
	// WakeAny publishes the release ID alone: a copy for any waiter, one of
	// the N copies of one release (pubsub counts them).
	WakeAny Wake = iota
	// WakeQueue hands the lock to the head of the wait queue: it takes the
	// first waiting owner out of the queue and publishes the release ID with
	// that owner and the one after it (see pubsub's message format).
	WakeQueue
	// WakeKeepers publishes a copy for keepers only: waiters that hold part
	// of the lock and wait for others to give theirs back.
	WakeKeepers
	// WakeFair hands a fair lock to the head of its queue as WakeQueue
	// does, but leaves that owner at the head until it takes the lock or
	// its deadline passes, so that no one else takes it on this node first.
	WakeFair
	// WakeQueueAlone hands the lock off as WakeQueue does, without
	// reserving it for the owner it goes to: for a lock kept on one node,
	// where no acquire takes turns (Op.TakesTurn), so the reservation would
	// never be read.
	WakeQueueAlone
	// WakeSilent publishes nothing: the undo of an attempt that another
	// owner refused on a quorum of the nodes frees nothing a waiter can
	// use, since that owner holds the lock.
	WakeSilent
	// WakeCleanup publishes a copy for keepers only, as WakeKeepers does,
	// from a clean-up (the undo of a failed attempt, a retried release):
	// no hand-off of the same release is to come, so no one else wakes
	// for it (see pubsub's message format). Keep it the last Wake: wakeArgs
	// (apply.go) boxes every Wake up to it.
	WakeCleanup
)

// luaFlag is the Wake as the release script reads it (ARGV[6]).
func (w Wake) luaFlag() string {
	switch w {
	case WakeQueue:
		return "q"
	case WakeKeepers:
		return "k"
	case WakeFair:
		return "f"
	case WakeQueueAlone:
		return "h"
	case WakeCleanup:
		return "u"
	case WakeSilent:
		return "s"
	}
	return ""
}

func (op Op) check(minCount int64) error {
	switch {
	case op.Key.Lock == "":
		return fmt.Errorf("%w: the lock key is empty", ErrInvalidArgument)
	case op.Owner == "":
		return fmt.Errorf("%w: the owner is empty", ErrInvalidArgument)
	case op.Lease < time.Millisecond:
		return fmt.Errorf("%w: lease %v is below 1ms", ErrInvalidArgument, op.Lease)
	case op.Count < minCount:
		return fmt.Errorf("%w: hold count %d is below %d", ErrInvalidArgument, op.Count, minCount)
	case op.Expect < ExpectFree || op.Expect > ExpectHandOff:
		return fmt.Errorf("%w: expectation %d is none of ExpectFree, ExpectHeld and ExpectHandOff", ErrInvalidArgument, op.Expect)
	case op.Mode == Semaphore:
		return op.checkPermits()
	}
	return nil
}

// Acquisition is what one node answered to an acquire.
type Acquisition struct {
	// Acquired is true when the owner holds the lock on this node afterwards.
	Acquired bool
	// Count is the owner's hold count stored on the node (when Acquired).
	Count int64
	// HolderTTL is the remaining lease of the other owner (when not Acquired):
	// -1 when that key has no expiry (written by someone else), -2 when there
	// is no holder (it vanished before PTTL ran, or the call was Stale).
	HolderTTL time.Duration
	// Stale is true when the lock was free but the node refused the call as
	// older than the operation that ended the owner's hold there (a release,
	// the undo of a failed attempt, or a force-unlock): a delayed or
	// retransmitted call that must not bring the lock back. Nothing changed;
	// Acquired is false and HolderTTL is -2, so no one waits on it. A call
	// the owner is still waiting for is never stale: each new operation
	// takes a higher sequence number than any that ended a hold.
	Stale bool
	// Missing is true when the call was an Op.Reentry and found the lock
	// free here: the owner's hold it meant to nest in has ended on this
	// node. Nothing changed; Acquired is false and HolderTTL is -2. (A
	// re-entry that finds another owner holding the lock is answered as
	// any acquire is, with that owner's TTL.)
	Missing bool
	// Queued is true when a fair lock (Op.Fair) is free here but another
	// owner is ahead in its queue, or a lock was just handed off here to
	// another owner (Op.TakesTurn): nothing was taken; the owner joined the
	// queue if it brought a ticket. Acquired is false and HolderTTL is -2.
	Queued bool
	// Fence is the node's fencing counter (0 when never raised, or when
	// the Op did not ask for it).
	Fence int64
	// Holder is the other owner whose hold refused the call, when the Op
	// asked (Op.AskHolder); "" otherwise.
	Holder string
}

// Acquire takes the lock for op.Owner with hold count op.Count (≥ 1), or
// reports the other owner holding it, or reports the call Stale, or (for an
// Op.Reentry) reports the owner's hold Missing.
func (n *Node) Acquire(ctx context.Context, op Op) (Acquisition, error) {
	if err := op.check(1); err != nil {
		return Acquisition{}, err
	}
	op.twice = !n.noRetries
	var cmd *redis.Cmd
	if p := op.prepared; p.fits(op) {
		cmd = n.calls.runPrepared(ctx, p.acquireCall(op))
	} else {
		cmd = n.calls.runCall(ctx, op.acquireCall())
	}
	reply, err := cmd.Slice()
	if err != nil {
		return Acquisition{}, n.opError(op, err)
	}
	return acquisitionOf(reply)
}

// ReleaseResult is what one node answered to a release.
type ReleaseResult int

const (
	// NotHeld: the owner holds nothing here; nothing changed.
	NotHeld ReleaseResult = iota
	// StillHeld: the owner's count is above zero after the call.
	StillHeld
	// Released: the lock was deleted and its release was published.
	Released
)

// String returns the result in words ("not held", "still held", "released").
func (r ReleaseResult) String() string {
	switch r {
	case NotHeld:
		return "not held"
	case StillHeld:
		return "still held"
	case Released:
		return "released"
	}
	return "ReleaseResult(" + strconv.Itoa(int(r)) + ")"
}

// Release brings op.Owner's hold count down to op.Count (≥ 0). At zero the
// lock is deleted and releaseID is published on the release channel, once.
// A release to zero also leaves the owner's tombstone for op.Lease, even
// where the owner held nothing (the undo of an attempt that has not landed
// yet): the owner's older acquires are then refused as Stale. A release to
// zero with Op.NoStrays, through a client that never retries, leaves none,
// whether it ends the hold or finds none.
func (n *Node) Release(ctx context.Context, op Op, releaseID string) (ReleaseResult, error) {
	if err := op.check(0); err != nil {
		return NotHeld, err
	}
	op.twice = !n.noRetries
	var cmd *redis.Cmd
	if p := op.prepared; p.fits(op) {
		cmd = n.calls.runPrepared(ctx, p.releaseCall(op, releaseID))
	} else {
		cmd = n.calls.runCall(ctx, op.releaseCall(releaseID))
	}
	r, err := cmd.Int64()
	if err != nil {
		return NotHeld, n.opError(op, err)
	}
	if r < int64(NotHeld) || r > int64(Released) {
		return NotHeld, fmt.Errorf("relock: release: unexpected reply %d", r)
	}
	return ReleaseResult(r), nil
}

// Renew extends the lease of a lock op.Owner holds and sets its count to
// op.Count. It reports false, changing nothing, when the owner does not hold
// the lock on this node.
func (n *Node) Renew(ctx context.Context, op Op) (bool, error) {
	if err := op.check(1); err != nil {
		return false, err
	}
	r, err := n.calls.runCall(ctx, op.renewCall()).Int64()
	if err != nil {
		return false, n.scriptError(op.Key, err)
	}
	return r == 1, nil
}

func renewArgs(op Op) []any {
	return []any{op.Owner, op.Lease.Milliseconds(), op.Count, op.Seq}
}

// Info is the state of one name on one node: its lock's holds (a Mutex's,
// a FairMutex's, an RWMutex's writer and readers) and the permits of the
// semaphore of the same name.
type Info struct {
	// Holders maps each owner to its hold count (a Mutex's, or an
	// RWMutex's writer's); empty when no one holds it so.
	Holders map[string]int64
	// TTL is the remaining lease of those holds: -2 when the key does not
	// exist, -1 when it has no expiry.
	TTL time.Duration
	// Fence is the node's fencing counter.
	Fence int64
	// Readers are an RWMutex's readers whose lease has not ended, each with
	// its own lease; empty for a lock of another kind.
	Readers map[string]LeasedHold
	// Permits are the holders of the semaphore of the same name (see
	// NewSemaphoreKey) whose lease has not ended, each with its permits
	// (as Count) and its own lease; empty when no one holds its permits.
	Permits map[string]LeasedHold
	// Capacity is the semaphore's capacity as its holders here gave it
	// (every user of a name gives the same, see CapacityError); 0 when
	// none is recorded.
	Capacity int64
	// Waiters are the first owners (at most InspectWaiters) in the lock's
	// wait queue here, in the order a release hands the lock on. Waiters
	// queue on the name's tie-breaker node; an attempt refused on another
	// node with its ticket also registers its waiter there.
	Waiters []Waiter
	// Queued is how many owners the queue has in all, Waiters and those
	// after them.
	Queued int64
	// WriterWaiting is an RWMutex's writer that waits, whose mark keeps
	// new readers out (see RWMutex); zero when none waits. A writer that
	// got the lock through the other nodes may leave its mark here until
	// its hold is written here too, or it unlocks.
	WriterWaiting Waiter
}

// InspectWaiters is how many owners of a lock's wait queue Inspect reads.
const InspectWaiters = 100

// Waiter is an owner waiting for a lock on one node.
type Waiter struct {
	Owner string // CLIENTID:OWNERID
	// Since is when the owner's Lock call began to wait, by its own clock
	// (its ticket in the queue, which orders the queue); zero for an
	// RWMutex's waiting writer.
	Since time.Time
	// TTL is how long its entry stays unless the owner asks again: a
	// waiter that gave up or died leaves the queue by then.
	TTL time.Duration
}

// LeasedHold is a hold with a lease of its own on one node: an RWMutex's
// reader's (its read hold count) or a semaphore holder's (its permits).
type LeasedHold struct {
	Count int64         // the read hold count, or the permits held
	TTL   time.Duration // what is left of its lease there
}

// leasedHolds parses a reply of liveHolders (lua/prelude.lua): owner,
// count, remaining lease (ms), for each holder. A count or a lease that is
// not a number is an error, not a hold of 0.
func leasedHolds(reply []any) (map[string]LeasedHold, error) {
	if len(reply)%3 != 0 {
		return nil, fmt.Errorf("unexpected holders %v", reply)
	}
	out := make(map[string]LeasedHold, len(reply)/3)
	for i := 0; i+2 < len(reply); i += 3 {
		owner, _ := reply[i].(string)
		count, okCount := intOf(reply[i+1])
		ms, okMS := intOf(reply[i+2])
		if !okCount || !okMS {
			return nil, fmt.Errorf("holder %q: count %v and lease %v are not both numbers", owner, reply[i+1], reply[i+2])
		}
		out[owner] = LeasedHold{Count: count, TTL: pttl(ms)}
	}
	return out, nil
}

// Inspect reads the state of key's name without changing it: the lock's
// holds, who waits for it, and the holders of the semaphore of the same
// name.
func (n *Node) Inspect(ctx context.Context, key Key) (Info, error) {
	return n.inspect(ctx, key, InspectWaiters)
}

// InspectHolds is Inspect without who waits: Waiters, Queued and
// WriterWaiting stay empty, and the script leaves the queue's keys and the
// writer's mark unread (nor does foreign data there fail it). For callers
// that want the holds alone, and may poll: IsLocked, TTL, ForceUnlock.
func (n *Node) InspectHolds(ctx context.Context, key Key) (Info, error) {
	return n.inspect(ctx, key, 0)
}

// inspect runs inspect.lua, reading the first waiters owners of the queue
// (none, and no queue key, when 0).
func (n *Node) inspect(ctx context.Context, key Key, waiters int) (Info, error) {
	keys := []string{key.Lock, key.Fence, key.Readers(), key.ReadLeases(), key.Permits(), key.PermitLeases(), key.Queue, key.QueueDeadlines, key.WriterWaiting()}
	reply, err := n.calls.run(ctx, lua.Inspect, keys, waiters).Slice()
	if err != nil {
		return Info{}, n.scriptError(key, err)
	}
	var holders, readers, permits, queue, mark []any
	if len(reply) == 9 {
		holders, _ = reply[2].([]any)
		readers, _ = reply[3].([]any)
		permits, _ = reply[4].([]any)
		queue, _ = reply[6].([]any)
		mark, _ = reply[8].([]any)
	}
	if len(reply) != 9 || len(holders)%2 != 0 || len(queue)%3 != 0 || (len(mark) != 0 && len(mark) != 2) {
		return Info{}, fmt.Errorf("relock: inspect: unexpected reply %v", reply)
	}
	// A value that is not a number fails the inspect, naming the key it
	// comes from: read as 0, a foreign count would pass for a free lock.
	var bad error
	num := func(v any, at string) int64 {
		i, ok := intOf(v)
		if !ok && bad == nil {
			bad = fmt.Errorf("relock: inspect: key %q: unexpected %v, not a number", at, v)
		}
		return i
	}
	info := Info{Holders: make(map[string]int64), TTL: pttl(num(reply[0], key.Lock)), Fence: num(reply[1], key.Fence), Capacity: num(reply[5], key.Permits()), Queued: num(reply[7], key.Queue)}
	for i := 0; i+2 < len(queue); i += 3 {
		owner, _ := queue[i].(string)
		info.Waiters = append(info.Waiters, Waiter{Owner: owner, Since: time.UnixMicro(num(queue[i+1], key.Queue)), TTL: pttl(num(queue[i+2], key.Queue))})
	}
	if len(mark) == 2 {
		owner, _ := mark[0].(string)
		info.WriterWaiting = Waiter{Owner: owner, TTL: pttl(num(mark[1], key.WriterWaiting()))}
	}
	for i := 0; i+1 < len(holders); i += 2 {
		owner, _ := holders[i].(string)
		info.Holders[owner] = num(holders[i+1], key.Lock)
	}
	if bad != nil {
		return Info{}, bad
	}
	if info.Readers, err = leasedHolds(readers); err != nil {
		return Info{}, fmt.Errorf("relock: inspect: key %q: %w", key.Readers(), err)
	}
	if info.Permits, err = leasedHolds(permits); err != nil {
		return Info{}, fmt.Errorf("relock: inspect: key %q: %w", key.Permits(), err)
	}
	return info, nil
}

// ForceUnlock frees the name of key of every hold on it, whoever holds it:
// the lock's (a Mutex's, or an RWMutex's writer's), an RWMutex's readers',
// and the permits of the semaphore of the same name; it publishes releaseID
// where the waiters of each kind it freed listen. nodes is how many nodes
// the name lives on: the semaphore's waiters are woken once every one of
// them announced it (see permitsReleaseID). It reports whether there was a
// hold to free. The owners it evicts get tombstones, so a delayed acquire
// of theirs cannot bring a hold back; this costs a read of the holders
// first (one more round trip, on an operator's path only).
func (n *Node) ForceUnlock(ctx context.Context, key Key, releaseID string, nodes int) (bool, error) {
	sem := key.Semaphore()
	for try := 1; ; try++ {
		info, err := n.InspectHolds(ctx, key)
		if err != nil {
			return false, err
		}
		if len(info.Holders)+len(info.Readers)+len(info.Permits) == 0 {
			return false, nil
		}
		keys := forceUnlockKeys(key)
		// After a few reads that a busy name outran, free it anyway: the
		// holders named still get their tombstones.
		strict := 1
		if try >= forceUnlockTries {
			strict = 0
		}
		args := []any{releaseID, strict, len(info.Holders), len(info.Readers), permitsReleaseID(releaseID, nodes)}
		name := func(owner string, tomb func(string) string) {
			keys = append(keys, tomb(owner))
			args = append(args, owner)
		}
		for owner := range info.Holders {
			name(owner, key.Tombstone)
		}
		for owner := range info.Readers {
			name(owner, key.ReadTombstone)
		}
		for owner := range info.Permits {
			name(owner, sem.Tombstone)
		}
		r, err := n.calls.run(ctx, lua.ForceUnlock, keys, args...).Int64()
		if err != nil {
			return false, n.scriptError(key, err)
		}
		if r >= 0 {
			return r == 1, nil
		}
	}
}

// Evict frees the name of key of the holds of owner alone, of every kind
// (see ForceUnlock), burying owner as ForceUnlock does, and wakes the
// waiters of what it freed (nodes as for ForceUnlock). The other owners'
// holds stay. It reports whether owner held anything here.
func (n *Node) Evict(ctx context.Context, key Key, owner, releaseID string, nodes int) (bool, error) {
	if owner == "" {
		return false, fmt.Errorf("%w: the owner to evict is empty", ErrInvalidArgument)
	}
	sem := key.Semaphore()
	keys := append(forceUnlockKeys(key), key.Tombstone(owner), key.ReadTombstone(owner), sem.Tombstone(owner))
	r, err := n.calls.run(ctx, lua.ForceUnlock, keys, releaseID, "o", 1, 1, permitsReleaseID(releaseID, nodes), owner, owner, owner).Int64()
	if err != nil {
		return false, n.scriptError(key, err)
	}
	return r == 1, nil
}

// forceUnlockKeys returns the keys lua/forceunlock.lua takes before the
// tombstones.
func forceUnlockKeys(key Key) []string {
	sem := key.Semaphore()
	return []string{key.Lock, key.Channel, key.ReadChannel(), key.Readers(), key.ReadLeases(), sem.Lock, sem.Leases, sem.Channel}
}

// forceUnlockTries is how many times ForceUnlock reads the holders again
// when they changed before its delete, before it deletes regardless.
const forceUnlockTries = 3

// RaiseFence raises the lock's fencing counter to at least token and returns
// the counter as it was before: at or above token, the token may have been
// drawn by another holder already (see lua/fence.lua).
func (n *Node) RaiseFence(ctx context.Context, key Key, token int64) (int64, error) {
	r, err := n.calls.run(ctx, lua.Fence, []string{key.Fence}, token).Int64()
	if err != nil {
		return 0, n.scriptError(key, err)
	}
	return r, nil
}

// scriptError turns a script's WRONGTYPE reply into a WrongTypeError naming
// the key (the script cannot name it safely: names may hold any bytes).
// A script that found the foreign data on the fencing counter's key or the
// wait queue's says so after the type ("WRONGTYPE hash fence", "WRONGTYPE
// string queue"); forceunlock.lua names an evicted owner's tombstone by its
// kind of hold and the owner in hex ("WRONGTYPE hash tombstone read 633a61").
func (n *Node) scriptError(key Key, err error) error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "WRONGTYPE "); ok {
		// Redis may append where the error was raised: keep the type only.
		kind, where, _ := strings.Cut(rest, " ")
		switch {
		case strings.HasPrefix(where, "fence"):
			return &WrongTypeError{Key: key.Fence, Type: kind}
		case strings.HasPrefix(where, "queue"):
			return &WrongTypeError{Key: key.Queue, Type: kind}
		case strings.HasPrefix(where, "deadlines"):
			return &WrongTypeError{Key: key.QueueDeadlines, Type: kind}
		case strings.HasPrefix(where, "readers"):
			return &WrongTypeError{Key: key.Readers(), Type: kind}
		case strings.HasPrefix(where, "readleases"):
			return &WrongTypeError{Key: key.ReadLeases(), Type: kind}
		case strings.HasPrefix(where, "tombstone "):
			// Redis may append more words: the kind and the owner come first.
			f := strings.Fields(where)
			if len(f) < 3 {
				break
			}
			owner, herr := hex.DecodeString(f[2])
			if herr != nil {
				break
			}
			switch f[1] {
			case "lock":
				return &WrongTypeError{Key: key.Tombstone(string(owner)), Type: kind}
			case "read":
				return &WrongTypeError{Key: key.ReadTombstone(string(owner)), Type: kind}
			case "permits":
				return &WrongTypeError{Key: key.Semaphore().Tombstone(string(owner)), Type: kind}
			}
		case strings.HasPrefix(where, "mark"):
			return &WrongTypeError{Key: key.WriterWaiting(), Type: kind}
		case strings.HasPrefix(where, "leases"):
			return &WrongTypeError{Key: key.Semaphore().Leases, Type: kind}
		case strings.HasPrefix(where, "permits"):
			return &WrongTypeError{Key: key.Semaphore().Lock, Type: kind}
		}
		return &WrongTypeError{Key: key.Lock, Type: kind}
	}
	return err
}

// opError is scriptError for an operation of one owner: a WRONGTYPE raised
// at the owner's tombstone (the script says so) names that key instead of the
// lock's, and a semaphore's RELOCK_CAPACITY error (see semacquire.lua) is a
// CapacityError.
func (n *Node) opError(op Op, err error) error {
	if rest, ok := strings.CutPrefix(err.Error(), "RELOCK_CAPACITY "); ok {
		stored, _, _ := strings.Cut(rest, " ") // Redis may append where it was raised
		if capacity, perr := strconv.ParseInt(stored, 10, 64); perr == nil {
			return &CapacityError{Key: op.Key.Lock, Capacity: capacity, Asked: op.Capacity}
		}
	}
	if rest, ok := strings.CutPrefix(err.Error(), "WRONGTYPE "); ok {
		if kind, where, _ := strings.Cut(rest, " "); strings.HasPrefix(where, "tombstone") {
			tomb := op.Key.Tombstone(op.Owner)
			if op.Mode == Read {
				tomb = op.Key.ReadTombstone(op.Owner)
			}
			return &WrongTypeError{Key: tomb, Type: kind}
		}
	}
	return n.scriptError(op.Key, err)
}

func pttl(ms int64) time.Duration {
	if ms < 0 {
		return time.Duration(ms) // -1 and -2 keep their meaning
	}
	return time.Duration(ms) * time.Millisecond
}

// intOf returns v, a value of a script's reply, as an int64, and whether
// it is a number: an integer (Redis gives a Lua number as one) or a string
// of one. Anything else is not a number relock wrote.
func intOf(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case string:
		i, err := strconv.ParseInt(x, 10, 64)
		return i, err == nil
	}
	return 0, false
}

// asInt is intOf for a value its script always gives as a Lua number (0
// when it is not), such as seminspect.lua's capacity. Inspect's parsing
// uses intOf instead, so that no value there reads as 0 unseen.
func asInt(v any) int64 {
	i, _ := intOf(v)
	return i
}

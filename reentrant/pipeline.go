package reentrant

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/callctx"
	"github.com/relock-go/relock/lua"
)

// DefaultPipelines is how many pipelines a node keeps on the wire at once
// unless told otherwise (Node.LimitPipelines). While they are out, new
// calls queue and leave together in the next one: under load each round
// trip carries many scripts (go-redis does not pipeline on its own), and a
// lone call still leaves at once.
const DefaultPipelines = 4

// A node limited to fewer than DefaultPipelines lets further trips leave,
// up to DefaultPipelines, while every trip it has out has been out longer
// than stuckAfter: a call must not wait behind a trip to a node that
// stopped answering, for a fan-out that returns on its quorum would drop
// it unsent and the node would miss every call until the trip timed out
// (TestRWMutexLostRepliesCountOnce). 5 ms is several loaded round trips on
// a LAN; on a slower network every trip counts as stuck, and the node
// keeps DefaultPipelines as if no limit had been set.
const stuckAfter = 5 * time.Millisecond

// pipeliner batches the script calls made concurrently on one node. It has
// no goroutine of its own: a caller holding one of the limit's "turns"
// sends everything queued, then hands its turn to the oldest queued caller
// (or gives it back when nothing is queued), so every caller sends at most
// one batch and nobody waits behind a queue that never empties.
type pipeliner struct {
	rdb     redis.UniversalClient
	timeout time.Duration // the least a pipeline waits for its replies
	rep     Replication   // each pipeline that may write ends with WAIT when on
	limit   int           // turns at most while a trip is fresh (DefaultPipelines unless set)

	mu    sync.Mutex
	queue []*call
	spare []*call // an empty array for the next queue, or nil
	turns int     // turns in use: sending, or handed to a queued caller
	// out holds when each trip now on the wire left, oldest first.
	out []time.Time
	// unstick, armed while calls queue behind fresh trips, gives a queued
	// caller a turn past the limit once those trips are stuck, so that no
	// call waits behind them for the next caller to come.
	unstick  *time.Timer
	watching bool

	conns   *keptConns // what trips go over: see keptConns
	scripts lua.Loaded // the scripts the node holds, as far as its replies told
}

// call is one script call waiting for its pipeline.
type call struct {
	script *lua.Script
	keys   []string
	args   []any
	argv   []any            // a prepared call's whole EVALSHA argv (see preparedCall), or nil
	budget time.Duration    // the time the caller's ctx had left when it queued; 0: no deadline
	values callctx.ValuesOf // the caller's ctx values (a trace span), for a lone call
	trip   callctx.Context  // a lone call's trip: on values, with the trip's deadline
	cmd    *redis.Cmd

	// Guarded by pipeliner.mu. The channels are made only when needed: a
	// caller that finds a free turn sends its own call and waits on none.
	sent  bool          // cmd holds the reply
	done  chan struct{} // closed once sent, for a caller that waits for it
	turn  chan struct{} // receives this caller's turn to send (buffer 1); nil when it had one at once
	given bool          // a turn was given to this caller
}

// runCall is run for a script call built beforehand.
func (p *pipeliner) runCall(ctx context.Context, sc scriptCall) *redis.Cmd {
	return p.run(ctx, sc.script, sc.keys, sc.args...)
}

// runPrepared is run for a prepared call, which sends its argv as it is.
func (p *pipeliner) runPrepared(ctx context.Context, pc preparedCall) *redis.Cmd {
	return p.runQueued(ctx, &call{script: pc.script, keys: pc.keys, args: pc.args, argv: pc.argv, values: callctx.ValuesOf{Context: ctx}})
}

// run queues a script call and waits for its reply or for ctx to end. A call
// whose ctx ends while still queued is never sent; one already sent may
// still run on the node, as with any call whose reply is lost.
func (p *pipeliner) run(ctx context.Context, script *lua.Script, keys []string, args ...any) *redis.Cmd {
	return p.runQueued(ctx, &call{script: script, keys: keys, args: args, values: callctx.ValuesOf{Context: ctx}})
}

// runQueued is run for the call c.
func (p *pipeliner) runQueued(ctx context.Context, c *call) *redis.Cmd {
	if deadline, ok := ctx.Deadline(); ok {
		c.budget = max(time.Until(deadline), time.Nanosecond)
	}
	p.mu.Lock()
	p.queue = append(p.queue, c)
	own := p.mayTake()
	if own {
		// A free turn: this caller sends at once, itself.
		p.turns++
		c.given = true
	} else {
		c.turn = make(chan struct{}, 1)
		p.watchForStuck()
	}
	p.mu.Unlock()

	if own {
		if ctx.Err() != nil {
			return p.giveUp(ctx, c, true)
		}
		p.sendQueued() // c with it, unless another turn's batch took c first
	}
	done := p.doneOf(c)
	if done == nil {
		return c.cmd
	}
	for {
		select {
		case <-c.turn:
			p.sendQueued()
		case <-done:
			p.passTurnIfHeld(c)
			return c.cmd
		case <-ctx.Done():
			return p.giveUp(ctx, c, false)
		}
	}
}

// mayTake reports whether a caller may take a turn now: while fewer than
// limit are in use, or up to DefaultPipelines while every trip out is
// stuck (see stuckAfter). The caller holds p.mu.
func (p *pipeliner) mayTake() bool {
	if p.turns < p.limit {
		return true
	}
	return p.turns < DefaultPipelines && p.stuck()
}

// stuck reports whether every trip out has been out longer than
// stuckAfter (false with none out). The caller holds p.mu.
func (p *pipeliner) stuck() bool {
	return len(p.out) > 0 && time.Since(p.out[len(p.out)-1]) > stuckAfter
}

// watchForStuck arms p.unstick unless it is armed. The caller holds p.mu.
func (p *pipeliner) watchForStuck() {
	if p.watching || p.limit >= DefaultPipelines {
		return
	}
	p.watching = true
	if p.unstick == nil {
		p.unstick = time.AfterFunc(stuckAfter, p.checkStuck)
	} else {
		p.unstick.Reset(stuckAfter)
	}
}

// checkStuck runs when p.unstick fires: the oldest queued caller without a
// turn gets one if the trips out are stuck; while callers still queue
// behind fresh trips, it looks again later.
func (p *pipeliner) checkStuck() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.watching = false
	next := p.waiting()
	switch {
	case next == nil:
	case p.turns < DefaultPipelines && p.stuck():
		p.turns++
		p.give(next)
	default:
		p.watchForStuck()
	}
}

// leaves records that a trip leaves now and returns its time. The caller
// holds p.mu.
func (p *pipeliner) leaves() time.Time {
	now := time.Now()
	p.out = append(p.out, now)
	return now
}

// back records that the trip that left at left is back. The caller holds
// p.mu.
func (p *pipeliner) back(left time.Time) {
	if i := slices.Index(p.out, left); i >= 0 {
		p.out = slices.Delete(p.out, i, i+1)
	}
}

// giveUp ends the wait of a call whose ctx ended: a call still queued is
// withdrawn and never sent; one on the wire is waited for (its reply comes
// by the batch's deadline). held says that the caller holds a turn it has
// not used yet.
func (p *pipeliner) giveUp(ctx context.Context, c *call, held bool) *redis.Cmd {
	withdrawn := p.withdraw(c)
	if held {
		p.sendQueued() // the turn serves the others queued, or is given back
	} else {
		p.passTurnIfHeld(c)
	}
	if withdrawn {
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(fmt.Errorf("%w: %w", ErrNotSent, ctx.Err()))
		return cmd
	}
	if done := p.doneOf(c); done != nil {
		<-done
	}
	return c.cmd
}

// doneOf returns the channel closed once c is sent, or nil when it is sent
// already.
func (p *pipeliner) doneOf(c *call) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.sent {
		return nil
	}
	if c.done == nil {
		c.done = make(chan struct{})
	}
	return c.done
}

// finish records that c.cmd holds c's reply. The caller holds the
// pipeliner's mu: a batch's calls are finished, and its turn handed on, in
// one critical section rather than one per call.
func (c *call) finish() {
	c.sent = true
	if c.done != nil {
		close(c.done)
	}
}

// passTurnIfHeld uses a turn handed to c after c stopped waiting for one.
// (c.turn is nil when c had a turn at once: nothing to receive.)
func (p *pipeliner) passTurnIfHeld(c *call) {
	select {
	case <-c.turn:
		p.sendQueued()
	default:
	}
}

// sendQueued sends everything queued as one batch, then hands the turn on.
func (p *pipeliner) sendQueued() {
	p.mu.Lock()
	batch := p.queue
	p.queue, p.spare = p.spare, nil
	var left time.Time
	if len(batch) > 0 {
		left = p.leaves()
	}
	p.mu.Unlock()
	if len(batch) > 0 {
		p.send(batch)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range batch {
		c.finish()
	}
	if len(batch) > 0 {
		p.back(left)
	}
	if p.spare == nil {
		// The next queue grows in this array rather than in a new one.
		clear(batch)
		p.spare = batch[:0]
	}
	p.passTurn()
}

// passTurn hands a turn that has sent its batch to the oldest queued caller
// without one, or gives it back. The caller holds p.mu.
func (p *pipeliner) passTurn() {
	// A turn beyond the limit, taken while the trips out were stuck, is
	// handed on only while they still are: the node returns to its limit.
	if p.turns <= p.limit || p.stuck() {
		if next := p.waiting(); next != nil {
			p.give(next)
			return
		}
	}
	p.turns-- // given back
}

// waiting returns the oldest queued caller without a turn, or nil. The
// caller holds p.mu.
func (p *pipeliner) waiting() *call {
	for _, c := range p.queue {
		if !c.given {
			return c
		}
	}
	return nil
}

// give hands c a turn. The caller holds p.mu; c has had none, so the send
// never blocks.
func (p *pipeliner) give(c *call) {
	c.given = true
	c.turn <- struct{}{}
}

// withdraw takes a call that was not sent yet out of the queue.
func (p *pipeliner) withdraw(c *call) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.Index(p.queue, c)
	if i < 0 {
		return false
	}
	p.queue = slices.Delete(p.queue, i, i+1)
	return true
}

// send runs one batch: one round trip, plus one more for the calls a node
// answered NOSCRIPT to (see recoverNoScript). Its caller then finishes
// the batch's calls.
func (p *pipeliner) send(batch []*call) {
	p.conns.with(p.rdb, func(to sender) bool {
		if len(batch) == 1 {
			p.sendOne(to, batch[0])
		} else {
			// A shared trip belongs to no one caller: no caller's values.
			trip := &callctx.Context{Context: context.Background(), At: p.deadline(batch), Timed: true}
			p.pipelined(trip, to, batch)
			trip.End(context.Canceled)
		}
		return slices.ContainsFunc(batch, func(c *call) bool { return brokeConn(c.cmd.Err()) })
	})
}

// sender is what a trip goes over: rdb, or a connection kept from its pool.
type sender interface {
	redis.Scripter
	Process(ctx context.Context, cmd redis.Cmder) error
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

// pipelined sends batch in one pipelined round trip (ending with WAIT in
// the replicated mode), and again those calls answered NOSCRIPT.
func (p *pipeliner) pipelined(ctx context.Context, to sender, batch []*call) {
	first := firstSends{known: &p.scripts}
	sent, _ := to.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for _, c := range batch {
			if first.bySource(c.script) {
				c.cmd = c.script.RunSource(ctx, pipe, c.keys, c.args...)
			} else {
				c.cmd = c.runSHA(ctx, pipe)
			}
		}
		p.rep.wait(ctx, pipe)
		return nil
	})
	if err := p.rep.shortfall(sent); err != nil {
		for _, c := range batch {
			unreplicated(c.cmd, c.script, err)
		}
	}
	p.sendAgain(ctx, to, batch)
}

// sendAgain sends the calls of batch that the node answered NOSCRIPT to
// once more (see recoverNoScript), and records what the replies tell of the
// node's scripts (see learnLoaded).
func (p *pipeliner) sendAgain(ctx context.Context, to sender, batch []*call) {
	if !slices.ContainsFunc(batch, func(c *call) bool { return lua.IsNoScript(c.cmd.Err()) }) {
		for _, c := range batch {
			learn(&p.scripts, c.script, c.cmd.Err())
		}
		return
	}
	calls := make([]scriptCall, len(batch))
	cmds := make([]*redis.Cmd, len(batch))
	for i, c := range batch {
		calls[i] = scriptCall{script: c.script, keys: c.keys, args: c.args}
		cmds[i] = c.cmd
	}
	p.scripts.Forget()
	recoverNoScript(ctx, to, p.rep, &p.scripts, calls, cmds)
	for i, c := range batch {
		c.cmd = cmds[i]
	}
}

// sendOne runs a lone call, with the deadline a batch of it alone would
// have (see deadline). It keeps its caller's values, so go-redis hooks
// (redisotel) see the caller's trace span. Its caller then finishes c.
func (p *pipeliner) sendOne(to sender, c *call) {
	c.trip = callctx.Context{Context: &c.values, At: time.Now().Add(max(p.timeout, c.budget)), Timed: true}
	ctx := &c.trip
	defer ctx.End(context.Canceled)
	switch {
	case p.rep.on() && !c.script.ReadOnly():
		// WAIT must follow the write on its connection: a pipeline.
		p.pipelined(ctx, to, []*call{c})
	default:
		if p.scripts.Has(c.script) {
			c.cmd = c.runSHA(ctx, to)
			if !lua.IsNoScript(c.cmd.Err()) {
				return
			}
			p.scripts.Forget() // it lost its cache: send the source
		}
		c.cmd = c.script.RunSource(ctx, to, c.keys, c.args...)
		learn(&p.scripts, c.script, c.cmd.Err())
	}
}

// runSHA sends c by SHA on to (a client, or a pipeline that queues it): its
// prepared argv as it is, or its script, KEYS and ARGV.
func (c *call) runSHA(ctx context.Context, to scripter) *redis.Cmd {
	if c.argv == nil {
		return c.script.RunSHA(ctx, to, c.keys, c.args...)
	}
	cmd := redis.NewCmd(ctx, c.argv...)
	_ = to.Process(ctx, cmd)
	return cmd
}

// scripter runs scripts, and commands built beforehand: go-redis clients
// and pipelines do.
type scripter interface {
	redis.Scripter
	Process(ctx context.Context, cmd redis.Cmder) error
}

// deadline is when a batch stops waiting for its replies: p.timeout after
// it leaves, or longer for a caller that had more time left when it queued
// (counted from the send: time spent queued behind other trips does not eat
// into it), so a release given a long wait is not cut at the timeout of an
// acquire it shares the trip with. Every trip gets at least p.timeout on
// the wire, even when its callers have given up: a reply cut short costs
// the connection, and a busy process would then spend its time dialing.
func (p *pipeliner) deadline(batch []*call) time.Time {
	wait := p.timeout
	for _, c := range batch {
		wait = max(wait, c.budget)
	}
	return time.Now().Add(wait)
}

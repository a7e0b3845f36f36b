package reentrant

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lua"
)

// maxPipelines is how many pipelines one node keeps on the wire at once.
// While they are out, new calls queue and leave together in the next one:
// under load each round trip carries many scripts (go-redis does not
// pipeline on its own), and a lone call still leaves at once.
const maxPipelines = 4

// pipeliner batches the script calls made concurrently on one node. It has
// no goroutine of its own: a caller holding one of the maxPipelines "turns"
// sends everything queued, then hands its turn to the oldest queued caller
// (or gives it back when nothing is queued), so every caller sends at most
// one batch and nobody waits behind a queue that never empties.
type pipeliner struct {
	rdb     redis.UniversalClient
	timeout time.Duration // the least a pipeline waits for its replies

	mu    sync.Mutex
	queue []*call
	turns int // turns in use: sending, or handed to a queued caller
}

// call is one script call waiting for its pipeline.
type call struct {
	script *lua.Script
	keys   []string
	args   []any
	budget time.Duration // the time the caller's ctx had left when it queued; 0: no deadline
	values valuesOf      // the caller's ctx values (a trace span), for a lone call
	cmd    *redis.Cmd
	done   chan struct{} // closed once cmd holds the reply
	turn   chan struct{} // receives this caller's turn to send (buffer 1)
	given  bool          // a turn was put in turn; guarded by pipeliner.mu
}

// runCall is run for a prepared script call.
func (p *pipeliner) runCall(ctx context.Context, sc scriptCall) *redis.Cmd {
	return p.run(ctx, sc.script, sc.keys, sc.args...)
}

// run queues a script call and waits for its reply or for ctx to end. A call
// whose ctx ends while still queued is never sent; one already sent may
// still run on the node, as with any call whose reply is lost.
func (p *pipeliner) run(ctx context.Context, script *lua.Script, keys []string, args ...any) *redis.Cmd {
	c := &call{script: script, keys: keys, args: args, values: valuesOf{ctx}, done: make(chan struct{}), turn: make(chan struct{}, 1)}
	if deadline, ok := ctx.Deadline(); ok {
		c.budget = max(time.Until(deadline), time.Nanosecond)
	}
	p.mu.Lock()
	p.queue = append(p.queue, c)
	if p.turns < maxPipelines {
		p.turns++
		p.give(c)
	}
	p.mu.Unlock()

	for {
		select {
		case <-c.turn:
			p.sendQueued()
		case <-c.done:
			p.passTurnIfHeld(c)
			return c.cmd
		case <-ctx.Done():
			withdrawn := p.withdraw(c)
			p.passTurnIfHeld(c)
			if withdrawn {
				cmd := redis.NewCmd(ctx)
				cmd.SetErr(fmt.Errorf("%w: %w", ErrNotSent, ctx.Err()))
				return cmd
			}
			<-c.done // on the wire already: the reply comes by the batch's deadline
			return c.cmd
		}
	}
}

// passTurnIfHeld uses a turn handed to c after c stopped waiting for one.
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
	p.queue = nil
	p.mu.Unlock()
	if len(batch) > 0 {
		p.send(batch)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, next := range p.queue {
		if !next.given {
			p.give(next)
			return
		}
	}
	p.turns-- // nobody queued is without a turn
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

// send runs one batch: one round trip, plus a second one with the full
// source for the calls a node answered NOSCRIPT to.
func (p *pipeliner) send(batch []*call) {
	// A lone call keeps its caller's values, so go-redis hooks (redisotel)
	// see the caller's trace span; a shared trip belongs to no one caller.
	var parent context.Context = context.Background()
	if len(batch) == 1 {
		parent = &batch[0].values
	}
	ctx, cancel := context.WithDeadline(parent, p.deadline(batch))
	defer cancel()
	if len(batch) == 1 {
		c := batch[0]
		c.cmd = c.script.Run(ctx, p.rdb, c.keys, c.args...)
		close(c.done)
		return
	}
	_, _ = p.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for _, c := range batch {
			c.cmd = c.script.RunSHA(ctx, pipe, c.keys, c.args...)
		}
		return nil
	})
	for _, c := range batch {
		if lua.IsNoScript(c.cmd.Err()) {
			c.cmd = c.script.Run(ctx, p.rdb, c.keys, c.args...)
		}
		close(c.done)
	}
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

// valuesOf is context.WithoutCancel(ctx) without its allocation (it lives
// inside the call): ctx's values, none of its cancellation or deadline,
// since the deadline rule above decides how long a trip waits.
type valuesOf struct{ context.Context }

func (valuesOf) Deadline() (time.Time, bool) { return time.Time{}, false }
func (valuesOf) Done() <-chan struct{}       { return nil }
func (valuesOf) Err() error                  { return nil }

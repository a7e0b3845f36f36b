// Package watchdog keeps held locks alive: it renews each lease on a
// schedule, and tells the holder, no later than the lease's validity
// deadline, when the lock can no longer be proven held.
//
// One goroutine schedules every lock of a Watchdog. Locks that come due
// close together are renewed together, in one call to the RenewFunc, which
// the lock package implements with one pipelined round trip per node per
// batch. The loss deadline of each lock is a runtime timer, not a goroutine,
// so thousands of held locks cost a few goroutines in all.
package watchdog

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// Outcome is the result of renewing one lock.
type Outcome struct {
	// Renewed is true when a quorum extended the lease; ValidUntil is then
	// the new deadline.
	Renewed    bool
	ValidUntil time.Time
	// Lost is true when the lock is definitely no longer ours (for instance
	// a quorum of nodes answered "not held"). Neither Renewed nor Lost means
	// the renewal failed for now and is retried before the deadline.
	Lost bool
}

// RenewFunc renews the locks behind values in one batch and returns one
// Outcome per value, in order. It must return within a bounded time.
type RenewFunc func(ctx context.Context, values []any) []Outcome

// Options tune a Watchdog. The zero value is fine.
type Options struct {
	// MaxBatch caps the locks handed to one RenewFunc call. Default 500.
	MaxBatch int
	// MinRetry is the shortest delay before a failed renewal is retried.
	// Default 10ms.
	MinRetry time.Duration
	// Early is how long before a lock's deadline its loss is reported, so
	// that timer and scheduling latency never make the report late: at most
	// Early, and at most a tenth of the validity the lock had when watched
	// (so a very short lease is not reported lost at once). Default 20ms:
	// on two busy cores running -race, timers were seen firing over 15 ms
	// late.
	Early time.Duration
}

// Watchdog renews leases. It is safe for concurrent use.
type Watchdog struct {
	renew RenewFunc
	opts  Options

	mu     sync.Mutex
	queue  dueQueue            // entries that get renewed, by due time
	all    map[*Entry]struct{} // every live entry, renewed or only watched
	closed bool
	// sleepsTill is when the loop, asleep, wakes by itself; zero while it
	// is awake (it reads the queue again before it sleeps). Watch wakes it
	// only for an entry due sooner: waking it for every new hold would
	// cost a goroutine switch per Lock.
	sleepsTill time.Time

	wake   chan struct{} // a new entry may be due sooner than the loop sleeps
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// New starts a Watchdog that renews through renew. Close stops it.
func New(renew RenewFunc, opts Options) *Watchdog {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 500
	}
	if opts.Early <= 0 {
		opts.Early = 20 * time.Millisecond
	}
	if opts.MinRetry <= 0 {
		opts.MinRetry = 10 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watchdog{
		renew:  renew,
		opts:   opts,
		all:    make(map[*Entry]struct{}),
		wake:   make(chan struct{}, 1),
		ctx:    ctx,
		cancel: cancel,
		done:   make(chan struct{}),
	}
	go w.loop()
	return w
}

// Watch starts watching a lock valid until validUntil. When every > 0 the
// lock is renewed every `every`; when every is 0 it is never renewed and only
// its deadline is watched (a lock with an explicit lease). onLost is called
// once, in its own goroutine, when the lock can no longer be proven held:
// with expired true Options.Early before the current deadline, which no
// renewal moved; with expired false as soon as the RenewFunc reports the
// lock Lost. It is never called once Stop has returned true; Stop returns
// false when the loss was reported already, and its callback may then
// still be starting. After Close, Watch returns an entry that is already
// stopped.
func (w *Watchdog) Watch(value any, every time.Duration, validUntil time.Time, onLost func(expired bool)) *Entry {
	e := &Entry{w: w, value: value, every: every, validUntil: validUntil, onLost: onLost, index: -1}
	e.early = min(w.opts.Early, time.Until(validUntil)/10)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		e.stopped = true
		return e
	}
	e.timer = time.AfterFunc(e.untilLoss(validUntil), e.expire)
	w.all[e] = struct{}{}
	if every > 0 {
		e.due = time.Now().Add(every)
		heap.Push(&w.queue, e)
		if !w.sleepsTill.IsZero() && e.due.Before(w.sleepsTill) {
			w.poke()
		}
	}
	return e
}

// Close stops renewing every lock and waits for the scheduler to exit. No
// loss is reported from then on; the callbacks of losses reported before
// may still run, and start, after Close returns.
func (w *Watchdog) Close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.done
		return
	}
	w.closed = true
	for e := range w.all {
		e.timer.Stop()
		e.stopped = true
		e.index = -1
	}
	w.queue, w.all = nil, nil
	w.mu.Unlock()
	w.cancel()
	<-w.done
}

// Len returns the number of locks being renewed.
func (w *Watchdog) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}

func (w *Watchdog) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *Watchdog) loop() {
	defer close(w.done)
	sleep := time.NewTimer(time.Hour)
	defer sleep.Stop()
	for {
		batch, next := w.takeDue(time.Now())
		if len(batch) > 0 {
			w.renewBatch(batch)
			continue
		}
		sleep.Reset(next)
		select {
		case <-sleep.C:
		case <-w.wake:
		case <-w.ctx.Done():
			return
		}
	}
}

// takeDue removes from the queue the entries due now or soon (see ahead),
// and returns them with how long to sleep if there are none.
func (w *Watchdog) takeDue(now time.Time) ([]*Entry, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var batch []*Entry
	for len(w.queue) > 0 && len(batch) < w.opts.MaxBatch {
		e := w.queue[0]
		if e.due.After(now.Add(e.ahead())) {
			if len(batch) == 0 {
				return nil, w.sleepFor(now, e.due.Sub(now))
			}
			break
		}
		heap.Pop(&w.queue)
		batch = append(batch, e)
	}
	if len(batch) == 0 {
		return nil, w.sleepFor(now, time.Hour)
	}
	w.sleepsTill = time.Time{}
	return batch, 0
}

// sleepFor records that the loop sleeps for d from now, and returns d. The
// caller holds w.mu.
func (w *Watchdog) sleepFor(now time.Time, d time.Duration) time.Duration {
	w.sleepsTill = now.Add(d)
	return d
}

func (w *Watchdog) renewBatch(batch []*Entry) {
	values := make([]any, len(batch))
	for i, e := range batch {
		values[i] = e.value
	}
	// The next renewal of a renewed lock is due an interval after this
	// round's start, not its end: a round that takes long on a loaded
	// machine must not stretch the interval by its own length (with an
	// interval of a third of the lease, a round as long again would leave
	// two thirds of the lease between one renewal and the next).
	start := time.Now()
	outcomes := w.renew(w.ctx, values)
	now := time.Now()

	w.mu.Lock()
	var lost []*Entry
	for i, e := range batch {
		if e.stopped || w.closed {
			continue
		}
		var o Outcome
		if i < len(outcomes) {
			o = outcomes[i]
		}
		switch {
		case o.Lost:
			e.stopped = true
			delete(w.all, e)
			lost = append(lost, e)
			continue
		case o.Renewed:
			e.validUntil = o.ValidUntil
			e.timer.Reset(e.untilLoss(o.ValidUntil))
			e.due, e.retry = start.Add(e.every), false
		default:
			// Retry well before the deadline: one slow node or a blip must
			// not lose the lock.
			e.due, e.retry = now.Add(max(w.opts.MinRetry, e.every/10)), true
		}
		heap.Push(&w.queue, e)
	}
	w.mu.Unlock()
	for _, e := range lost {
		e.timer.Stop()
		go e.onLost(false)
	}
}

// ahead is how long before it is due the entry may be renewed, with
// others due then: a quarter of its interval, so that locks taken at
// nearly the same time share round trips. A retry waits its whole delay:
// that is shorter than the quarter, and taken early it was taken at once,
// over and over (736,240 renewals in 350 ms of nodes that refuse at once,
// and while an Unlock held the hold, where 30 were meant).
func (e *Entry) ahead() time.Duration {
	if e.retry {
		return 0
	}
	return e.every / 4
}

// untilLoss is how long from now the loss of the entry's lock, valid until
// validUntil, is reported: its early margin before the deadline.
func (e *Entry) untilLoss(validUntil time.Time) time.Duration {
	return time.Until(validUntil.Add(-e.early))
}

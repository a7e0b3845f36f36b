// Package workers runs short functions on goroutines that outlive them.
//
// A lock operation calls every node in parallel, so each call needs a
// goroutine of its own. Started afresh, such a goroutine begins with a
// small stack that the go-redis call path then grows by copying, on every
// call: in a profile of a sequential Lock/Unlock cycle that growth cost a
// tenth of the client's CPU. A Pool keeps finished goroutines parked for a
// while, their stacks already grown, and hands them the next function.
package workers

import (
	"sync"
	"time"
)

// Task is work for a Pool: Run is called once, on one of its goroutines.
// A pointer to a struct that already exists makes a Task without an
// allocation, where a closure capturing the same state would need one.
type Task interface{ Run() }

// taskFunc is a plain function as a Task.
type taskFunc func()

func (f taskFunc) Run() { f() }

// Pool runs tasks on parked goroutines, starting a new one when none is
// parked. A goroutine parks for up to its idle time after each task and
// then exits, so a burst leaves nothing behind for long. The zero Pool is
// not usable; make one with New. A Pool is safe for concurrent use.
type Pool struct {
	idle  time.Duration
	tasks chan Task // unbuffered: a send succeeds only into a parked goroutine
	quit  chan struct{}

	mu      sync.Mutex
	closed  bool
	running sync.WaitGroup // goroutines started by the Pool; Add only under mu while open
}

// New returns a Pool whose goroutines park for idle between functions.
func New(idle time.Duration) *Pool {
	return &Pool{idle: idle, tasks: make(chan Task), quit: make(chan struct{})}
}

// Go runs f on a parked goroutine, or on a new one when none is parked.
// It never blocks. After Close, f runs on a goroutine of its own that
// exits with it.
func (p *Pool) Go(f func()) { p.Run(taskFunc(f)) }

// Run is Go for a Task: t.Run() runs on a parked goroutine, or on a new one.
func (p *Pool) Run(t Task) {
	select {
	case p.tasks <- t:
		return
	default:
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		go t.Run()
		return
	}
	p.running.Add(1)
	p.mu.Unlock()
	go p.work(t)
}

// work runs t, then whatever it is handed while parked, until it has been
// idle for p.idle or the Pool closes.
func (p *Pool) work(t Task) {
	defer p.running.Done()
	idle := time.NewTimer(p.idle) // one timer for the goroutine's whole life
	defer idle.Stop()
	for {
		t.Run()
		t = nil // let it be collected while parked
		idle.Reset(p.idle)
		select {
		case t = <-p.tasks:
		case <-idle.C:
			return
		case <-p.quit:
			return
		}
	}
}

// Close makes parked goroutines exit, and busy ones once their function
// returns, and waits for all of them. Functions handed to Go afterwards
// still run, each on a goroutine of its own.
func (p *Pool) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.quit)
	}
	p.mu.Unlock()
	p.running.Wait()
}

package workers

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestPoolRunsEveryFunction(t *testing.T) {
	defer goleak.VerifyNone(t)
	p := New(time.Second)
	var ran atomic.Int64
	var wg sync.WaitGroup
	for range 1000 {
		wg.Add(1)
		p.Go(func() { defer wg.Done(); ran.Add(1) })
	}
	wg.Wait()
	p.Close()
	if got := ran.Load(); got != 1000 {
		t.Fatalf("ran %d functions, want 1000", got)
	}
}

func TestPoolReusesParkedGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t)
	p := New(time.Minute)
	defer p.Close()
	done := make(chan struct{})
	p.Go(func() { close(done) })
	<-done
	// The goroutine that ran the first function parks; give it the time to.
	deadline := time.Now().Add(5 * time.Second)
	for {
		select {
		case p.tasks <- taskFunc(func() {}):
			return // a parked goroutine took it
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no goroutine parked after running a function")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPoolGoroutinesExitWhenIdle(t *testing.T) {
	p := New(10 * time.Millisecond)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		p.Go(wg.Done)
	}
	wg.Wait()
	// No Close: the idle time alone must end them.
	goleak.VerifyNone(t)
}

func TestPoolConcurrentFunctionsRunInParallel(t *testing.T) {
	defer goleak.VerifyNone(t)
	p := New(time.Second)
	defer p.Close()
	// Each function waits for all the others to start: with fewer
	// goroutines than functions, they would never all start.
	const n = 16
	var started sync.WaitGroup
	started.Add(n)
	all := make(chan struct{})
	var done sync.WaitGroup
	for range n {
		done.Add(1)
		p.Go(func() { defer done.Done(); started.Done(); <-all })
	}
	started.Wait()
	close(all)
	done.Wait()
}

func TestPoolGoAfterCloseStillRuns(t *testing.T) {
	defer goleak.VerifyNone(t)
	p := New(time.Second)
	p.Close()
	ran := make(chan struct{})
	p.Go(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("a function handed over after Close never ran")
	}
}

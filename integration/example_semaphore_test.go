package integration_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relock-go/relock/lock"
)

// The runnable forms of package lock's Semaphore examples.

// A semaphore of 3 permits: at most 3 exports run at once across every
// process.
func Example_semaphore() {
	c, err := lock.New(lock.Options{Nodes: redisNodes()})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	exports, err := c.NewSemaphore("exports", 3)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := exports.Acquire(ctx, 1)
	if err != nil {
		fmt.Println("no permit:", err)
		return
	}
	defer p.Release(context.Background())
	fmt.Println("exporting with", p.Permits(), "of", exports.Capacity(), "permits")
	// Output: exporting with 1 of 3 permits
}

// TryAcquire never waits; Available reads how many permits are free.
func Example_semaphoreTryAcquire() {
	c, _ := lock.New(lock.Options{Nodes: redisNodes()})
	defer c.Close()
	ctx := context.Background()

	pool, _ := c.NewSemaphore("gpu-pool", 2)
	big, _ := pool.TryAcquire(ctx, 2)
	fmt.Println("took 2:", big != nil)
	small, _ := pool.TryAcquire(ctx, 1)
	fmt.Println("took 1 more:", small != nil)
	_ = big.Release(ctx)
	free, _ := pool.Available(ctx)
	fmt.Println("free after release:", free)
	// Output:
	// took 2: true
	// took 1 more: false
	// free after release: 2
}

// An operator frees one stuck holder of a semaphore; the other keeps its
// permit, and the stuck one learns of it.
func Example_evict() {
	c, _ := lock.New(lock.Options{Nodes: redisNodes()})
	defer c.Close()
	ctx := context.Background()

	renders, _ := c.NewSemaphore("renders", 2)
	stuck, _ := renders.TryAcquire(ctx, 1)
	live, _ := renders.TryAcquire(ctx, 1)
	evicted, err := c.Evict(ctx, "renders", stuck.Owner())
	fmt.Println("evicted:", evicted, err)
	free, _ := renders.Available(ctx)
	fmt.Println("free:", free)
	fmt.Println("the stuck holder lost its permit:", errors.Is(stuck.Release(ctx), lock.ErrLost))
	fmt.Println("the other releases its own:", live.Release(ctx))
	// Output:
	// evicted: true <nil>
	// free: 1
	// the stuck holder lost its permit: true
	// the other releases its own: <nil>
}

// The runnable form of package lock's ExampleWaiters: one Client holds a
// lock, another's Lock waits, and a third reads who waits.
func Example_waiters() {
	holding, _ := lock.New(lock.Options{Nodes: redisNodes()})
	defer holding.Close()
	waiting, _ := lock.New(lock.Options{Nodes: redisNodes()})
	defer waiting.Close()
	ctx := context.Background()

	holder, waiter := holding.NewMutex("backups"), waiting.NewMutex("backups")
	_ = holder.Lock(ctx)
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(ctx) }()

	_, quorum := holding.Nodes()
	var waiters []lock.Waiter
	for deadline := time.Now().Add(10 * time.Second); len(waiters) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		states, _ := holding.Inspect(ctx, "backups")
		waiters = lock.Waiters(states, quorum)
	}
	fmt.Println("waiting:", len(waiters), len(waiters) == 1 && waiters[0].Owner == waiter.Owner())
	_ = holder.Unlock(ctx)
	fmt.Println("the waiter got the lock:", <-done)
	_ = waiter.Unlock(ctx)
	// Output:
	// waiting: 1 true
	// the waiter got the lock: <nil>
}

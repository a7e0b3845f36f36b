package lock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
)

// A semaphore of 3 permits: at most 3 exports run at once across every
// process. Acquire waits for a permit; ctx bounds the wait, not the hold;
// the watchdog renews the permit until Release.
func ExampleSemaphore_Acquire() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, err := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	exports, err := c.NewSemaphore("exports", 3)
	if err != nil {
		panic(err) // an empty name or a capacity below 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := exports.Acquire(ctx, 1)
	if err != nil {
		fmt.Println("no permit:", err)
		return
	}
	defer p.Release(context.Background())
	select {
	case <-p.Lost(): // the permit could no longer be proven held: stop
	default:
		fmt.Println("exporting with", p.Permits(), "of", exports.Capacity(), "permits")
	}
}

// TryAcquire never waits: a nil Permit and no error say the permits are
// not free. Available reads how many an acquisition could take now.
func ExampleSemaphore_TryAcquire() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, _ := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
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
}

// Over N masters an acquisition needs more than a majority when the
// capacity is above 1 (see SemaphoreQuorum).
func ExampleSemaphoreQuorum() {
	fmt.Println(lock.SemaphoreQuorum(3, 1), lock.SemaphoreQuorum(3, 2), lock.SemaphoreQuorum(5, 2), lock.SemaphoreQuorum(5, 3))
	// Output: 2 3 4 4
}

// An operator frees the permits of one stuck holder (its owner id as
// Inspect or relock inspect show it), and leaves the other holders'. The
// stuck holder, if it still runs, finds out at its next renewal.
func ExampleClient_Evict() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, _ := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	defer c.Close()

	evicted, err := c.Evict(context.Background(), "renders", "9f1c…:4be0…")
	switch {
	case err != nil:
		fmt.Println("the nodes could not agree:", err)
	case !evicted:
		fmt.Println("that owner holds nothing of renders")
	}
}

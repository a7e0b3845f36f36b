package lock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
)

// A fair lock serves its waiters, in every process, in the order they
// asked; TryLock never jumps the queue.
func ExampleClient_NewFairMutex() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, _ := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	defer c.Close()
	ctx := context.Background()

	first := c.NewFairMutex("printer")
	_ = first.Lock(ctx)

	// Two more owners wait, the first to ask first.
	got := make(chan string, 2)
	for i, who := range []string{"second", "third"} {
		m := c.NewFairMutex("printer")
		go func() {
			_ = m.Lock(ctx)
			got <- who
			_ = m.Unlock(ctx)
		}()
		for c.Stats().Sleeping < i+1 { // so they ask in this order
			time.Sleep(time.Millisecond)
		}
	}
	_ = first.Unlock(ctx)
	fmt.Println(<-got, <-got)
}

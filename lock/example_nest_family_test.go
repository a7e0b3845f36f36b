package lock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
)

// DoWrite's fn context carries the write hold: a DoRead deeper down, with
// a context derived from it, is a read hold of the same owner (a
// downgrade: it does not wait), and a DoWrite there re-enters.
func ExampleClient_DoWrite() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, _ := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	defer c.Close()

	readConfig := func(ctx context.Context) error {
		return c.DoRead(ctx, "config", func(ctx context.Context) error {
			return nil // read under the writer's own read hold
		})
	}
	err := c.DoWrite(context.Background(), "config", func(ctx context.Context) error {
		// ... write the new config, then check it with the reader's code:
		return readConfig(ctx)
	})
	fmt.Println("err:", err)
}

// A DoWrite inside a DoRead's fn would wait for its own read hold forever:
// it returns ErrUpgrade at once instead, and its fn does not run.
func ExampleClient_DoRead() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, _ := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	defer c.Close()

	err := c.DoRead(context.Background(), "config", func(ctx context.Context) error {
		err := c.DoWrite(ctx, "config", func(context.Context) error { return nil })
		fmt.Println("upgrade refused:", errors.Is(err, lock.ErrUpgrade))
		return nil
	})
	fmt.Println("err:", err)
}

// DoFair is Do with a fair lock: a fresh owner waits its turn; a nested
// DoFair (or Do) with fn's context re-enters.
func ExampleClient_DoFair() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, _ := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	defer c.Close()

	err := c.DoFair(context.Background(), "printer", func(ctx context.Context) error {
		return c.DoFair(ctx, "printer", func(context.Context) error {
			return nil // the same owner, hold count 2
		})
	})
	fmt.Println("err:", err)
}

// Semaphore.Do holds n permits while fn runs. A nested Do asking for no
// more than the scope holds runs on those permits (it takes none more);
// asking for more is refused at once.
func ExampleSemaphore_Do() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, _ := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	defer c.Close()
	exports, err := c.NewSemaphore("exports", 3)
	if err != nil {
		panic(err)
	}

	err = exports.Do(context.Background(), 2, func(ctx context.Context) error {
		if err := exports.Do(ctx, 1, func(context.Context) error { return nil }); err != nil {
			return err // re-entered: still 2 permits held in all
		}
		err := exports.Do(ctx, 3, func(context.Context) error { return nil })
		fmt.Println("more than held:", errors.Is(err, lock.ErrInvalidArgument))
		return nil
	})
	fmt.Println("err:", err)
}

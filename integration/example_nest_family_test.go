package integration_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/relock-go/relock/lock"
)

// DoWrite's fn context carries the write hold: a DoRead with a context
// derived from it is a read hold of the same owner (a downgrade, no wait),
// a DoWrite there re-enters, and a DoWrite in a DoRead's fn is refused at
// once with ErrUpgrade.
func Example_doWriteNested() {
	c, _ := lock.New(lock.Options{Nodes: redisNodes()})
	defer c.Close()
	ctx := context.Background()

	err := c.DoWrite(ctx, "config", func(ctx context.Context) error {
		fmt.Println("writing")
		return c.DoRead(ctx, "config", func(ctx context.Context) error {
			fmt.Println("reading as the writer")
			return c.DoWrite(ctx, "config", func(context.Context) error {
				fmt.Println("writing again, re-entered")
				return nil
			})
		})
	})
	fmt.Println("err:", err)

	err = c.DoRead(ctx, "config", func(ctx context.Context) error {
		err := c.DoWrite(ctx, "config", func(context.Context) error { return nil })
		fmt.Println("a reader asks to write:", errors.Is(err, lock.ErrUpgrade))
		return nil
	})
	fmt.Println("err:", err)
	// Output:
	// writing
	// reading as the writer
	// writing again, re-entered
	// err: <nil>
	// a reader asks to write: true
	// err: <nil>
}

// DoFair is Do with a fair lock; nested, it re-enters the same owner.
func Example_doFairNested() {
	c, _ := lock.New(lock.Options{Nodes: redisNodes()})
	defer c.Close()

	err := c.DoFair(context.Background(), "printer", func(ctx context.Context) error {
		return c.DoFair(ctx, "printer", func(context.Context) error {
			fmt.Println("printing, re-entered")
			return nil
		})
	})
	fmt.Println("err:", err)
	// Output:
	// printing, re-entered
	// err: <nil>
}

// Semaphore.Do holds n permits while fn runs; a nested Do asking for no
// more than that runs on them, and asking for more is refused at once.
func Example_semaphoreDoNested() {
	c, _ := lock.New(lock.Options{Nodes: redisNodes()})
	defer c.Close()
	exports, _ := c.NewSemaphore("exports", 3)
	ctx := context.Background()

	err := exports.Do(ctx, 2, func(ctx context.Context) error {
		err := exports.Do(ctx, 1, func(context.Context) error {
			free, _ := exports.Available(ctx)
			fmt.Println("nested, permits free:", free)
			return nil
		})
		fmt.Println("nested Do:", err)
		err = exports.Do(ctx, 3, func(context.Context) error { return nil })
		fmt.Println("more than held:", errors.Is(err, lock.ErrInvalidArgument))
		return nil
	})
	fmt.Println("err:", err)
	free, _ := exports.Available(ctx)
	fmt.Println("after, permits free:", free)
	// Output:
	// nested, permits free: 1
	// nested Do: <nil>
	// more than held: true
	// err: <nil>
	// after, permits free: 3
}

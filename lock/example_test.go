package lock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
)

// These examples are compile-checked here; their runnable forms, with checked
// output against Redis in containers, live in the integration module
// (integration/example_test.go).

// A Client over three independent masters: a lock needs two of them.
func ExampleNew() {
	c, err := lock.New(lock.Options{Nodes: []redis.UniversalClient{
		redis.NewClient(&redis.Options{Addr: "redis-a:6379"}),
		redis.NewClient(&redis.Options{Addr: "redis-b:6379"}),
		redis.NewClient(&redis.Options{Addr: "redis-c:6379"}),
	}})
	if err != nil {
		panic(err) // an option is wrong: the error says which and why
	}
	defer c.Close()
}

// The replicated mode, for one master with replicas behind Sentinel: each
// write waits (WAIT) until a replica has it, so Lock returns a lock that a
// failover to that replica keeps.
func ExampleOptions_replicas() {
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    "locks",
		SentinelAddrs: []string{"sentinel-a:26379", "sentinel-b:26379", "sentinel-c:26379"},
	})
	defer rdb.Close()
	c, err := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}, Replicas: 1})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m := c.NewMutex("invoices")
	if err := m.Lock(ctx); err != nil {
		if errors.Is(err, lock.ErrNotReplicated) {
			fmt.Println("the master took it, but no replica acknowledged in time")
		}
		fmt.Println("not locked:", err)
		return
	}
	defer m.Unlock(context.Background())
}

// Lock blocks until the lock is free; ctx bounds the wait, not the hold.
// Without an explicit lease the watchdog keeps the lock until Unlock.
func ExampleMutex_Lock() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, err := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	m := c.NewMutex("orders:42")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Lock(ctx); err != nil {
		fmt.Println("not locked:", err)
		return
	}
	defer m.Unlock(context.Background())
	fmt.Println("processing order 42, holds:", m.HoldCount())
}

// The same handle may lock again without blocking; it must unlock as many
// times. Another handle is another owner.
func ExampleMutex_Lock_nested() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, _ := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	defer c.Close()
	ctx := context.Background()

	outer := c.NewMutex("tenant:7")
	_ = outer.Lock(ctx)
	_ = outer.Lock(ctx) // re-entered: no wait
	fmt.Println("holds:", outer.HoldCount())

	other := c.NewMutex("tenant:7")
	ok, _ := other.TryLock(ctx) // false: outer holds it
	fmt.Println("other owner got it:", ok)

	_ = outer.Unlock(ctx)
	_ = outer.Unlock(ctx)
	ok, _ = other.TryLock(ctx) // true: outer let go twice
	fmt.Println("after both unlocks, other owner got it:", ok)
	_ = other.Unlock(ctx)
}

// TryLock makes one attempt and never waits.
func ExampleMutex_TryLock() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, _ := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	defer c.Close()
	ctx := context.Background()

	cron := c.NewMutex("nightly-report")
	ok, err := cron.TryLock(ctx)
	if err != nil {
		fmt.Println("nodes unavailable:", err)
		return
	}
	if !ok {
		fmt.Println("another replica runs the report")
		return
	}
	defer cron.Unlock(ctx)
	fmt.Println("this replica runs the report")
}

// A Lock that cannot get the lock in time returns ctx's error, and leaves
// nothing of its attempt on any node.
func ExampleMutex_Lock_timeout() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, _ := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := c.NewMutex("migration:tenant-9").Lock(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		fmt.Println("another owner held it for the whole 100ms")
	}
}

// LockFor takes the lock with an explicit lease that is not renewed.
func ExampleMutex_LockFor() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, _ := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	defer c.Close()
	ctx := context.Background()

	m := c.NewMutex("cache:rebuild")
	if err := m.LockFor(ctx, 10*time.Second); err != nil {
		panic(err)
	}
	defer m.Unlock(ctx)
	fmt.Println("valid for about 10s:", time.Until(m.ValidUntil()).Round(time.Second))
}

// Do runs a function under the lock; its ctx ends if the lock is lost.
func ExampleClient_Do() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, _ := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	defer c.Close()

	err := c.Do(context.Background(), "orders:43", func(ctx context.Context) error {
		// Long work checks ctx: it ends when the lock can no longer be
		// proven held.
		return ctx.Err()
	})
	fmt.Println("err:", err)
}

// DoAll holds several locks together: a transfer between two accounts
// locks both, whichever way round another transfer names them.
func ExampleClient_DoAll() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, _ := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.DoAll(ctx, []string{"account:17", "account:4"}, func(ctx context.Context) error {
		// Both accounts are ours until fn returns, or ctx ends on a loss.
		return ctx.Err()
	})
	fmt.Println("err:", err)
}

// WithFencing hands each holder a token that increases from one holder to
// the next; the guarded resource rejects writes with an older token.
func ExampleWithFencing() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, _ := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	defer c.Close()
	ctx := context.Background()

	m := c.NewMutex("ledger", lock.WithFencing(lock.CounterTokens))
	if err := m.Lock(ctx); err != nil {
		panic(err)
	}
	defer m.Unlock(ctx)
	// Send the token with every write; the storage keeps the highest it has
	// seen and refuses older ones.
	fmt.Println("write with token", m.Token())
}

// Do's fn context carries the hold: a Do on the same name deeper down, with
// a context derived from it, re-enters the same owner instead of waiting
// for the lock to be freed. Any other context gets a new owner.
func ExampleClient_Do_nested() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, _ := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	defer c.Close()

	// debit may run on its own or inside a larger transfer that already
	// holds the account's lock.
	debit := func(ctx context.Context) error {
		return c.Do(ctx, "account:7", func(ctx context.Context) error {
			fmt.Println("debit under the lock")
			return nil
		})
	}
	err := c.Do(context.Background(), "account:7", func(ctx context.Context) error {
		fmt.Println("transfer under the lock")
		return debit(ctx) // re-entered: no wait
	})
	fmt.Println("err:", err)
}

// LockContext is Do without the callback: the returned context carries the
// hold (a Do with a context derived from it re-enters) and ends if the lock
// is lost; unlock releases it.
func ExampleClient_LockContext() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, _ := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	held, unlock, err := c.LockContext(ctx, "migration:tenant-9")
	if err != nil {
		fmt.Println("not locked:", err)
		return
	}
	defer unlock()
	// Long work passes held along and checks it: it ends when the lock can
	// no longer be proven held (context.Cause(held) is lock.ErrLost).
	err = c.Do(held, "migration:tenant-9", func(context.Context) error { return nil })
	fmt.Println("nested Do:", err)
}

// Many readers hold an RWMutex at once; a writer holds it alone. A reader
// asking to write is refused at once with ErrUpgrade; a writer may read
// (downgrade) and still reads after its last Unlock.
func ExampleRWMutex() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, _ := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	defer c.Close()
	ctx := context.Background()

	a, b := c.NewRWMutex("catalog"), c.NewRWMutex("catalog")
	_ = a.RLock(ctx)
	ok, _ := b.TryRLock(ctx) // readers share
	fmt.Println("second reader in:", ok)
	fmt.Println("reader asks to write:", errors.Is(a.Lock(ctx), lock.ErrUpgrade))
	_ = a.RUnlock(ctx)
	_ = b.RUnlock(ctx)

	w := c.NewRWMutex("catalog")
	_ = w.Lock(ctx)
	ok, _ = a.TryRLock(ctx) // no reader beside a writer
	fmt.Println("reader beside the writer:", ok)
	_ = w.RLock(ctx) // the writer reads too
	_ = w.Unlock(ctx)
	fmt.Println("after Unlock, reads:", w.ReadHoldCount(), "writes:", w.WriteHoldCount())
	_ = w.RUnlock(ctx)
}

// Who waits for a lock, in the order it goes to them: read every node
// without changing anything, then merge their wait queues.
func ExampleWaiters() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, _ := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}})
	defer c.Close()

	states, err := c.Inspect(context.Background(), "nightly-report")
	if err != nil {
		fmt.Println("cannot read:", err)
		return
	}
	_, quorum := c.Nodes()
	for i, w := range lock.Waiters(states, quorum) {
		fmt.Printf("%d. %s, waiting since %s\n", i+1, w.Owner, w.Since.Format(time.TimeOnly))
	}
}

package integration_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
)

// The runnable, output-checked forms of the examples in package lock, against
// one Redis master in a container (the first node of the package's cluster,
// reset first). Package lock's own examples build their clients inline, as a
// user would, and are compile-checked only.

// redisNodes stands for the caller's own go-redis clients of independent
// masters.
func redisNodes() []redis.UniversalClient {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cluster.Reset(ctx); err != nil {
		panic(err)
	}
	return cluster.Clients()[:1]
}

// Lock blocks until the lock is free; ctx bounds the wait, not the hold.
// Without an explicit lease the watchdog keeps the lock until Unlock.
func Example_lock() {
	c, err := lock.New(lock.Options{Nodes: redisNodes()})
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
	// Output: processing order 42, holds: 1
}

// The same handle may lock again without blocking; it must unlock as many
// times. Another handle is another owner.
func Example_nested() {
	c, _ := lock.New(lock.Options{Nodes: redisNodes()})
	defer c.Close()
	ctx := context.Background()

	outer := c.NewMutex("tenant:7")
	_ = outer.Lock(ctx)
	_ = outer.Lock(ctx) // re-entered: no wait
	fmt.Println("holds:", outer.HoldCount())

	other := c.NewMutex("tenant:7")
	ok, _ := other.TryLock(ctx)
	fmt.Println("other owner got it:", ok)

	_ = outer.Unlock(ctx)
	_ = outer.Unlock(ctx)
	ok, _ = other.TryLock(ctx)
	fmt.Println("after both unlocks, other owner got it:", ok)
	_ = other.Unlock(ctx)
	// Output:
	// holds: 2
	// other owner got it: false
	// after both unlocks, other owner got it: true
}

// TryLock makes one attempt and never waits.
func Example_tryLock() {
	c, _ := lock.New(lock.Options{Nodes: redisNodes()})
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
	// Output: this replica runs the report
}

// A Lock that cannot get the lock in time returns ctx's error, and leaves
// nothing of its attempt on any node.
func Example_lockTimeout() {
	c, _ := lock.New(lock.Options{Nodes: redisNodes()})
	defer c.Close()

	holder := c.NewMutex("migration:tenant-9")
	_ = holder.Lock(context.Background())
	defer holder.Unlock(context.Background())

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := c.NewMutex("migration:tenant-9").Lock(ctx)
	fmt.Println("timed out:", errors.Is(err, context.DeadlineExceeded))
	// Output: timed out: true
}

// LockFor takes the lock with an explicit lease that is not renewed.
func Example_lockFor() {
	c, _ := lock.New(lock.Options{Nodes: redisNodes()})
	defer c.Close()
	ctx := context.Background()

	m := c.NewMutex("cache:rebuild")
	if err := m.LockFor(ctx, 10*time.Second); err != nil {
		panic(err)
	}
	fmt.Println("valid for about 10s:", time.Until(m.ValidUntil()) > 9*time.Second)
	_ = m.Unlock(ctx)
	// Output: valid for about 10s: true
}

// Do runs a function under the lock; its ctx ends if the lock is lost.
func Example_do() {
	c, _ := lock.New(lock.Options{Nodes: redisNodes()})
	defer c.Close()

	err := c.Do(context.Background(), "orders:43", func(ctx context.Context) error {
		fmt.Println("working under the lock")
		return ctx.Err()
	})
	fmt.Println("err:", err)
	// Output:
	// working under the lock
	// err: <nil>
}

// DoAll holds several locks together: a transfer between two accounts
// locks both, whichever way round another transfer names them.
func Example_doAll() {
	c, _ := lock.New(lock.Options{Nodes: redisNodes()})
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.DoAll(ctx, []string{"account:17", "account:4"}, func(ctx context.Context) error {
		held, _ := c.IsLocked(ctx, "account:4")
		fmt.Println("both held; account:4 locked:", held)
		return ctx.Err()
	})
	fmt.Println("err:", err)
	// Output:
	// both held; account:4 locked: true
	// err: <nil>
}

// storage stands for a resource guarded by the lock: it remembers the
// highest fencing token it has accepted and refuses anything older, so a
// holder that stalled past its lease cannot overwrite its successor's work.
type storage struct{ highest int64 }

func (s *storage) write(token int64, what string) error {
	if token < s.highest {
		return fmt.Errorf("rejected %q: token %d is older than %d", what, token, s.highest)
	}
	s.highest = token
	return nil
}

// WithFencing hands each holder a token that increases from one holder to
// the next; the guarded resource rejects writes with an older token.
func Example_fencing() {
	c, _ := lock.New(lock.Options{Nodes: redisNodes()})
	defer c.Close()
	ctx := context.Background()
	store := &storage{}

	first := c.NewMutex("ledger", lock.WithFencing(lock.CounterTokens))
	_ = first.Lock(ctx)
	stale := first.Token() // imagine this holder stalls here, past its lease
	_ = first.Unlock(ctx)

	second := c.NewMutex("ledger", lock.WithFencing(lock.CounterTokens))
	_ = second.Lock(ctx)
	fmt.Println("second holder's token is newer:", second.Token() > stale)
	fmt.Println(store.write(second.Token(), "second"))
	_ = second.Unlock(ctx)

	fmt.Println(store.write(stale, "first, after its stall") != nil)
	// Output:
	// second holder's token is newer: true
	// <nil>
	// true
}

// Do's fn context carries the hold: a Do on the same name deeper down, with
// a context derived from it, re-enters the same owner instead of waiting
// for the lock to be freed. Any other context gets a new owner.
func Example_doNested() {
	c, _ := lock.New(lock.Options{Nodes: redisNodes()})
	defer c.Close()

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
	// Output:
	// transfer under the lock
	// debit under the lock
	// err: <nil>
}

// LockContext is Do without the callback: the returned context carries the
// hold (a Do with a context derived from it re-enters) and ends if the lock
// is lost; unlock releases it.
func Example_lockContext() {
	c, _ := lock.New(lock.Options{Nodes: redisNodes()})
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	held, unlock, err := c.LockContext(ctx, "migration:tenant-9")
	if err != nil {
		fmt.Println("not locked:", err)
		return
	}
	err = c.Do(held, "migration:tenant-9", func(context.Context) error { return nil })
	fmt.Println("nested Do:", err)
	fmt.Println("unlock:", unlock())
	fmt.Println("held ended:", held.Err() != nil)
	fmt.Println("unlock again:", errors.Is(unlock(), lock.ErrNotHeld))
	// Output:
	// nested Do: <nil>
	// unlock: <nil>
	// held ended: true
	// unlock again: true
}

// Many readers hold an RWMutex at once; a writer holds it alone. A reader
// asking to write is refused at once with ErrUpgrade; a writer may read
// (downgrade) and still reads after its last Unlock.
func Example_rwMutex() {
	c, _ := lock.New(lock.Options{Nodes: redisNodes()})
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
	// Output:
	// second reader in: true
	// reader asks to write: true
	// reader beside the writer: false
	// after Unlock, reads: 1 writes: 0
}

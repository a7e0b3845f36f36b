package pubsub_test

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/pubsub"
)

// A blocking lock subscribes before its last attempt, then sleeps until a
// release, the holder's lease, or ctx, whichever comes first.
func ExampleBroker_Subscribe() {
	nodes := []redis.UniversalClient{
		redis.NewClient(&redis.Options{Addr: "10.0.0.1:6379"}),
		redis.NewClient(&redis.Options{Addr: "10.0.0.2:6379"}),
		redis.NewClient(&redis.Options{Addr: "10.0.0.3:6379"}),
	}
	b := pubsub.NewBroker(nodes, pubsub.Options{})
	defer b.Close()

	// tryAcquire stands for one quorum attempt; on failure it returns the
	// holder's remaining lease.
	tryAcquire := func(context.Context) (ok bool, ttl time.Duration, err error) { return true, 0, nil }

	lock := func(ctx context.Context) error {
		w, err := b.Subscribe(ctx, "relock:{orders:42}:released")
		if err != nil {
			return err
		}
		defer w.Close()
		for {
			ok, ttl, err := tryAcquire(ctx)
			if err != nil || ok {
				return err
			}
			timer := time.NewTimer(ttl)
			select {
			case <-w.Wake():
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				return ctx.Err()
			}
			timer.Stop()
		}
	}
	_ = lock
}

package kinds

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
)

// The replicated mode over one Sentinel group (a master and its replica):
// Lock returns once the replica, too, has the lock, so a failover to it
// keeps the lock.
func Example_replicated() {
	group := sentinels.Groups[2]
	rdb := group.NewClient() // redis.NewFailoverClient(&redis.FailoverOptions{MasterName: ..., SentinelAddrs: ...})
	defer rdb.Close()
	c, err := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}, Replicas: 1})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := c.NewMutex("invoices")
	if err := m.Lock(ctx); err != nil {
		fmt.Println("not locked:", err)
		return
	}
	defer m.Unlock(context.Background())

	replica, err := group.Replica(ctx)
	if err != nil {
		panic(err)
	}
	count, err := replica.Direct().HGet(ctx, "relock:{invoices}", m.Owner()).Int()
	fmt.Println("the replica has the hold:", count, err)
	// Output: the replica has the hold: 1 <nil>
}

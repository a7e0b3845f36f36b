package reentrant_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/reentrant"
)

func TestNewSemaphoreKeyNames(t *testing.T) {
	k, err := reentrant.NewSemaphoreKey("app", "pool")
	if err != nil {
		t.Fatal(err)
	}
	lock, _ := reentrant.NewKey("app", "pool")
	for _, key := range []string{k.Lock, k.Leases, k.Channel, k.Tombstone("c:a")} {
		if !strings.HasPrefix(key, "app:{pool}:sem") {
			t.Errorf("key %q is not under the name's hash tag and the semaphore's prefix", key)
		}
		for _, other := range []string{lock.Lock, lock.Channel, lock.Fence, lock.Queue, lock.Tombstone("c:a")} {
			if key == other {
				t.Errorf("the semaphore and the lock of one name share key %q", key)
			}
		}
	}
	if _, err := reentrant.NewSemaphoreKey("", ""); !errors.Is(err, reentrant.ErrInvalidArgument) {
		t.Errorf("empty name: %v, want ErrInvalidArgument", err)
	}
	if got := lock.Semaphore(); got != k {
		t.Errorf("the lock's Semaphore() is %+v, want NewSemaphoreKey's %+v", got, k)
	}
	if got := k.Semaphore(); got != k {
		t.Errorf("a semaphore's Semaphore() is %+v, want itself", got)
	}
}

func TestSemaphoreOpsAreCheckedBeforeAnyCall(t *testing.T) {
	// A client that can reach nothing: a bad Op must be refused before a
	// call is made.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 50 * time.Millisecond})
	defer rdb.Close()
	n := reentrant.NewNode(rdb, 0)
	k, _ := reentrant.NewSemaphoreKey("", "pool")
	good := reentrant.Op{Key: k, Owner: "c:a", Lease: time.Second, Count: 1, Seq: 1, Mode: reentrant.Semaphore, Permits: 1, Capacity: 2}
	for name, mutate := range map[string]func(*reentrant.Op){
		"no leases key": func(op *reentrant.Op) { op.Key.Leases = "" },
		"capacity 0":    func(op *reentrant.Op) { op.Capacity = 0 },
		"permits 0":     func(op *reentrant.Op) { op.Permits = 0 },
		"permits > k":   func(op *reentrant.Op) { op.Permits = 3 },
	} {
		op := good
		mutate(&op)
		if _, err := n.Acquire(context.Background(), op); !errors.Is(err, reentrant.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
}

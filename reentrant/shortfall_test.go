package reentrant

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A WAIT that answered with too few replicas came over a sound connection,
// which a kept one keeps serving; a WAIT that failed broke it as its own
// failure did. Before 2026-12-06 every shortfall gave the connection back.
func TestShortfallBreaksTheConnectionOnlyWhenWAITFailed(t *testing.T) {
	rep := Replication{Replicas: 1, Timeout: 5 * time.Millisecond}
	trip := func(set func(*redis.IntCmd)) error {
		wait := redis.NewIntCmd(context.Background(), "wait", 1, 5)
		set(wait)
		return rep.shortfall([]redis.Cmder{redis.NewCmd(context.Background(), "evalsha"), wait})
	}
	short := trip(func(c *redis.IntCmd) { c.SetVal(0) })
	failed := trip(func(c *redis.IntCmd) { c.SetErr(io.ErrUnexpectedEOF) })
	refused := trip(func(c *redis.IntCmd) { c.SetErr(redis.ErrClosed) })
	none := rep.shortfall([]redis.Cmder{redis.NewCmd(context.Background(), "evalsha")})
	for _, err := range []error{short, failed, refused, none} {
		if !errors.Is(err, ErrNotReplicated) {
			t.Fatalf("%v: not ErrNotReplicated", err)
		}
	}
	if brokeConn(short) {
		t.Errorf("%v: the connection counted as broken", short)
	}
	for _, err := range []error{failed, refused, none} {
		if !brokeConn(err) {
			t.Errorf("%v: the connection counted as sound", err)
		}
	}
	if trip(func(c *redis.IntCmd) { c.SetVal(1) }) != nil {
		t.Error("enough replicas counted as a shortfall")
	}
	if got := short.Error(); got != "relock: write not acknowledged by enough replicas: 0 of 1 within 5ms" {
		t.Errorf("message %q", got)
	}
}

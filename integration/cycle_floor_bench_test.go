package integration_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/integration/fixture"
)

// The two scripts of a minimal single-node lock (SET NX PX, then a delete
// that checks the token), as bsm/redislock sends them.
var (
	floorObtain  = redis.NewScript(`return redis.call("set", KEYS[1], ARGV[1], "nx", "px", ARGV[2])`)
	floorRelease = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)
)

// BenchmarkSequentialCycleFloor is BenchmarkSequentialCycle's yardstick at
// 1 master: the same cycle as a minimal single-node lock (bsm/redislock's
// design: a random token, one script to take the key, one to delete it)
// written straight on go-redis, with the same client options. Its cpu-ns/op
// is about the least a Lock+Unlock cycle costs this client on this machine.
func BenchmarkSequentialCycleFloor(b *testing.B) {
	if err := cluster.Reset(context.Background()); err != nil {
		b.Fatal(err)
	}
	rdb := redis.NewClient(fixture.ClientOptions(cluster.Nodes[0].Addr()))
	defer rdb.Close()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	use0 := processUsage()
	for b.Loop() {
		var raw [16]byte
		_, _ = rand.Read(raw[:])
		token := base64.RawURLEncoding.EncodeToString(raw[:])
		ok, err := floorObtain.Run(ctx, rdb, []string{"floor"}, token, 30000).Result()
		if err != nil || ok != "OK" {
			b.Fatalf("obtain: %v %v", ok, err)
		}
		if n, err := floorRelease.Run(ctx, rdb, []string{"floor"}, token).Int64(); err != nil || n != 1 {
			b.Fatalf("release: %d %v", n, err)
		}
	}
	processUsage().report(b, use0)
}

package peers

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lua"
	"github.com/relock-go/relock/reentrant"
)

// ScriptCost is what one kind of acquire costs the server per call: its
// time inside the server (INFO commandstats usec over calls, around a
// redis-benchmark run on fresh keys), apart from the round trip. Two
// scripts per cycle, against one SET and one script, is where relock's
// server CPU per acquisition goes (see the load tables' Redis CPU /acq).
type ScriptCost struct {
	What    string
	PerCall time.Duration // server time per call, the commands the script runs included
	PerSec  float64       // redis-benchmark's rate
}

// The calls measured, each on a free key (redis-benchmark's __rand_int__).
// relock's acquire is sent with the KEYS and ARGV of a Mutex's first
// acquisition on a free lock, as acquire.lua's header lists them (the
// uncontended path: one EXISTS, then HSET and PEXPIRE); measureScriptCosts
// checks that it takes the lock. sameCommands is a script that runs the
// same three commands and nothing else, with the same KEYS and ARGV: the
// difference is acquire.lua's own work (its helpers' definitions, its
// checks).
const sameCommands = `if redis.call('EXISTS', KEYS[1], KEYS[3]) == 0 then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3], ARGV[1] .. '/seq', ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, tonumber(ARGV[3]), 0}
end
return {0, 0, 0}`

// acquireArgs is acquire.lua's KEYS (5, as the reentrant package names a
// lock's keys) and ARGV (6) for a first acquisition of the lock name.
func acquireArgs(name string) []string {
	const owner = "client-0123456789:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
	k, _ := reentrant.NewKey("", name) // never empty
	return []string{
		k.Lock, k.Fence, k.Tombstone(owner), k.Queue, k.QueueDeadlines,
		owner,             // ARGV[1]
		"30000", "1", "1", // lease, count, sequence number
		// The flags: no re-entry, no fence, no queue rule, one copy, no
		// holder asked, no waiting writer, no strays, unqueued, expect free.
		"000000110",
		"1733000000000001", // the ticket
	}
}

// measureScriptCosts measures the ScriptCosts on addr (client is its
// client): relock's acquire, the same commands in a script alone, and SET
// NX PX (redsync's and redislock's acquire). Each runs alone on the node,
// 16 clients with 8 calls in flight each.
func measureScriptCosts(ctx context.Context, client *redis.Client, addr string, cfg Config) ([]ScriptCost, error) {
	bin, host, port, err := redisBenchmark(addr)
	if err != nil {
		return nil, err
	}
	relockSHA, err := client.ScriptLoad(ctx, lua.Acquire.Source()).Result()
	if err != nil {
		return nil, fmt.Errorf("SCRIPT LOAD acquire.lua: %w", err)
	}
	sameSHA, err := client.ScriptLoad(ctx, sameCommands).Result()
	if err != nil {
		return nil, fmt.Errorf("SCRIPT LOAD: %w", err)
	}
	// The arguments must take a free lock, or the run would time another path.
	check := acquireArgs("cost:check")
	reply, err := client.EvalSha(ctx, relockSHA, check[:5], toAny(check[5:])...).Slice()
	if err != nil || len(reply) == 0 || reply[0] != int64(1) {
		return nil, fmt.Errorf("acquire.lua with the bench's arguments did not take a free lock: %v %v", reply, err)
	}
	free := acquireArgs("cost:__rand_int__")
	calls := []struct {
		what, command string
		argv          []string
	}{
		{"relock acquire.lua, a Mutex's first acquisition of a free lock (EXISTS, HSET, PEXPIRE)", "evalsha",
			append([]string{"EVALSHA", relockSHA, "5"}, free...)},
		{"a script running those three commands alone, same KEYS and ARGV", "evalsha",
			append([]string{"EVALSHA", sameSHA, "5"}, free...)},
		{"SET NX PX (redsync's and redislock's acquire)", "set",
			[]string{"SET", "cost:__rand_int__", free[5], "NX", "PX", "30000"}},
	}
	var out []ScriptCost
	for _, c := range calls {
		before, err := commandUsec(ctx, client, c.command)
		if err != nil {
			return out, err
		}
		bctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		args := append([]string{"-h", host, "-p", port, "-c", "16", "-P", "8",
			"-n", strconv.Itoa(cfg.BenchRequests), "-r", "100000000", "-q"}, c.argv...)
		raw, err := exec.CommandContext(bctx, bin, args...).CombinedOutput()
		cancel()
		if err != nil {
			return out, fmt.Errorf("redis-benchmark: %w: %s", err, lastLine(raw))
		}
		after, err := commandUsec(ctx, client, c.command)
		if err != nil {
			return out, err
		}
		cost := ScriptCost{What: c.what}
		if calls := after.calls - before.calls; calls > 0 {
			cost.PerCall = time.Duration(float64(after.usec-before.usec) / float64(calls) * float64(time.Microsecond))
		}
		cost.PerSec, _, _ = parseBenchmark(raw)
		out = append(out, cost)
		if err := client.FlushAll(ctx).Err(); err != nil {
			return out, err
		}
	}
	return out, nil
}

// usecStat is one command's calls and total server time (µs) so far.
type usecStat struct{ calls, usec int64 }

// commandUsec reads command's line of INFO commandstats, e.g.
// "cmdstat_evalsha:calls=3,usec=40,usec_per_call=13.33,...".
func commandUsec(ctx context.Context, c *redis.Client, command string) (usecStat, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return usecStat{}, err
	}
	line := parseInfo(info)["cmdstat_"+command]
	return usecStat{calls: statOf(line, "calls"), usec: statOf(line, "usec")}, nil
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

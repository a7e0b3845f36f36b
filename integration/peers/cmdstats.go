package peers

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// serverStats is a snapshot of the commands the nodes ran so far, from INFO
// commandstats: every command counts, also those a script runs (Redis
// counts redis.call in commandstats as well as the EVAL/EVALSHA itself).
type serverStats struct {
	calls     []int64       // per node: the calls of every command
	publishes int64         // PUBLISH calls, summed over the nodes
	cpu       time.Duration // the servers' user+system CPU (INFO cpu), summed over the nodes
}

// readServerStats snapshots the nodes of admin, in node order.
func readServerStats(ctx context.Context, admin []*redis.Client) (serverStats, error) {
	s := serverStats{calls: make([]int64, len(admin))}
	for i, c := range admin {
		info, err := c.Info(ctx, "commandstats", "cpu").Result()
		if err != nil {
			return s, fmt.Errorf("INFO on node %d: %w", i, err)
		}
		stats := parseInfo(info)
		for k, v := range stats {
			if strings.HasPrefix(k, "cmdstat_") {
				s.calls[i] += callsOf(v)
			}
		}
		s.publishes += callsOf(stats["cmdstat_publish"])
		s.cpu += secondsOf(stats["used_cpu_user"]) + secondsOf(stats["used_cpu_sys"])
	}
	return s, nil
}

// cpuSince returns the CPU time the servers used between the snapshot
// before and s, summed over the nodes (the bench's own INFO included: a
// few µs per node, small beside a slice's work).
func (s serverStats) cpuSince(before serverStats) time.Duration { return s.cpu - before.cpu }

// commandsSince returns the commands each node ran between the snapshot
// before and s, less the bench's own reads: Redis counts a command once it
// has run, so before's INFO is in the difference and s's own is not. The
// bench sends nothing else to the nodes between two snapshots.
func (s serverStats) commandsSince(before serverStats) []int64 {
	out := make([]int64, len(s.calls))
	for i := range s.calls {
		out[i] = s.calls[i] - before.calls[i] - 1
	}
	return out
}

// perAcquisition divides per-node command counts by acquisitions: the total
// over the nodes and each node's share; zeros when none.
func perAcquisition(perNode []int64, acquisitions int) (total float64, each []float64) {
	each = make([]float64, len(perNode))
	if acquisitions <= 0 {
		return 0, each
	}
	for i, n := range perNode {
		each[i] = float64(n) / float64(acquisitions)
		total += each[i]
	}
	return total, each
}

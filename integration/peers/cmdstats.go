package peers

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// serverStats is a snapshot of the commands the nodes ran so far, from INFO
// commandstats: every command counts, also those a script runs (Redis
// counts redis.call in commandstats as well as the EVAL/EVALSHA itself).
type serverStats struct {
	calls     []int64          // per node: the calls of every command
	cpu       time.Duration    // the servers' user+system CPU (INFO cpu), summed over the nodes
	byCommand map[string]int64 // the calls of each command (lower case), summed over the nodes
}

// readServerStats snapshots the nodes of admin, in node order.
func readServerStats(ctx context.Context, admin []*redis.Client) (serverStats, error) {
	s := serverStats{calls: make([]int64, len(admin)), byCommand: make(map[string]int64)}
	for i, c := range admin {
		info, err := c.Info(ctx, "commandstats", "cpu").Result()
		if err != nil {
			return s, fmt.Errorf("INFO on node %d: %w", i, err)
		}
		stats := parseInfo(info)
		for k, v := range stats {
			if name, ok := strings.CutPrefix(k, "cmdstat_"); ok {
				s.calls[i] += callsOf(v)
				s.byCommand[name] += callsOf(v)
			}
		}
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

// byCommandSince returns the calls of each command the nodes ran between
// the snapshot before and s, summed over the nodes, without INFO (the
// bench's own reads: no library sends it).
func (s serverStats) byCommandSince(before serverStats) map[string]int64 {
	out := make(map[string]int64, len(s.byCommand))
	for name, n := range s.byCommand {
		if d := n - before.byCommand[name]; d > 0 && name != "info" {
			out[name] = d
		}
	}
	return out
}

// addCommands adds the calls of each command in more to into.
func addCommands(into, more map[string]int64) {
	for name, n := range more {
		into[name] += n
	}
}

// commandsPer divides the calls of each command by acquisitions; nil when
// there were none.
func commandsPer(calls map[string]int64, acquisitions int) map[string]float64 {
	if acquisitions <= 0 {
		return nil
	}
	out := make(map[string]float64, len(calls))
	for name, n := range calls {
		out[name] = float64(n) / float64(acquisitions)
	}
	return out
}

// minShownCommand is the least share of a command, per acquisition, that
// fmtByCommand names: below it, commands are summed as "others" (a PING
// or SUBSCRIBE now and then, which would only lengthen the line).
const minShownCommand = 0.05

// fmtByCommand renders commands per acquisition, the most frequent first
// (ties by name), in upper case: "EVALSHA 3.0, HMGET 2.1, others 0.1".
func fmtByCommand(per map[string]float64) string {
	if len(per) == 0 {
		return "–"
	}
	names := make([]string, 0, len(per))
	var others float64
	for name, v := range per {
		if v < minShownCommand {
			others += v
			continue
		}
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(per[b], per[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(names)+1)
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f", strings.ToUpper(name), per[name]))
	}
	switch {
	case others >= minShownCommand:
		parts = append(parts, fmt.Sprintf("others %.1f", others))
	case others > 0:
		parts = append(parts, fmt.Sprintf("others <%.2f", minShownCommand))
	}
	return strings.Join(parts, ", ")
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

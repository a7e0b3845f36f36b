package peers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestPoolAddsRoundsAsOneRun: two rounds of one row pool into the figures
// one run of their summed time would give, per-acquisition ratios weighted
// by each round's acquisitions, not averaged.
func TestPoolAddsRoundsAsOneRun(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	a := &Contended{Elapsed: time.Second, Cycles: 100, Handoff: NewDist(ms(3, 1)), PerGoroutine: []int{60, 40},
		MaxWait: 5 * time.Millisecond, Rounds: 1,
		trips: 300, tripCycles: 100, cmds: []int64{800, 400}, byCmd: map[string]int64{"evalsha": 300, "publish": 100}, cmdCycles: 100}
	a.perAcquisition()
	b := &Contended{Elapsed: time.Second, Cycles: 300, Handoff: NewDist(ms(2)), PerGoroutine: []int{100, 200},
		MaxWait: 2 * time.Millisecond, Stuck: 1, Rounds: 1, FirstErr: assert.AnError,
		trips: 1500, tripCycles: 300, cmds: []int64{900, 900}, byCmd: map[string]int64{"evalsha": 900}, cmdCycles: 300}
	b.perAcquisition()

	var r *Contended
	r = r.pool(a).pool(b)
	assert.Equal(t, 2*time.Second, r.Elapsed)
	assert.Equal(t, 400, r.Cycles)
	assert.InDelta(t, 200.0, r.CyclesPerSec(), 1e-9)
	assert.Equal(t, Dist(ms(1, 2, 3)), r.Handoff, "samples of both rounds, sorted")
	assert.Equal(t, []int{160, 240}, r.PerGoroutine)
	assert.Equal(t, 5*time.Millisecond, r.MaxWait)
	assert.Equal(t, 1, r.Stuck)
	assert.Equal(t, assert.AnError, r.FirstErr)
	assert.Equal(t, 2, r.Rounds)
	assert.InDelta(t, 4.5, r.RoundTrips, 1e-9, "1800 round trips over 400 acquisitions, not the mean of 3 and 5")
	assert.InDelta(t, 7.5, r.ServerCmds, 1e-9)
	assert.InDeltaSlice(t, []float64{4.25, 3.25}, r.ServerCmdsPerNode, 1e-9)
	assert.InDelta(t, 3.0, r.ServerCmdsBy["evalsha"], 1e-9)
	assert.InDelta(t, 0.25, r.Publishes, 1e-9)
}

// TestPoolSkipsRoundsWithoutServerStats: a round whose INFO failed adds its
// acquisitions to the rate but not to the per-acquisition command counts.
func TestPoolSkipsRoundsWithoutServerStats(t *testing.T) {
	a := &Contended{Elapsed: time.Second, Cycles: 100, Rounds: 1, cmds: []int64{500}, byCmd: map[string]int64{"evalsha": 200}, cmdCycles: 100}
	a.perAcquisition()
	b := &Contended{Elapsed: time.Second, Cycles: 100, Rounds: 1}
	b.perAcquisition()
	r := a.pool(b)
	assert.Equal(t, 200, r.Cycles)
	assert.InDelta(t, 5.0, r.ServerCmds, 1e-9)
	assert.Zero(t, r.RoundTrips, "never counted")
}

// TestReportNamesRowsShortOfRounds: a row that pooled fewer rounds than
// configured (one failed) says so, and a complete one does not.
func TestReportNamesRowsShortOfRounds(t *testing.T) {
	cfg := DefaultConfig()
	rep := &Report{Config: cfg, Contended: []*Contended{
		{Lib: NameRelock, Nodes: 1, Mode: ModeShared, Rounds: cfg.ContendedRounds},
		{Lib: NameRelock, Nodes: 3, Mode: ModeShared, Rounds: cfg.ContendedRounds - 1},
	}}
	var b strings.Builder
	rep.writeContended(&b)
	out := b.String()
	assert.Contains(t, out, fmt.Sprintf("| %s (%d of %d rounds) | 3 |", NameRelock, cfg.ContendedRounds-1, cfg.ContendedRounds))
	assert.Equal(t, 1, strings.Count(out, " rounds) |"), "only the short row is marked")
}

package peers

import (
	"fmt"
	"io"
	"time"
)

// Thresholds for the spec's qualitative watchdog targets ("a few pipelined
// round trips per node per tick", "a bounded number of goroutines"), as
// this benchmark reads them.
const (
	fewRoundTrips      = 10
	boundedGoroutines  = 100
	spec10HandoffToRTT = 3.0
	spec10RedsyncRatio = 5.0
	spec10QuorumRatio  = 1.5
)

// Check is one row of the summary: a measured ratio or fact next to its
// target.
type Check struct {
	What, Measured, Target string
	OK                     *bool // nil: information, no target
}

func (r *Report) contended(lib string, nodes int, mode string) *Contended {
	for _, x := range r.Contended {
		if x.Lib == lib && x.Nodes == nodes && x.Mode == mode {
			return x
		}
	}
	return nil
}

func findLoad(runs []*Load, lib string, nodes int) *Load {
	for _, x := range runs {
		if x.Lib == lib && x.Nodes == nodes {
			return x
		}
	}
	return nil
}

func ratio(a, b time.Duration) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func verdict(ok bool) *bool { return &ok }

// Checks returns the summary rows: the ratios of the performance targets (README, Performance) with their
// targets, and the functional facts every run must show.
func (r *Report) Checks() []Check {
	var out []Check
	add := func(what, measured, target string, ok *bool) {
		out = append(out, Check{what, measured, target, ok})
	}

	// Contended hand-off.
	var ping time.Duration
	if r.Ceiling != nil && r.Ceiling.PingErr == nil {
		ping = r.Ceiling.Ping.P50()
	}
	stuck, overlaps, relockRuns := 0, 0, 0
	for _, x := range r.Contended {
		overlaps += x.Overlaps
		if x.Lib == NameRelock {
			stuck += x.Stuck
			relockRuns++
		}
	}
	for _, x := range r.Contended {
		if x.Lib != NameRelock {
			continue
		}
		where := fmt.Sprintf("%d master(s), %s clients", x.Nodes, x.Mode)
		if q := ratio(x.Handoff.P50(), ping); q > 0 {
			m := fmt.Sprintf("%.2f× (%s ÷ %s)", q, fmtDur(x.Handoff.P50()), fmtDur(ping))
			if q2 := ratio(x.Handoff.P50(), x.Ping.P50()); q2 > 0 {
				m += fmt.Sprintf("; %.2f× the PING just before the run (%s)", q2, fmtDur(x.Ping.P50()))
			}
			add("relock hand-off p50 ÷ the ceiling's PING p50, "+where, m,
				fmt.Sprintf("≤ %.0f×", spec10HandoffToRTT), verdict(q <= spec10HandoffToRTT))
		}
		if q := ratio(x.Handoff.P50(), x.Unlock.P50()); q > 0 {
			add("relock hand-off p50 ÷ its Unlock p50 in the same run (one round trip under that load), "+where,
				fmt.Sprintf("%.2f× (%s ÷ %s)", q, fmtDur(x.Handoff.P50()), fmtDur(x.Unlock.P50())), "information", nil)
		}
		for _, p := range r.Contended {
			if p.Lib == NameRelock || p.Nodes != x.Nodes || p.Mode != x.Mode {
				continue
			}
			q := ratio(p.Handoff.P50(), x.Handoff.P50())
			if q == 0 {
				add(p.Lib+" hand-off p50 ÷ relock's, "+where, "no hand-off measured", "> 1×", verdict(false))
				continue
			}
			target, ok := "> 1× (relock below)", q > 1
			if p.Lib == NameRedsyncDefaults {
				target, ok = fmt.Sprintf("≥ %.0f×", spec10RedsyncRatio), q >= spec10RedsyncRatio
			}
			add(p.Lib+" hand-off p50 ÷ relock's, "+where,
				fmt.Sprintf("%.2f× (%s ÷ %s)", q, fmtDur(p.Handoff.P50()), fmtDur(x.Handoff.P50())), target, verdict(ok))
		}
	}
	for _, x := range r.Contended {
		if x.Lib != NameRelock {
			continue
		}
		for _, p := range r.Contended {
			if p.Lib == NameRelock || p.Nodes != x.Nodes || p.Mode != x.Mode {
				continue
			}
			if q := ratio(p.Wait.Q(0.99), x.Wait.Q(0.99)); q > 0 {
				add(fmt.Sprintf("%s Lock wait p99 ÷ relock's, %d master(s), %s clients", p.Lib, x.Nodes, x.Mode),
					fmt.Sprintf("%.2f× (%s ÷ %s)", q, fmtDur(p.Wait.P99()), fmtDur(x.Wait.P99())), "information", nil)
			}
		}
	}
	if relockRuns > 0 {
		add("relock stuck waiters (> 1 s) in every contended run", fmt.Sprint(stuck), "0", verdict(stuck == 0))
	}
	if len(r.Contended) > 0 {
		add("two holders at once (every library, every contended run)", fmt.Sprint(overlaps), "0", verdict(overlaps == 0))
	}

	// Uncontended throughput.
	for _, n := range []int{1, 3} {
		rl := findLoad(r.Uncontended, NameRelock, n)
		if rl == nil {
			continue
		}
		var best *Load
		for _, x := range r.Uncontended {
			if x.Lib != NameRelock && x.Nodes == n && (best == nil || x.CyclesPerSec() > best.CyclesPerSec()) {
				best = x
			}
		}
		if best != nil && best.CyclesPerSec() > 0 {
			q := rl.CyclesPerSec() / best.CyclesPerSec()
			add(fmt.Sprintf("relock uncontended cycles/s ÷ best peer's (%s), %d master(s)", best.Lib, n),
				fmt.Sprintf("%.2f× (%s ÷ %s)", q, fmtRate(rl.CyclesPerSec()), fmtRate(best.CyclesPerSec())),
				"≥ 1.0×", verdict(q >= 1))
		}
		if n == 1 && r.Ceiling != nil {
			for _, x := range r.Uncontended {
				if x.Nodes != 1 || (x.Lib != NameRelock && x.Lib != NameRueidislock) {
					continue
				}
				scripts := 2 * x.CyclesPerSec() // an acquire and a release per cycle
				for _, b := range r.Ceiling.Bench {
					if b.Pipeline == 1 && b.PerSec > 0 {
						add(fmt.Sprintf("%s scripts/s (2 per cycle) ÷ redis-benchmark EVALSHA/s -P 1, 1 master", x.Lib),
							fmt.Sprintf("%.2f× (%s ÷ %s)", scripts/b.PerSec, fmtRate(scripts), fmtRate(b.PerSec)), "information", nil)
					}
				}
				if g := r.Ceiling.GoRedis; g != nil && g.PerSec() > 0 {
					add(fmt.Sprintf("%s scripts/s ÷ go-redis EVALSHA/s (%d goroutines), 1 master", x.Lib, g.Goroutines),
						fmt.Sprintf("%.2f× (%s ÷ %s)", scripts/g.PerSec(), fmtRate(scripts), fmtRate(g.PerSec())), "information", nil)
				}
			}
		}
	}

	// Quorum fan-out.
	var ping1, ping3 time.Duration
	if refs := r.SequentialRefs; len(refs) > 1 {
		ping1, ping3 = refs[0].P50(), refs[1].P50()
		add("floor of this machine: PING to 3 masters in parallel ÷ PING to one, p50, in the sequential rounds",
			fmt.Sprintf("%.2f× (%s ÷ %s)", ratio(ping3, ping1), fmtDur(ping3), fmtDur(ping1)), "information", nil)
	}
	for _, lib := range []string{NameRelock, NameRedsyncDefaults} {
		one, three := findLoad(r.Sequential, lib, 1), findLoad(r.Sequential, lib, 3)
		if one == nil || three == nil {
			continue
		}
		q := ratio(three.LockLat.P50(), one.LockLat.P50())
		m := fmt.Sprintf("%.2f× (%s ÷ %s)", q, fmtDur(three.LockLat.P50()), fmtDur(one.LockLat.P50()))
		if lib == NameRelock {
			add("relock sequential Lock p50, 3 masters ÷ 1 master", m, fmt.Sprintf("≤ %.1f×", spec10QuorumRatio), verdict(q > 0 && q <= spec10QuorumRatio))
		} else {
			add(lib+" sequential Lock p50, 3 masters ÷ 1 master", m, "information", nil)
		}
		if q3 := ratio(three.LockLat.P50(), ping3); q3 > 0 {
			add(lib+" sequential Lock p50 on 3 masters ÷ PING to 3 masters in parallel", fmt.Sprintf("%.2f× (%s ÷ %s)", q3, fmtDur(three.LockLat.P50()), fmtDur(ping3)), "information", nil)
		}
		if q1 := ratio(one.LockLat.P50(), ping1); q1 > 0 {
			add(lib+" sequential Lock p50 on 1 master ÷ PING", fmt.Sprintf("%.2f× (%s ÷ %s)", q1, fmtDur(one.LockLat.P50()), fmtDur(ping1)), "information", nil)
		}
	}

	// Watchdog.
	for _, x := range r.Watchdog {
		worst := maxOf(x.RoundTrips)
		add(fmt.Sprintf("relock renewal round trips per tick per node, %d locks, %d master(s)", x.Locks, x.Nodes),
			fmt.Sprintf("%.1f (max over nodes)", worst), fmt.Sprintf("a few (≤ %d)", fewRoundTrips), verdict(worst <= fewRoundTrips))
		extra := x.GoroutinesHolding - x.GoroutinesIdle
		add(fmt.Sprintf("relock goroutines added while holding %d locks, %d master(s)", x.Locks, x.Nodes),
			fmt.Sprint(extra), fmt.Sprintf("bounded (≤ %d)", boundedGoroutines), verdict(extra <= boundedGoroutines))
		add(fmt.Sprintf("relock locks lost while renewed, %d locks, %d master(s)", x.Locks, x.Nodes),
			fmt.Sprint(x.Lost), "0", verdict(x.Lost == 0))
	}
	return out
}

func (r *Report) writeSummary(w io.Writer) {
	checks := r.Checks()
	if len(checks) == 0 {
		return
	}
	fmt.Fprintf(w, "## Summary: performance targets\n\n")
	t := table{head: []string{"check", "measured", "target", ""}}
	for _, c := range checks {
		mark := ""
		if c.OK != nil {
			mark = "✗"
			if *c.OK {
				mark = "✓"
			}
		}
		t.add(c.What, c.Measured, c.Target, mark)
	}
	t.write(w)
}

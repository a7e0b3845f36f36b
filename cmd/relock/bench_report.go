package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
	"time"
)

// writeBenchTable writes bench's table: one row per round.
func writeBenchTable(w io.Writer, rows []benchRow) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "CLIENTS\tSECONDS\tCYCLES\tERRORS\tCYCLES/S\tLOCK P50\tLOCK P99\tLOCK MAX\t")
	for _, r := range rows {
		rate := 0.0
		if s := r.elapsed.Seconds(); s > 0 {
			rate = float64(r.cycles) / s
		}
		fmt.Fprintf(tw, "%d\t%.1f\t%d\t%d\t%.0f\t%s\t%s\t%s\t\n", r.clients, r.elapsed.Seconds(), r.cycles, r.errors, rate,
			formatLatency(percentile(r.lockLat, 0.50)), formatLatency(percentile(r.lockLat, 0.99)), formatLatency(percentile(r.lockLat, 1)))
	}
	return tw.Flush()
}

// percentile returns the p-th quantile (0 < p ≤ 1) of lats by the nearest
// rank: the smallest value at least a share p of them do not exceed; -1
// when lats is empty.
func percentile(lats []time.Duration, p float64) time.Duration {
	if len(lats) == 0 {
		return -1
	}
	sorted := slices.Sorted(slices.Values(lats))
	rank := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// formatLatency writes a latency to three significant digits or so: "-"
// when there is none.
func formatLatency(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

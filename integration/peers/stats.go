package peers

import (
	"fmt"
	"slices"
	"time"
)

// Dist is a sorted set of latency samples.
type Dist []time.Duration

// NewDist sorts samples (in place) into a Dist.
func NewDist(samples []time.Duration) Dist {
	slices.Sort(samples)
	return Dist(samples)
}

// N returns the number of samples.
func (d Dist) N() int { return len(d) }

// Q returns the q-quantile (0 < q ≤ 1) by nearest rank, 0 when empty.
func (d Dist) Q(q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(q*float64(len(d))+0.999999) - 1
	return d[min(max(i, 0), len(d)-1)]
}

// P50 returns the median.
func (d Dist) P50() time.Duration { return d.Q(0.50) }

// P99 returns the 99th percentile.
func (d Dist) P99() time.Duration { return d.Q(0.99) }

// Max returns the largest sample, 0 when empty.
func (d Dist) Max() time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[len(d)-1]
}

// fmtDur prints a latency with a unit that suits it; "–" for no value.
func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

// fmtRate prints a rate per second.
func fmtRate(r float64) string {
	switch {
	case r <= 0:
		return "–"
	case r >= 1000:
		return fmt.Sprintf("%.0f", r)
	default:
		return fmt.Sprintf("%.1f", r)
	}
}

// fmtBytes prints a byte count.
func fmtBytes(b float64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	default:
		return fmt.Sprintf("%.0f B", b)
	}
}

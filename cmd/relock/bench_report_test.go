package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPercentileByNearestRank(t *testing.T) {
	var lats []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		lats = append(lats, time.Duration(i)*time.Millisecond)
	}
	for p, want := range map[float64]time.Duration{0.5: 50 * time.Millisecond, 0.99: 99 * time.Millisecond, 1: 100 * time.Millisecond, 0.001: time.Millisecond} {
		if got := percentile(lats, p); got != want {
			t.Errorf("percentile(%v) = %v; want %v", p, got, want)
		}
	}
	if lats[0] != 100*time.Millisecond {
		t.Error("percentile sorted its input")
	}
	if percentile(nil, 0.5) != -1 || formatLatency(-1) != "-" {
		t.Error("empty")
	}
}

func TestParseCounts(t *testing.T) {
	if got, err := parseCounts("1, 16,64"); err != nil || !slices.Equal(got, []int{1, 16, 64}) {
		t.Errorf("parseCounts: %v %v", got, err)
	}
	for _, bad := range []string{"", "0", "1,,2", "x", "1001", "-1"} {
		if _, err := parseCounts(bad); err == nil {
			t.Errorf("parseCounts(%q) accepted", bad)
		}
	}
}

func TestBenchTable(t *testing.T) {
	rows := []benchRow{
		{clients: 1, elapsed: 2 * time.Second, cycles: 1000, lockLat: []time.Duration{time.Millisecond, 2 * time.Millisecond, 1500 * time.Microsecond}},
		{clients: 16, elapsed: time.Second, cycles: 0, errors: 3},
	}
	var b strings.Builder
	if err := writeBenchTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	want := `  CLIENTS  SECONDS  CYCLES  ERRORS  CYCLES/S  LOCK P50  LOCK P99  LOCK MAX
        1      2.0    1000       0       500     1.5ms       2ms       2ms
       16      1.0       0       3         0         -         -         -
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

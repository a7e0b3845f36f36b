package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestIntervalsAreRatesAndMeansBetweenSamples(t *testing.T) {
	ivs := intervals([]sample{
		{t: 0, step: "start"},
		{t: 1, step: "start"},
		{t: 2, step: "contention", acquired: 10, waitCount: 4, waitSum: 0.2},
		{t: 2.5, step: "contention", acquired: 30, waitCount: 4, waitSum: 0.2, nodeErrors: 3},
	})
	if len(ivs) != 2 {
		t.Fatalf("%d intervals; want the 2 after the start", len(ivs))
	}
	if ivs[0].rate != 10 || ivs[0].meanWait != 0.05 {
		t.Fatalf("first interval %+v; want 10/s and a 50 ms mean wait", ivs[0])
	}
	if ivs[1].rate != 40 || !math.IsNaN(ivs[1].meanWait) || ivs[1].nodeErrors != 3 {
		t.Fatalf("second interval %+v; want 40/s, no wait ended, 3 node errors", ivs[1])
	}
}

func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		peak  float64
		step  float64
		ticks int
	}{{320, 100, 4}, {0.2, 0.05, 4}, {7, 2, 4}, {0, 1, 1}} {
		if step, ticks := niceTicks(tc.peak); step != tc.step || ticks != tc.ticks {
			t.Errorf("niceTicks(%v) = %v, %d; want %v, %d", tc.peak, step, ticks, tc.step, tc.ticks)
		}
	}
}

func TestRunWritesAPlot(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "s.csv"), filepath.Join(dir, "p.png")
	csv := "seconds,step,attempts,acquired,wait_count,wait_sum_seconds,waiters,node_errors\n" +
		"0,start,0,0,0,0,0,0\n0.1,contention,5,4,4,0.01,1,0\n0.2,contention,9,8,8,0.03,0,1\n"
	if err := os.WriteFile(in, []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(in, out); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(out); err != nil || fi.Size() < 1000 {
		t.Fatalf("plot %v, %v", fi, err)
	}
}

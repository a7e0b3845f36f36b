package backoff

import (
	"testing"
	"time"
)

func TestNextDoublesUpToMax(t *testing.T) {
	b := Backoff{First: 10 * time.Millisecond, Max: 70 * time.Millisecond}
	want := []time.Duration{10, 20, 40, 70, 70}
	for i, w := range want {
		if got := b.Next(); got != w*time.Millisecond {
			t.Fatalf("delay %d = %v; want %v", i, got, w*time.Millisecond)
		}
	}
	if !b.Started() {
		t.Fatal("Started after Next = false")
	}
	b.Reset()
	if b.Started() {
		t.Fatal("Started after Reset = true")
	}
	if got := b.Next(); got != 10*time.Millisecond {
		t.Fatalf("after Reset: %v; want the first delay again", got)
	}
}

func TestNextWithoutMaxOrFirstStaysPositive(t *testing.T) {
	b := Backoff{First: 5 * time.Millisecond} // Max below First: First caps it
	for range 3 {
		if got := b.Next(); got != 5*time.Millisecond {
			t.Fatalf("delay %v; want 5ms", got)
		}
	}
	var zero Backoff
	if got := zero.Next(); got <= 0 {
		t.Fatalf("zero Backoff gave %v; never a zero delay, which would spin", got)
	}
}

func TestJitteredDelaysSpreadAroundTheDoubling(t *testing.T) {
	b := Backoff{First: 100 * time.Millisecond, Max: 400 * time.Millisecond, Jitter: true}
	for i, base := range []time.Duration{100, 200, 400, 400} {
		base *= time.Millisecond
		if got := b.Next(); got < base/2 || got >= base*3/2 {
			t.Fatalf("delay %d = %v; want within [%v, %v)", i, got, base/2, base*3/2)
		}
	}
}

func TestJitterRange(t *testing.T) {
	if Jitter(0) != 0 || Jitter(-time.Second) != 0 {
		t.Fatal("Jitter of a non-positive delay must be 0")
	}
	d := 20 * time.Millisecond
	lo, hi := d, time.Duration(0)
	for range 2000 {
		j := Jitter(d)
		if j < d/2 || j >= d*3/2 {
			t.Fatalf("Jitter(%v) = %v outside [%v, %v)", d, j, d/2, d*3/2)
		}
		lo, hi = min(lo, j), max(hi, j)
	}
	// 2000 draws cover most of the range: it is random, not fixed.
	if lo > 12*time.Millisecond || hi < 28*time.Millisecond {
		t.Fatalf("Jitter(%v) spread only over [%v, %v]", d, lo, hi)
	}
}

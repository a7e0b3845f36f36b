package rtt

import (
	"testing"
	"time"
)

const ms = time.Millisecond

func newTest() *Estimator {
	return New(Config{Floor: 100 * ms, Ceiling: 3 * time.Second, Initial: time.Second})
}

func TestInitialTimeoutBeforeAnySample(t *testing.T) {
	e := newTest()
	if got, _ := e.Timeout(); got != time.Second {
		t.Fatalf("Timeout() = %v before any sample; want Initial 1s", got)
	}
	if got := e.Typical(); got != 100*ms {
		t.Fatalf("Typical() = %v before any sample; want Floor 100ms", got)
	}
}

func TestConfigIsNormalized(t *testing.T) {
	e := New(Config{Floor: 0, Ceiling: 0, Initial: time.Hour})
	if got, _ := e.Timeout(); got != time.Millisecond {
		t.Fatalf("Timeout() = %v; want the 1ms floor (ceiling raised to it, initial clamped)", got)
	}
	e = New(Config{Floor: 100 * ms, Ceiling: time.Second, Initial: 0})
	if got, _ := e.Timeout(); got != 100*ms {
		t.Fatalf("Timeout() = %v; want an unset Initial raised to the floor", got)
	}
}

// FirstTimeout says, without an Estimator, what one made with the same
// Config waits before its first sample.
func TestFirstTimeoutIsANewEstimatorsTimeout(t *testing.T) {
	for _, cfg := range []Config{
		{Floor: 100 * ms, Ceiling: 3 * time.Second, Initial: time.Second},
		{Floor: 0, Ceiling: 0, Initial: time.Hour},
		{Floor: 100 * ms, Ceiling: time.Second, Initial: 0},
		{Floor: 100 * ms, Ceiling: 500 * ms, Initial: time.Second},
	} {
		want, _ := New(cfg).Timeout()
		if got := cfg.FirstTimeout(); got != want {
			t.Fatalf("%+v: FirstTimeout() = %v; a new Estimator waits %v", cfg, got, want)
		}
	}
}

// The first sample sets SRTT = R and RTTVAR = R/2 (RFC 6298 2.2): a node
// 150 ms away gets 150 + 4·75 = 450 ms.
func TestFirstSample(t *testing.T) {
	e := newTest()
	e.Sample(150 * ms)
	if got, _ := e.Timeout(); got != 450*ms {
		t.Fatalf("Timeout() = %v after one 150ms sample; want 450ms", got)
	}
	if got := e.Typical(); got != 450*ms {
		t.Fatalf("Typical() = %v; want 450ms", got)
	}
}

// Later samples follow RFC 6298 2.3, RTTVAR updated with the old SRTT.
func TestSmoothing(t *testing.T) {
	e := newTest()
	e.Sample(200 * ms)       // SRTT 200, RTTVAR 100
	e.Expired(tokenOf(e))    // lets the next sample in at once
	e.Sample(120 * ms)       // RTTVAR (300+80)/4 = 95, SRTT (1400+120)/8 = 190
	want := 190*ms + 4*95*ms // 570 ms
	if got, _ := e.Timeout(); got != want {
		t.Fatalf("Timeout() = %v; want %v", got, want)
	}
}

func TestClampedToFloorAndCeiling(t *testing.T) {
	e := newTest()
	e.Sample(time.Millisecond) // 1 + 4·0.5 = 3 ms: below the floor
	if got, _ := e.Timeout(); got != 100*ms {
		t.Fatalf("Timeout() = %v for a 1ms node; want the 100ms floor", got)
	}
	e = newTest()
	e.Sample(2 * time.Second) // 2 + 4·1 = 6 s: above the ceiling
	if got, _ := e.Timeout(); got != 3*time.Second {
		t.Fatalf("Timeout() = %v for a 2s node; want the 3s ceiling", got)
	}
}

// Each expiry doubles the timeout up to the ceiling; a burst of calls that
// shared one timer doubles it once.
func TestBackoffOncePerTimer(t *testing.T) {
	e := newTest()
	e.Sample(10 * ms) // typical: floor 100ms
	_, tok := e.Timeout()
	e.Expired(tok)
	e.Expired(tok) // the same timer: no second doubling
	got, tok2 := e.Timeout()
	if got != 200*ms {
		t.Fatalf("Timeout() = %v after one expiry; want 200ms", got)
	}
	if e.Typical() != 100*ms {
		t.Fatalf("Typical() = %v; backoff must not change it", e.Typical())
	}
	for range 10 {
		e.Expired(tok2)
		_, tok2 = e.Timeout()
	}
	if got, _ := e.Timeout(); got != 3*time.Second {
		t.Fatalf("Timeout() = %v after many expiries; want the 3s ceiling", got)
	}
}

func TestBackedOffUntilTheNextAnswer(t *testing.T) {
	e := newTest()
	if e.BackedOff() {
		t.Fatal("BackedOff() before any call")
	}
	_, tok := e.Timeout()
	e.Expired(tok)
	if !e.BackedOff() {
		t.Fatal("BackedOff() false after a timeout")
	}
	for range 20 { // at the ceiling it stays backed off
		_, tok = e.Timeout()
		e.Expired(tok)
	}
	if !e.BackedOff() {
		t.Fatal("BackedOff() false at the ceiling")
	}
	e.Sample(10 * ms)
	if e.BackedOff() {
		t.Fatal("BackedOff() still true after an answer")
	}
	// An estimator whose first timeout is its ceiling (a short lease).
	e = New(Config{Floor: 100 * ms, Ceiling: 100 * ms, Initial: time.Second})
	_, tok = e.Timeout()
	e.Expired(tok)
	if got, _ := e.Timeout(); !e.BackedOff() || got != 100*ms {
		t.Fatalf("after a timeout at the ceiling: BackedOff() %v, Timeout() %v; want true, 100ms", e.BackedOff(), got)
	}
}

// A node that became slower is not timed out forever: the backoff reaches
// its round trip, the next answer is sampled, and the estimate follows.
func TestSlowerNodeIsLearnt(t *testing.T) {
	e := newTest()
	for range 20 {
		e.Sample(time.Millisecond)
		e.Expired(0) // a stale token: ignored
	}
	slow := 350 * ms
	rounds := 0
	for ; rounds < 10; rounds++ {
		timeout, tok := e.Timeout()
		if slow <= timeout {
			break
		}
		e.Expired(tok)
	}
	if rounds != 2 { // 100 → 200 → 400 ms
		t.Fatalf("took %d expiries to wait 350ms; want 2", rounds)
	}
	e.Sample(slow)
	if got, _ := e.Timeout(); got <= slow {
		t.Fatalf("Timeout() = %v after a 350ms answer; want above it", got)
	}
	for range 50 {
		e.Expired(tokenOf(e)) // opens the rate limit; then the sample clears it
		e.Sample(slow)
	}
	if got, _ := e.Timeout(); got < slow || got > 2*slow {
		t.Fatalf("Timeout() = %v after steady 350ms answers; want a little above 350ms", got)
	}
}

// An answer slower than the current timeout is always taken, whatever the
// rate limit: it is the news that the node got slower.
func TestLateAnswerBypassesRateLimit(t *testing.T) {
	e := newTest()
	e.Sample(10 * ms)
	e.Sample(10 * ms) // skipped: within the same round trip
	before, _ := e.Timeout()
	e.Sample(500 * ms)
	after, _ := e.Timeout()
	if after <= 500*ms || after <= before {
		t.Fatalf("Timeout() = %v after a 500ms answer (was %v); want above 500ms", after, before)
	}
}

// Ordinary samples are taken at most once per smoothed round trip.
func TestRateLimit(t *testing.T) {
	e := newTest()
	e.Sample(50 * ms) // SRTT 50: the next ordinary sample waits 50ms
	first, _ := e.Timeout()
	for range 100 {
		e.Sample(time.Millisecond)
	}
	if got, _ := e.Timeout(); got != first {
		t.Fatalf("Timeout() = %v; 100 fast samples within one round trip moved it from %v", got, first)
	}
}

// An answer clears the backoff.
func TestSampleClearsBackoff(t *testing.T) {
	e := newTest()
	e.Sample(10 * ms)
	for range 3 {
		e.Expired(tokenOf(e))
	}
	if got, _ := e.Timeout(); got != 800*ms {
		t.Fatalf("Timeout() = %v after 3 expiries; want 800ms", got)
	}
	_, stale := e.Timeout()
	e.Sample(10 * ms)
	if got, _ := e.Timeout(); got != 100*ms {
		t.Fatalf("Timeout() = %v after an answer; want the floor again", got)
	}
	e.Expired(stale) // a call timed out on the backed-off timer: no longer counts
	if got, _ := e.Timeout(); got != 100*ms {
		t.Fatalf("Timeout() = %v after a stale expiry; want 100ms", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	e := newTest()
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 2000 {
				_, tok := e.Timeout()
				if (i+g)%7 == 0 {
					e.Expired(tok)
				} else {
					e.Sample(time.Duration(1+i%5) * ms)
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
	if got, _ := e.Timeout(); got < 100*ms || got > 3*time.Second {
		t.Fatalf("Timeout() = %v outside [floor, ceiling]", got)
	}
}

func tokenOf(e *Estimator) Token { _, tok := e.Timeout(); return tok }

// Round trips that move the estimate but not the timeouts readers see (a
// node well within the floor) replace nothing: no allocation per answer.
// One that changes them is published.
func TestSampleAllocatesOnlyWhenTheTimeoutsChange(t *testing.T) {
	e := newTest()
	e.Sample(2 * ms)
	n := testing.AllocsPerRun(100, func() {
		e.next.Store(0) // as if a round trip had passed: the sample is taken
		e.Sample(2 * ms)
	})
	if n != 0 {
		t.Fatalf("%v allocations per sample within the floor; want 0", n)
	}
	if got, _ := e.Timeout(); got != 100*ms {
		t.Fatalf("Timeout() = %v; want the floor", got)
	}
	e.next.Store(0)
	e.Sample(time.Second) // far above the floor: the timeout moves
	if got, _ := e.Timeout(); got <= 100*ms {
		t.Fatalf("Timeout() = %v after a 1 s round trip; want it above the floor", got)
	}
}

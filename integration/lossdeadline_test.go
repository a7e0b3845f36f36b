package integration_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStarvedForCountsOverlappingStallsOnce: the probe's goroutines often
// see one stall together; starvedFor counts it once, and adds up stalls
// that are apart.
func TestStarvedForCountsOverlappingStallsOnce(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	p := &stallProbe{stalls: []stall{
		{due: ms(100), woke: ms(181)}, // 81 ms
		{due: ms(102), woke: ms(180)}, // the same stall, seen by another goroutine
		{due: ms(170), woke: ms(200)}, // overlaps the first: 19 ms more
		{due: ms(300), woke: ms(360)}, // apart: 60 ms
		{due: ms(900), woke: ms(990)}, // outside the window
	}}
	require.Equal(t, ms(81), p.worstStall(ms(90), ms(400)))
	require.Equal(t, ms(81+19+60), p.starvedFor(ms(90), ms(400)))
	require.Equal(t, ms(60), p.starvedFor(ms(250), ms(400)))
	require.Zero(t, p.starvedFor(ms(400), ms(800)))
}

// TestLossDeadlineForgivesStarvationOnly: a loss signalled after ValidUntil
// is a violation when it is later than the drift allowance and hardSlack
// beyond the time the probe saw timers starved from the timer's due time
// on; two stalls apart excuse their sum (the signal crosses goroutines),
// one stall seen twice excuses itself once.
func TestLossDeadlineForgivesStarvationOnly(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	const valid = 10 * time.Second
	lostAfter := func(after time.Duration) []*holdRecord {
		return []*holdRecord{{name: "n", handle: 1, call: "Lock", lease: 2 * time.Second,
			lost: true, lostAt: valid + after, validAtLoss: valid, validAtLossOK: true}}
	}
	judge := func(after time.Duration, stalls ...stall) (violations, late int) {
		v, l, worst := checkLossDeadlines(lostAfter(after), lossSlack, lossHardSlack, &stallProbe{stalls: stalls})
		require.Equal(t, after, worst)
		return len(v), len(l)
	}
	apart := []stall{{due: valid - ms(90), woke: valid - ms(9)}, {due: valid + ms(20), woke: valid + ms(80)}}
	// 2 s lease: drift allowance 22 ms, hard slack 25 ms.
	v, l := judge(ms(130), apart...) // 81 + 60 ms starved excuse 130 ms
	require.Zero(t, v)
	require.Zero(t, l)
	v, _ = judge(ms(130), apart[0], stall{due: valid - ms(88), woke: valid - ms(10)}) // 81 ms starved
	require.Equal(t, 1, v)
	v, _ = judge(ms(50)) // nothing starved
	require.Equal(t, 1, v)
	v, l = judge(ms(10)) // late, within the drift allowance
	require.Zero(t, v)
	require.Equal(t, 1, l)
}

// TestThreadWaitedForTakesTheLongestWaitOfOneThread: the window runs from
// the last sample at or before its start to the first at or after its end,
// and a thread seen in only one of the two counts for nothing.
func TestThreadWaitedForTakesTheLongestWaitOfOneThread(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	p := &stallProbe{threads: []threadWaits{
		{at: ms(0), waits: map[int]time.Duration{1: ms(0), 2: ms(0)}},
		{at: ms(10), waits: map[int]time.Duration{1: ms(5), 2: ms(10)}},
		{at: ms(20), waits: map[int]time.Duration{1: ms(6), 2: ms(30)}},
		{at: ms(30), waits: map[int]time.Duration{1: ms(10), 2: ms(50), 3: ms(90)}},
		{at: ms(40), waits: map[int]time.Duration{1: ms(70), 2: ms(50), 3: ms(95)}},
	}}
	require.Equal(t, ms(40), p.threadWaitedFor(ms(12), ms(25))) // thread 2, 10 to 50 ms
	require.Equal(t, ms(60), p.threadWaitedFor(ms(30), ms(35))) // thread 1, 10 to 70 ms; thread 3 5 ms
	require.Equal(t, ms(70), p.threadWaitedFor(ms(-5), ms(99))) // thread 1, the whole run
	require.Zero(t, (&stallProbe{}).threadWaitedFor(ms(0), ms(10)))
}

// TestLossDeadlineForgivesAThreadKeptOffACPU: a loss signal 160 ms late
// with an 81 ms stall is a violation (2 s lease: 22 + 25 + 81 = 128 ms
// forgiven), unless one thread of the process waited for a CPU long enough
// to make up the rest.
func TestLossDeadlineForgivesAThreadKeptOffACPU(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	const valid = 10 * time.Second
	hold := &holdRecord{name: "n", handle: 1, call: "Lock", lease: 2 * time.Second,
		lost: true, lostAt: valid + ms(160), validAtLoss: valid, validAtLossOK: true}
	stalled := []stall{{due: valid - ms(90), woke: valid - ms(9)}} // 81 ms
	waited := func(d time.Duration) []threadWaits {
		return []threadWaits{
			{at: valid - ms(200), waits: map[int]time.Duration{7: ms(100)}},
			{at: valid + ms(200), waits: map[int]time.Duration{7: ms(100) + d}},
		}
	}
	for _, c := range []struct {
		waited     time.Duration
		violations int
	}{{0, 1}, {ms(30), 1}, {ms(32), 0}, {ms(60), 0}} {
		v, _, _ := checkLossDeadlines([]*holdRecord{hold}, lossSlack, lossHardSlack, &stallProbe{stalls: stalled, threads: waited(c.waited)})
		require.Len(t, v, c.violations, "a thread waited %v", c.waited)
	}
}

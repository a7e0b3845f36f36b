package integration_test

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// The stall probe sees a stall only when its own goroutines are held up. On
// a loaded machine the OS also takes a CPU from one thread of the process
// while the others run on: a goroutine on that thread (a loss signal on its
// way, say) waits with it, and the probe, running on the other threads,
// sees nothing. Linux counts that time per thread, so the probe samples it.

// threadWaitEvery is how often the probe samples the threads' waits.
const threadWaitEvery = 10 * time.Millisecond

// threadWaits is one sample: when it was taken (the recorder's clock) and,
// for each OS thread of the process, how long it has been runnable without
// a CPU since it started.
type threadWaits struct {
	at    time.Duration
	waits map[int]time.Duration
}

// readThreadWaits reads each thread's time runnable without a CPU: the
// second field of /proc/self/task/TID/schedstat, in nanoseconds. It
// returns nil where there is no such file (not Linux, or a kernel without
// scheduler statistics): the loss check then forgives only what the probe
// saw.
func readThreadWaits() map[int]time.Duration {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	waits := make(map[int]time.Duration, len(tasks))
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/self/task/" + task.Name() + "/schedstat")
		if err != nil {
			continue // the thread has exited
		}
		fields := strings.Fields(string(stat))
		if len(fields) < 2 {
			continue
		}
		ns, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		waits[tid] = time.Duration(ns)
	}
	if len(waits) == 0 {
		return nil
	}
	return waits
}

// runThreadSampler samples the threads' waits every threadWaitEvery until
// the probe stops.
func (p *stallProbe) runThreadSampler() {
	t := time.NewTicker(threadWaitEvery)
	defer t.Stop()
	for {
		if waits := readThreadWaits(); waits != nil {
			at := p.rec.now()
			p.mu.Lock()
			p.threads = append(p.threads, threadWaits{at: at, waits: waits})
			p.mu.Unlock()
		}
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

// threadWaitedFor is the longest any one thread of the process waited for
// a CPU between from and to: from the last sample at or before from to the
// first at or after to (the closest ones inside the window when there are
// none outside it), so up to a sampling interval more on either side.
func (p *stallProbe) threadWaitedFor(from, to time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.threads) == 0 {
		return 0
	}
	first, last := p.threads[0], p.threads[len(p.threads)-1]
	for _, s := range p.threads {
		if s.at <= from {
			first = s
		}
		if s.at >= to {
			last = s
			break
		}
	}
	var longest time.Duration
	for tid, end := range last.waits {
		if start, ok := first.waits[tid]; ok {
			longest = max(longest, end-start)
		}
	}
	return longest
}

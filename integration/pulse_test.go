package integration_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/integration/fixture"
)

const (
	// pulseBeat is how often nodePulse PINGs each target.
	pulseBeat = 250 * time.Millisecond
	// pulseWait bounds one PING: a longer silence is a failed beat.
	pulseWait = time.Second
	// pulseQuick is an answer in good time: below the adaptive node
	// timeout's floor, so a lock client's call to the node could have
	// answered too.
	pulseQuick = 100 * time.Millisecond
)

// nodePulse PINGs every node, straight and through each link, with
// clients of its own (not the lock clients'), at a steady beat during a
// chaos phase. When every lock call to a node times out, it tells a node
// (or the machine's path to its container) that did not answer in time, or
// a link that did not carry the answer, from a lock client that failed to
// use a path that worked.
type nodePulse struct {
	start time.Time
	stop  chan struct{}
	wg    sync.WaitGroup

	targets []pulseTarget

	mu    sync.Mutex
	beats [][]beat // per target, in time order
}

// beat is one PING: when it was sent (since start), how long it took, and
// whether it failed.
type beat struct {
	at, took time.Duration
	failed   bool
}

// pulseTarget is one address the pulse PINGs: a node's own, or a link's.
type pulseTarget struct {
	name, addr string
	link       bool
}

// pulseTargets are every node, straight, and every link of sets
// (sets[client][node]), named "A→node0" and so on: a link that stays silent
// while its node answers points at the link, or at the proxy.
func pulseTargets(nodes []*fixture.Node, sets [][]*fixture.Link) []pulseTarget {
	var out []pulseTarget
	for i, n := range nodes {
		out = append(out, pulseTarget{name: fmt.Sprintf("node%d", i), addr: n.Addr()})
	}
	for c, links := range sets {
		for i, l := range links {
			out = append(out, pulseTarget{name: fmt.Sprintf("%c→node%d", 'A'+c, i), addr: l.Addr(), link: true})
		}
	}
	return out
}

// startNodePulse starts one pulse goroutine per target, each with a client
// of its own (one connection, no retries) so that it waits on no other
// caller's pool.
func startNodePulse(targets []pulseTarget, start time.Time) *nodePulse {
	p := &nodePulse{start: start, stop: make(chan struct{}), targets: targets, beats: make([][]beat, len(targets))}
	for i, tg := range targets {
		o := fixture.ClientOptions(tg.addr)
		o.PoolSize, o.MaxRetries = 1, -1
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = pulseWait, pulseWait, pulseWait
		rdb := redis.NewClient(o)
		p.wg.Go(func() {
			defer rdb.Close()
			p.run(i, rdb)
		})
	}
	return p
}

func (p *nodePulse) run(target int, rdb *redis.Client) {
	tick := time.NewTicker(pulseBeat)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), pulseWait)
		err := rdb.Ping(ctx).Err()
		cancel()
		b := beat{at: sent.Sub(p.start), took: time.Since(sent), failed: err != nil}
		p.mu.Lock()
		p.beats[target] = append(p.beats[target], b)
		p.mu.Unlock()
	}
}

// close stops the pulse and waits for its goroutines and clients to end.
func (p *nodePulse) close() {
	close(p.stop)
	p.wg.Wait()
}

// silence is a stretch of time in which a target gave no quick answer.
type silence struct{ from, to time.Duration }

// longestSilence is a target's longest stretch from a beat that got no
// quick answer to the next beat that did (or to the end of the last beat).
func longestSilence(beats []beat) silence {
	var worst, cur silence
	open := false
	for _, b := range beats {
		quick := !b.failed && b.took < pulseQuick
		switch {
		case !quick && !open:
			cur, open = silence{from: b.at, to: b.at + b.took}, true
		case !quick:
			cur.to = b.at + b.took
		case open:
			cur.to, open = b.at, false
		}
		if cur.to-cur.from > worst.to-worst.from {
			worst = cur
		}
	}
	return worst
}

// summary reports, per target (the links' when links, else the nodes'),
// the beats, the failures, the median and the slowest answer, and the
// longest silence.
func (p *nodePulse) summary(links bool) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var parts []string
	for i, beats := range p.beats {
		if p.targets[i].link != links {
			continue
		}
		var took []time.Duration
		failed := 0
		for _, b := range beats {
			if b.failed {
				failed++
			} else {
				took = append(took, b.took)
			}
		}
		median, slowest := time.Duration(0), time.Duration(0)
		if len(took) > 0 {
			slices.Sort(took)
			median, slowest = took[len(took)/2], took[len(took)-1]
		}
		s := longestSilence(beats)
		parts = append(parts, fmt.Sprintf("%s %d pings %d failed p50 %v max %v longest silence %v (%+.1fs to %+.1fs)",
			p.targets[i].name, len(beats), failed, median.Round(10*time.Microsecond), slowest.Round(time.Millisecond),
			(s.to-s.from).Round(time.Millisecond), s.from.Seconds(), s.to.Seconds()))
	}
	return strings.Join(parts, "; ")
}

func TestLongestSilence(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	quick := func(at int) beat { return beat{at: ms(at), took: ms(1)} }
	slow := func(at, took int) beat { return beat{at: ms(at), took: ms(took)} }
	lost := func(at int) beat { return beat{at: ms(at), took: ms(1000), failed: true} }
	for _, tc := range []struct {
		name  string
		beats []beat
		want  silence
	}{
		{"none", nil, silence{}},
		{"all quick", []beat{quick(0), quick(250), quick(500)}, silence{}},
		{"one slow answer", []beat{quick(0), slow(250, 150), quick(500)}, silence{ms(250), ms(500)}},
		{"failures until a quick answer", []beat{quick(0), lost(250), lost(1250), quick(2250)}, silence{ms(250), ms(2250)}},
		{"open at the end", []beat{quick(0), lost(250), lost(1250)}, silence{ms(250), ms(2250)}},
		{"the longer of two", []beat{lost(0), quick(1000), lost(1250), lost(2250), quick(3250)}, silence{ms(1250), ms(3250)}},
		{"a quick failure is not quick", []beat{quick(0), {at: ms(250), took: ms(2), failed: true}, quick(500)}, silence{ms(250), ms(500)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, longestSilence(tc.beats))
		})
	}
}

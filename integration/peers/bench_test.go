package peers_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/integration/peers"
)

var cluster *fixture.Cluster

func TestMain(m *testing.M) { os.Exit(fixture.Main(m, 3, &cluster)) }

// TestQuickRun runs every scenario with tiny settings and checks functional
// facts only: every run completed cycles without error, no two holders held
// the contended lock at once, the watchdog kept its locks. Timings are the
// command's business, not the test's.
func TestQuickRun(t *testing.T) {
	if err := cluster.Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	srv := peers.Servers{}
	for _, n := range cluster.Nodes {
		srv.Addrs = append(srv.Addrs, n.Addr())
		srv.Admin = append(srv.Admin, n.Direct())
	}
	cfg := peers.QuickConfig()
	rep, err := peers.Run(t.Context(), cfg, srv)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Failures {
		t.Errorf("run failed: %s", f)
	}

	if rep.Ceiling == nil || rep.Ceiling.PingErr != nil || rep.Ceiling.Ping.N() == 0 {
		t.Errorf("ceiling: no PING measured: %+v", rep.Ceiling)
	} else if rep.Ceiling.GoRedisErr != nil || rep.Ceiling.GoRedis.Ops == 0 {
		t.Errorf("ceiling: go-redis EVALSHA: %v", rep.Ceiling.GoRedisErr)
	}

	// Two client modes × (5 libraries on 1 master + 3 on 3 masters).
	if got, want := len(rep.Contended), 2*(5+3); got != want {
		t.Errorf("contended runs: %d, want %d", got, want)
	}
	for _, r := range rep.Contended {
		what := r.Lib + " / " + r.Mode
		if r.Cycles == 0 {
			t.Errorf("contended %s, %d master(s): no cycle", what, r.Nodes)
		}
		if r.Overlaps != 0 {
			t.Errorf("contended %s, %d master(s): %d acquisitions while another goroutine held the lock", what, r.Nodes, r.Overlaps)
		}
		if r.Errors != 0 {
			t.Errorf("contended %s, %d master(s): %d errors, first: %v", what, r.Nodes, r.Errors, r.FirstErr)
		}
	}

	// Four libraries on 1 master + 2 on 3 masters, for each of the two.
	for name, runs := range map[string][]*peers.Load{"uncontended": rep.Uncontended, "sequential": rep.Sequential} {
		if got, want := len(runs), 4+2; got != want {
			t.Errorf("%s runs: %d, want %d", name, got, want)
		}
		for _, r := range runs {
			if r.Cycles == 0 || r.Errors != 0 {
				t.Errorf("%s %s, %d master(s): %d cycles, %d errors, first: %v", name, r.Lib, r.Nodes, r.Cycles, r.Errors, r.FirstErr)
			}
		}
	}

	if got, want := len(rep.Watchdog), 2*len(cfg.WatchdogLocks); got != want {
		t.Errorf("watchdog runs: %d, want %d", got, want)
	}
	for _, r := range rep.Watchdog {
		if r.Errors != 0 || r.Lost != 0 {
			t.Errorf("watchdog %d locks, %d master(s): %d errors (first: %v), %d lost", r.Locks, r.Nodes, r.Errors, r.FirstErr, r.Lost)
		}
		for i, s := range r.Scripts {
			if s < float64(r.Locks)/2 {
				t.Errorf("watchdog %d locks, %d master(s): node %d ran %.0f scripts per tick, want about one renewal per lock", r.Locks, r.Nodes, i, s)
			}
		}
	}

	var out bytes.Buffer
	rep.Write(&out)
	for _, want := range []string{"## Ceiling", "## Contended hand-off", "## Uncontended", "## Sequential", "## Watchdog", "## Summary"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	t.Logf("\n%s", out.String())
}

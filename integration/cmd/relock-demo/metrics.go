package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	relockprom "github.com/relock-go/relock/prometheus"
)

// metrics is the demo's Prometheus side: a registry with relock's
// Collector, served on a loopback port while the demo runs, and sampled
// every sampleEvery for the plot (see cmd/relock-plot).
type metrics struct {
	reg       *prometheus.Registry
	collector *relockprom.Collector
	url       string
	server    *http.Server
	served    chan error

	stop    chan struct{}
	sampled sync.WaitGroup
	start   time.Time
	mu      sync.Mutex
	samples []sample
	step    string // the demo step running now
}

const sampleEvery = 50 * time.Millisecond

// sample is one reading of the registry: cumulative counts since the start.
type sample struct {
	at         time.Duration
	step       string
	attempts   float64 // relock_acquire_total, every outcome
	acquired   float64 // relock_acquire_total{outcome="acquired"}
	waitCount  float64 // relock_wait_duration_seconds_count, every series
	waitSum    float64 // relock_wait_duration_seconds_sum, every series
	waiters    float64 // relock_waiters
	nodeErrors float64 // relock_node_errors_total, every series
}

// startMetrics serves /metrics on addr (a loopback port) and starts
// sampling.
func startMetrics(addr string) (*metrics, error) {
	m := &metrics{reg: prometheus.NewRegistry(), collector: relockprom.New(), stop: make(chan struct{}),
		served: make(chan error, 1), start: time.Now()}
	if err := m.reg.Register(m.collector); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	m.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	m.url = "http://" + ln.Addr().String() + "/metrics"
	go func() { m.served <- m.server.Serve(ln) }()
	m.sampled.Go(m.sampleLoop)
	return m, nil
}

// setStep names the step the next samples belong to.
func (m *metrics) setStep(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.step = name
}

func (m *metrics) sampleLoop() {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		m.takeSample()
		select {
		case <-m.stop:
			m.takeSample()
			return
		case <-t.C:
		}
	}
}

func (m *metrics) takeSample() {
	families, err := m.reg.Gather()
	if err != nil {
		return
	}
	s := sample{at: time.Since(m.start)}
	for _, mf := range families {
		for _, x := range mf.GetMetric() {
			switch mf.GetName() {
			case "relock_acquire_total":
				s.attempts += x.GetCounter().GetValue()
				if label(x, "outcome") == "acquired" {
					s.acquired += x.GetCounter().GetValue()
				}
			case "relock_wait_duration_seconds":
				s.waitCount += float64(x.GetHistogram().GetSampleCount())
				s.waitSum += x.GetHistogram().GetSampleSum()
			case "relock_waiters":
				s.waiters += x.GetGauge().GetValue()
			case "relock_node_errors_total":
				s.nodeErrors += x.GetCounter().GetValue()
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s.step = m.step
	m.samples = append(m.samples, s)
}

// stopSampling takes a last sample and stops.
func (m *metrics) stopSampling() {
	close(m.stop)
	m.sampled.Wait()
}

// close stops serving, after linger (the URL stays up that long for a
// look).
func (m *metrics) close(linger time.Duration) error {
	if linger > 0 {
		say("serving %s for %v more (-linger)", m.url, linger)
		time.Sleep(linger)
	}
	_ = m.server.Close()
	if err := <-m.served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// writeSamples writes the samples as CSV for cmd/relock-plot.
func (m *metrics) writeSamples(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"seconds", "step", "attempts", "acquired", "wait_count", "wait_sum_seconds", "waiters", "node_errors"})
	m.mu.Lock()
	for _, s := range m.samples {
		_ = w.Write([]string{ff(s.at.Seconds()), s.step, ff(s.attempts), ff(s.acquired), ff(s.waitCount), ff(s.waitSum), ff(s.waiters), ff(s.nodeErrors)})
	}
	m.mu.Unlock()
	w.Flush()
	return errors.Join(w.Error(), f.Close())
}

func ff(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// summary prints what the registry says about the whole run.
func (m *metrics) summary() error {
	families, err := m.reg.Gather()
	if err != nil {
		return err
	}
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range families {
		byName[mf.GetName()] = mf
	}
	counts := func(name, labelName string) (total float64, parts string) {
		var out []string
		for _, x := range byName[name].GetMetric() {
			v := x.GetCounter().GetValue()
			total += v
			if v > 0 {
				out = append(out, fmt.Sprintf("%s %v", labels(x, labelName), v))
			}
		}
		sort.Strings(out)
		return total, strings.Join(out, ", ")
	}
	step("Metrics, read back from the registry behind %s", m.url)
	attempts, byOutcome := counts("relock_acquire_total", "outcome")
	say("acquire attempts: %v (%s)", attempts, byOutcome)
	_, calls := counts("relock_lock_calls_total", "call,outcome")
	say("Lock/TryLock calls: %s", calls)
	count, sum, p50, p99 := histogramSummary(byName["relock_wait_duration_seconds"])
	say("wait per call: %v calls, mean %v, p50 ≤ %v, p99 ≤ %v (bucket bounds)", count,
		seconds(sum/math.Max(count, 1)), seconds(p50), seconds(p99))
	_, sleeps := counts("relock_sleeps_total", "ended")
	say("sleeps of waiting Locks, by how they ended: %s", sleeps)
	_, releases := counts("relock_releases_total", "outcome")
	say("releases: %s", releases)
	nodeErrors, perNode := counts("relock_node_errors_total", "node,op,kind")
	say("node errors: %v (%s)", nodeErrors, perNode)
	lost, _ := counts("relock_locks_lost_total", "reason")
	_, pubsub := counts("relock_pubsub_disconnects_total", "node")
	say("locks lost: %v; Pub/Sub disconnects: %s", lost, orNone(pubsub))
	return nil
}

// histogramSummary adds up every series of a histogram family and returns
// its count, sum, and the bucket bounds under which 50% and 99% fall.
func histogramSummary(mf *dto.MetricFamily) (count, sum, p50, p99 float64) {
	cumulative := map[float64]float64{}
	for _, x := range mf.GetMetric() {
		h := x.GetHistogram()
		count += float64(h.GetSampleCount())
		sum += h.GetSampleSum()
		for _, b := range h.GetBucket() {
			cumulative[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	bounds := make([]float64, 0, len(cumulative))
	for b := range cumulative {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	p50, p99 = math.Inf(1), math.Inf(1)
	for i := len(bounds) - 1; i >= 0; i-- {
		if c := cumulative[bounds[i]]; c >= 0.99*count {
			p99 = bounds[i]
		}
		if c := cumulative[bounds[i]]; c >= 0.5*count {
			p50 = bounds[i]
		}
	}
	return count, sum, p50, p99
}

func seconds(s float64) time.Duration {
	if math.IsInf(s, 1) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second)).Round(10 * time.Microsecond)
}

// labels formats the values of the comma-separated label names of x.
func labels(x *dto.Metric, names string) string {
	var out []string
	for n := range strings.SplitSeq(names, ",") {
		out = append(out, label(x, n))
	}
	return strings.Join(out, " ")
}

func label(x *dto.Metric, name string) string {
	for _, l := range x.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

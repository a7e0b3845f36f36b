package relockprom

import (
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// vec is a client_golang metric vector whose children are M.
type vec[M any] interface {
	prometheus.Collector
	WithLabelValues(lvs ...string) M
}

// family is one metric vector whose labels come from a key K, plus the
// "lock" label when the Collector has a lock labeller. Without one, the
// children of every known key are made up front: the hot path is a map
// read, with no allocation, and every series is exported from the start
// (at zero) rather than appearing on its first event.
type family[K comparable, M any] struct {
	vec    vec[M]
	values func(K) []string
	byLock func(name string) string // nil: no lock label
	known  map[K]M                  // read-only after newFamily
}

// newFamily makes the vector with newVec over labels (and "lock" when
// byLock is set) and adds it to c's collectors.
func newFamily[K comparable, M any](c *Collector, byLock func(string) string, newVec func(labels []string) vec[M],
	labels []string, values func(K) []string, known ...K) *family[K, M] {
	if byLock != nil {
		labels = append(labels[:len(labels):len(labels)], "lock")
	}
	f := &family[K, M]{vec: newVec(labels), values: values, byLock: byLock}
	c.all = append(c.all, f.vec)
	if byLock == nil {
		f.known = make(map[K]M, len(known))
		for _, k := range known {
			f.known[k] = f.vec.WithLabelValues(values(k)...)
		}
	}
	return f
}

// with returns the child for key k and the lock named name.
func (f *family[K, M]) with(k K, name string) M {
	if f.byLock == nil {
		if m, ok := f.known[k]; ok {
			return m
		}
		return f.vec.WithLabelValues(f.values(k)...) // a value this version does not know yet
	}
	return f.vec.WithLabelValues(append(f.values(k), lockLabelValue(f.byLock(name)))...)
}

// lockLabelValue is v made a valid label value: a lock name may hold any
// bytes, and so may a label made from it, but client_golang panics (on the
// Client's own goroutine, in a hook) at a label value that is not UTF-8.
// Each run of bytes that is not becomes one U+FFFD.
func lockLabelValue(v string) string {
	if utf8.ValidString(v) {
		return v
	}
	return strings.ToValidUTF8(v, "\uFFFD")
}

func counters(name, help string) func([]string) vec[prometheus.Counter] {
	return func(labels []string) vec[prometheus.Counter] {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
}

func gauges(name, help string) func([]string) vec[prometheus.Gauge] {
	return func(labels []string) vec[prometheus.Gauge] {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
}

func histograms(name, help string, buckets []float64) func([]string) vec[prometheus.Observer] {
	return func(labels []string) vec[prometheus.Observer] {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	}
}

package integration_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/relock-go/relock/lock"
)

// waitLog is an Observer for the chaos suite that tallies how the blocking
// Locks slept and ended, per Client: when a fault phase does few
// acquisitions, it tells whether the waiters slept through free locks (woken
// by expiry after long sleeps), were woken and lost, or never got a quorum.
type waitLog struct {
	mu      sync.Mutex
	sleeps  map[string]int             // "client/end" → sleeps that ended so
	slept   map[string][]time.Duration // "client/end" → how long each slept
	outcome map[string]int             // "client/outcome" → Lock calls
	errs    map[string]int             // "client/op/kind/node: error" → node errors
}

func newWaitLog() *waitLog {
	return &waitLog{sleeps: map[string]int{}, slept: map[string][]time.Duration{}, outcome: map[string]int{}, errs: map[string]int{}}
}

// observer returns the hooks for the Client numbered client.
func (l *waitLog) observer(client int) *lock.Observer {
	return &lock.Observer{
		SleepDone: func(_ context.Context, e lock.SleepDoneInfo) {
			k := fmt.Sprintf("c%d/%s", client, e.Ended)
			l.mu.Lock()
			defer l.mu.Unlock()
			l.sleeps[k]++
			l.slept[k] = append(l.slept[k], e.Slept)
		},
		NodeError: func(_ context.Context, e lock.NodeErrorInfo) {
			msg := e.Err.Error()
			if len(msg) > 60 {
				msg = msg[:60]
			}
			k := fmt.Sprintf("c%d/%s/%s/n%d: %s", client, e.Op, e.Kind, e.Node, msg)
			l.mu.Lock()
			defer l.mu.Unlock()
			l.errs[k]++
		},
		Loss: func(e lock.LossInfo) {
			// Counted with the outcomes, so that a phase's losses say why.
			k := fmt.Sprintf("c%d/loss:%s:%s", client, e.Reason, e.Name)
			l.mu.Lock()
			defer l.mu.Unlock()
			l.outcome[k]++
		},
		LockDone: func(_ context.Context, e lock.LockDoneInfo) {
			if e.Try {
				return
			}
			k := fmt.Sprintf("c%d/%s", client, e.Outcome)
			l.mu.Lock()
			defer l.mu.Unlock()
			l.outcome[k]++
		},
	}
}

// summary is one line: Lock outcomes, then sleeps by how they ended with
// the median and longest sleep of each.
func (l *waitLog) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for _, k := range sortedKeys(l.outcome) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, l.outcome[k]))
	}
	for _, k := range sortedKeys(l.sleeps) {
		d := append([]time.Duration(nil), l.slept[k]...)
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		parts = append(parts, fmt.Sprintf("sleeps %s=%d (p50 %v, max %v)", k, l.sleeps[k],
			d[len(d)/2].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond)))
	}
	// The node errors seen most often, at most ten.
	errs := sortedKeys(l.errs)
	sort.SliceStable(errs, func(i, j int) bool { return l.errs[errs[i]] > l.errs[errs[j]] })
	for _, k := range errs[:min(len(errs), 10)] {
		parts = append(parts, fmt.Sprintf("[%d× %s]", l.errs[k], k))
	}
	return strings.Join(parts, " ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

package peers

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// epoch is the origin of mono: timestamps shared between goroutines through
// atomics are nanoseconds on the monotonic clock since epoch.
var epoch = time.Now()

// mono returns the monotonic time since epoch, in nanoseconds.
func mono() int64 { return int64(time.Since(epoch)) }

// Counter is a go-redis hook that counts the round trips a client makes (one
// per command sent alone, one per pipeline) and notes when it last sent a Lua
// script. It adds two atomic operations per command.
type Counter struct {
	commands   atomic.Int64 // commands sent alone
	pipelines  atomic.Int64 // pipelines, each one round trip
	piped      atomic.Int64 // commands sent inside pipelines
	lastScript atomic.Int64 // mono() when the last EVAL/EVALSHA left, 0 if none
	// tags maps script arguments to watch (owner ids) to the mono() of the
	// last script that carried them; set before the client is used.
	tags atomic.Pointer[map[string]*atomic.Int64]
}

var _ redis.Hook = (*Counter)(nil)

// RoundTrips returns how many round trips the client made so far.
func (h *Counter) RoundTrips() int64 { return h.commands.Load() + h.pipelines.Load() }

// Commands returns how many commands the client sent so far, piped or not.
func (h *Counter) Commands() int64 { return h.commands.Load() + h.piped.Load() }

// LastScript returns mono() of the last script the client sent, 0 if none.
func (h *Counter) LastScript() int64 { return h.lastScript.Load() }

// DialHook leaves dialing alone.
func (h *Counter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook counts a command sent alone.
func (h *Counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.commands.Add(1)
		if isScript(cmd) {
			now := mono()
			h.lastScript.Store(now)
			h.tag(cmd, now)
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts a pipeline as one round trip.
func (h *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.pipelines.Add(1)
		h.piped.Add(int64(len(cmds)))
		now := mono()
		for _, cmd := range cmds {
			if isScript(cmd) {
				h.lastScript.Store(now)
				h.tag(cmd, now)
			}
		}
		return next(ctx, cmds)
	}
}

// tag notes now for every watched argument of cmd.
func (h *Counter) tag(cmd redis.Cmder, now int64) {
	tags := h.tags.Load()
	if tags == nil {
		return
	}
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok {
			if t := (*tags)[s]; t != nil {
				t.Store(now)
			}
		}
	}
}

func isScript(cmd redis.Cmder) bool {
	name := cmd.Name()
	return strings.EqualFold(name, "evalsha") || strings.EqualFold(name, "eval")
}

// Probe is the set of counters of one Process's go-redis clients, one per
// node in node order.
type Probe struct {
	Nodes []*Counter
}

// Watch makes the clients note when they send a script carrying one of
// tags (an owner id); the i-th returned clock reads mono() of the last such
// script with tags[i], 0 if none. Call it before using the clients.
func (p *Probe) Watch(tags []string) []*atomic.Int64 {
	m := make(map[string]*atomic.Int64, len(tags))
	out := make([]*atomic.Int64, len(tags))
	for i, t := range tags {
		if m[t] == nil {
			m[t] = new(atomic.Int64)
		}
		out[i] = m[t]
	}
	for _, c := range p.Nodes {
		c.tags.Store(&m)
	}
	return out
}

// LastScript returns mono() of the last script any of the clients sent.
func (p *Probe) LastScript() int64 {
	var last int64
	for _, c := range p.Nodes {
		last = max(last, c.LastScript())
	}
	return last
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
)

// nodesEnv names the environment variable that gives the nodes when
// --nodes does not.
const nodesEnv = "RELOCK_NODES"

// globals are the flags every command takes, before or after its name.
type globals struct {
	nodes       nodeList
	nodeTimeout time.Duration
	prefix      string
	replicas    int
}

// register adds the global flags to fs. It leaves g as it is (the flag
// package's XxxVar would reset it to the defaults), so the globals given
// before the command's name survive the registration on its flag set.
func (g *globals) register(fs *flag.FlagSet) {
	fs.Var(&g.nodes, "nodes", "the Redis masters, as comma-separated `URLS` (see Nodes in relock --help); default: $"+nodesEnv)
	fs.Func("node-timeout", "wait at most `DURATION` for one node's answer; default: adapt to each node's round trips", func(s string) (err error) {
		g.nodeTimeout, err = time.ParseDuration(s)
		return err
	})
	fs.Func("prefix", "put relock's keys under `PREFIX` (default relock); the same in every process that shares the locks", func(s string) error {
		g.prefix = s
		return nil
	})
	fs.Func("replicas", "the replicated mode, for a master with replicas: each write counts only once `N` replicas acknowledged it (WAIT); default 0, off", func(s string) (err error) {
		g.replicas, err = strconv.Atoi(s)
		return err
	})
}

// resolve completes the globals after parsing: it parses the nodes of
// --nodes, or of the environment when --nodes was not given. Its errors are
// usage errors.
func (g *globals) resolve(getenv func(string) string) error {
	if g.nodeTimeout < 0 {
		return usagef("--node-timeout %v is negative", g.nodeTimeout)
	}
	if g.replicas < 0 {
		return usagef("--replicas %d is negative", g.replicas)
	}
	from, raw := "--nodes", g.nodes.raw
	if !g.nodes.set {
		from, raw = nodesEnv, getenv(nodesEnv)
		if strings.TrimSpace(raw) == "" {
			return usagef("no nodes: give --nodes redis://HOST:PORT,... or set %s", nodesEnv)
		}
	}
	var err error
	if g.nodes.urls, g.nodes.opts, err = parseNodes(raw); err != nil {
		return usagef("%s: %v", from, err)
	}
	return nil
}

// connect makes go-redis clients for the nodes and a lock.Client over them
// with opts (Nodes, KeyPrefix and NodeTimeout come from the globals). It
// contacts no node. The returned function closes both. A command without a
// --lease (inspect, ls, unlock, bench) gets the library's default lease,
// or the least the node timeout allows when that is longer: a lease the
// user never set must not refuse their --node-timeout.
func (g *globals) connect(opts lock.Options) (*lock.Client, func(), error) {
	if opts.Lease == 0 {
		opts.Lease = max(lock.DefaultLease, 10*g.nodeTimeout)
	}
	clients := make([]redis.UniversalClient, len(g.nodes.opts))
	for i, o := range g.nodes.opts {
		o := *o // each client initialises its own copy
		clients[i] = redis.NewClient(&o)
	}
	closeClients := func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}
	opts.Nodes, opts.KeyPrefix, opts.NodeTimeout, opts.Replicas = clients, g.prefix, g.nodeTimeout, g.replicas
	c, err := lock.New(opts)
	if err != nil {
		closeClients()
		return nil, nil, err
	}
	return c, func() { _ = c.Close(); closeClients() }, nil
}

// nodeList is the value of --nodes: the list as given, and once resolved
// one go-redis Options per node. It is parsed after the flags (the flag
// package would repeat a bad value, password included, in its error).
type nodeList struct {
	raw  string
	set  bool
	urls []string // redacted, for messages
	opts []*redis.Options
}

func (l *nodeList) String() string { return strings.Join(l.urls, ",") }

// Set records the comma-separated list of node URLs.
func (l *nodeList) Set(s string) error {
	l.raw, l.set = s, true
	return nil
}

// parseNodes parses a comma-separated list of node URLs with go-redis's
// ParseURL: redis://[USER[:PASSWORD]@]HOST[:PORT][/DB][?OPTIONS],
// rediss:// for TLS, unix://[USER[:PASSWORD]@]/PATH. A bare HOST:PORT means
// redis://HOST:PORT. It returns each URL with its password masked, and the
// options, with ContextTimeoutEnabled set: relock bounds every call with a
// context. Errors never show a password.
func parseNodes(s string) ([]string, []*redis.Options, error) {
	var urls []string
	var opts []*redis.Options
	for i, raw := range strings.Split(s, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			return nil, nil, fmt.Errorf("node %d: empty URL in %q", i+1, s)
		}
		if !strings.Contains(raw, "://") {
			raw = "redis://" + raw
		}
		u, err := url.Parse(raw)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // its message repeats the URL, password included
			}
			return nil, nil, fmt.Errorf("node %d: not a URL: %v", i+1, err)
		}
		shown := u.Redacted()
		o, err := redis.ParseURL(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("node %d: %s: %v", i+1, shown, err)
		}
		if h := u.Hostname(); u.Scheme != "unix" && (h == "" || strings.Contains(h, ":") && !strings.HasPrefix(u.Host, "[")) {
			return nil, nil, fmt.Errorf("node %d: %s: bad host %q", i+1, shown, u.Host)
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return nil, nil, fmt.Errorf("node %d: %s: port %s is not in 1-65535", i+1, shown, p)
			}
		}
		if err := checkClientOptions(o); err != nil {
			return nil, nil, fmt.Errorf("node %d: %s: %v", i+1, shown, err)
		}
		o.ContextTimeoutEnabled = true
		urls, opts = append(urls, shown), append(opts, o)
	}
	return urls, opts, nil
}

// checkClientOptions refuses the values a URL's query may set that go-redis
// takes but cannot use: a negative pool size panics in redis.NewClient, and
// a negative database, dial or pool timeout fails every call later, where a
// usage message is due now. go-redis's own "no value" of -1 (max_retries;
// a duration at or below zero, which its URL parser turns into -1) stays
// valid where go-redis documents it.
func checkClientOptions(o *redis.Options) error {
	for _, c := range []struct {
		name string
		v    int
	}{
		{"pool_size", o.PoolSize},
		{"min_idle_conns", o.MinIdleConns},
		{"max_idle_conns", o.MaxIdleConns},
		{"max_active_conns", o.MaxActiveConns},
		{"max_concurrent_dials", o.MaxConcurrentDials},
		{"database number", o.DB},
	} {
		if c.v < 0 {
			return fmt.Errorf("%s %d is negative", c.name, c.v)
		}
	}
	switch {
	case o.MaxRetries < -1:
		return fmt.Errorf("max_retries %d is below -1 (no retries)", o.MaxRetries)
	case o.DialTimeout < 0:
		return fmt.Errorf("dial_timeout is not positive: every dial would fail at once")
	case o.PoolTimeout < 0:
		return fmt.Errorf("pool_timeout is not positive: every call would fail at once")
	}
	return nil
}

package main

import (
	"strings"
	"testing"
)

func TestParseNodesAcceptsGoRedisURLs(t *testing.T) {
	urls, opts, err := parseNodes(" redis://127.0.0.1:7000 ,rediss://user:s3cret@r2.example:6380/2?dial_timeout=2s&skip_verify=true, r3:6381,unix://:pw@/run/redis.sock")
	if err != nil {
		t.Fatal(err)
	}
	if len(opts) != 4 {
		t.Fatalf("%d nodes; want 4", len(opts))
	}
	if o := opts[0]; o.Addr != "127.0.0.1:7000" || o.TLSConfig != nil || !o.ContextTimeoutEnabled {
		t.Errorf("node 1: %+v", o)
	}
	if o := opts[1]; o.Addr != "r2.example:6380" || o.Username != "user" || o.Password != "s3cret" || o.DB != 2 ||
		o.TLSConfig == nil || o.TLSConfig.ServerName != "r2.example" || !o.TLSConfig.InsecureSkipVerify || o.DialTimeout.Seconds() != 2 {
		t.Errorf("node 2: %+v", o)
	}
	if o := opts[2]; o.Addr != "r3:6381" {
		t.Errorf("node 3 (bare HOST:PORT): %+v", o)
	}
	if o := opts[3]; o.Network != "unix" || o.Addr != "/run/redis.sock" || o.Password != "pw" {
		t.Errorf("node 4: %+v", o)
	}
	// go-redis's "none" values stay valid: no retries, no read deadline.
	if _, opts, err := parseNodes("h:1?max_retries=-1&read_timeout=-1&conn_max_idle_time=-1"); err != nil || opts[0].MaxRetries != -1 || opts[0].ReadTimeout != -1 {
		t.Errorf("go-redis's -1 values: %v, %+v", err, opts)
	}
	for _, u := range urls {
		if strings.Contains(u, "s3cret") || strings.Contains(u, ":pw@") {
			t.Errorf("URL shown with its password: %q", u)
		}
	}
}

func TestParseNodesRejectsBadURLsWithoutShowingPasswords(t *testing.T) {
	for _, s := range []string{
		"http://h:1",
		"redis://u:s3cret@h:99999",
		"redis://u:s3cret@h:0",
		"redis://u:s3cret@h:1/not-a-db",
		"redis://u:s3cret@h:1/1/2",
		"redis://u:s3cret@h:1?nonsense=1",
		"redis://u:s3cret@h:1:2",
		"redis://u:s3cret@:1",
		"redis://u:s3cret@h:x",
		"h:1,,h:2",
		"",
		"redis://u:s3cret@[::1",
		"redis://u:s3cret@h:1?pool_size=-3", // panicked in redis.NewClient
		"redis://u:s3cret@h:1?min_idle_conns=-1",
		"redis://u:s3cret@h:1?max_retries=-2",
		"redis://u:s3cret@h:1?dial_timeout=-5s",
		"redis://u:s3cret@h:1?pool_timeout=0",
		"redis://u:s3cret@h:1/-1",
	} {
		_, _, err := parseNodes(s)
		if err == nil {
			t.Errorf("parseNodes(%q) accepted", s)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("parseNodes(%q): the error shows the password: %v", s, err)
		}
	}
}

func TestResolveNodesFromFlagThenEnvironment(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == nodesEnv {
				return v
			}
			return ""
		}
	}
	g := new(globals)
	if err := g.resolve(env("")); err == nil || exitCode(err) != exitUsage {
		t.Errorf("no nodes: %v", err)
	}
	if err := g.resolve(env("e1:1,e2:2")); err != nil || len(g.nodes.opts) != 2 || g.nodes.opts[1].Addr != "e2:2" {
		t.Errorf("from %s: %v, %v", nodesEnv, err, g.nodes.urls)
	}
	g = new(globals)
	_ = g.nodes.Set("f1:1")
	if err := g.resolve(env("e1:1,e2:2")); err != nil || len(g.nodes.opts) != 1 || g.nodes.opts[0].Addr != "f1:1" {
		t.Errorf("--nodes must win over %s: %v, %v", nodesEnv, err, g.nodes.urls)
	}
	g = new(globals)
	if err := g.resolve(env("http://x")); err == nil || !strings.Contains(err.Error(), nodesEnv) {
		t.Errorf("a bad %s must be named: %v", nodesEnv, err)
	}
}

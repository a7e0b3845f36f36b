package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// call runs relock's command line with RELOCK_NODES set to nodes and
// returns its exit code, stdout and stderr.
func call(nodes string, args ...string) (int, string, string) {
	var out, errOut strings.Builder
	e := &env{stdout: &out, stderr: &errOut, getenv: func(k string) string {
		if k == nodesEnv {
			return nodes
		}
		return ""
	}}
	code := relock(context.Background(), e, args)
	return code, out.String(), errOut.String()
}

func TestHelpGoesToStdoutWithStatusZero(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"help", "run"}, {"run", "--help"}, {"inspect", "-h"}, {"--nodes", "x:1", "ls", "--help"}, {"help", "bench"}, {"unlock", "--help"}} {
		code, out, errOut := call("", args...)
		if code != exitOK || errOut != "" || !strings.Contains(out, "Usage: relock") || !strings.Contains(out, "Exit status:") {
			t.Errorf("relock %q: exit %d, stderr %q, stdout:\n%s", args, code, errOut, out)
		}
	}
	_, out, _ := call("", "run", "--help")
	for _, want := range []string{"--kill-after DURATION", "-w, --wait DURATION", "--fencing", "RELOCK_TOKEN", "Examples:", "relock run nightly-report -- ./report.sh"} {
		if !strings.Contains(out, want) {
			t.Errorf("run --help lacks %q", want)
		}
	}
}

func TestUsageErrorsExitTwoBeforeAnyNode(t *testing.T) {
	// Node 1 would be reachable nowhere: a usage error must come first.
	const nodes = "127.0.0.1:1"
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"--bogus", "ls"},
		{"run"},
		{"run", "name"},
		{"run", "--wait", "1s", "--no-wait", "name", "--", "true"},
		{"run", "--wait", "-1s", "name", "true"},
		{"run", "--lease", "0s", "name", "true"},
		{"run", "--kill-after", "-1s", "name", "true"},
		{"inspect"},
		{"inspect", "a", "b"},
		{"inspect", "--json=maybe", "a"},
		{"unlock", "name"},
		{"ls", "a", "b"},
		{"ls", "--limit", "0"},
		{"bench", "--clients", "0"},
		{"bench", "--clients", "1,x"},
		{"bench", "--duration", "11m"},
		{"bench", "--ops", "0"},
		{"bench", "extra"},
		{"--nodes", "http://h:1", "inspect", "x"},
		{"inspect", "--nodes", "h:1,,h:2", "x"},
		{"inspect", "--node-timeout", "-1s", "x"},
		{"--node-timeout", "-1s", "inspect", "x"}, // globals before the command's name count too
		{"--node-timeout", "1s", "run", "--lease", "2s", "x", "true"},
		{"inspect", "--node-timeout", "100ms", "--nodes", "h:1,h:1", "x"}, // duplicate node: lock.New says so
		{"inspect", "--replicas", "-1", "x"},
		{"--replicas", "two", "inspect", "x"},
		{"--replicas", "1", "--node-timeout", "1ms", "run", "--lease", "1s", "x", "true"}, // WAIT's timeout, half of 1ms, is below its 1ms
	} {
		code, out, errOut := call(nodes, args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "usage: relock") {
			t.Errorf("relock %q: exit %d; want %d with a usage message; stdout %q, stderr %q", args, code, exitUsage, out, errOut)
		}
	}
	if code, _, errOut := call("", "inspect", "x"); code != exitUsage || !strings.Contains(errOut, nodesEnv) {
		t.Errorf("no nodes: exit %d, %q", code, errOut)
	}
}

// A command without --lease takes a lease the node timeout allows; run's
// --lease is checked against it in the flags' own names.
func TestNodeTimeoutAndTheLeaseInTheFlagsNames(t *testing.T) {
	code, _, errOut := call("127.0.0.1:1", "inspect", "--node-timeout", "10s", "x")
	if code != exitNodes || strings.Contains(errOut, "Lease") {
		t.Errorf("inspect --node-timeout 10s: exit %d, stderr %q; want %d (node 1 is reachable nowhere), no word of a lease", code, errOut, exitNodes)
	}
	code, _, errOut = call("127.0.0.1:1", "run", "--node-timeout", "10s", "x", "--", "true")
	if code != exitUsage || !strings.Contains(errOut, "--lease 30s is below 10 × --node-timeout (10s)") {
		t.Errorf("run --node-timeout 10s: exit %d, stderr %q", code, errOut)
	}
}

// Two addresses of one server pass lock.New's static check and leave the
// duplicate check to the servers' run_ids (INFO server). Nodes that cannot
// be reached cannot be asked: that is the nodes' failure (4), not a usage
// error, which only a duplicate found is.
func TestUnreachableNodesAreNotAUsageError(t *testing.T) {
	for _, args := range [][]string{
		{"inspect", "x"},
		{"ls"},
		{"unlock", "--force", "x"},
		{"run", "--no-wait", "x", "--", "true"},
	} {
		code, _, errOut := call("127.0.0.1:1,localhost:1", append([]string{"--node-timeout", "100ms"}, args...)...)
		if code != exitNodes || strings.Contains(errOut, "usage: relock") {
			t.Errorf("relock %q: exit %d, stderr %q; want %d without a usage message", args, code, errOut, exitNodes)
		}
	}
}

func TestRunOfAMissingCommandExits127WithoutLocking(t *testing.T) {
	code, _, errOut := call("127.0.0.1:1", "run", "name", "--", "relock-no-such-command")
	if code != exitNotFound || !strings.Contains(errOut, "not found") {
		t.Fatalf("exit %d, stderr %q; want %d", code, errOut, exitNotFound)
	}
}

// A CMD given as a path is checked before the lock is taken too, as the
// shells do: missing 127, a directory or a file without the execute bit 126.
func TestRunOfACommandPathThatCannotRunExitsWithoutLocking(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "report.sh")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd  string
		want int
	}{
		{"./relock-no-such-command", exitNotFound},
		{filepath.Join(dir, "missing.sh"), exitNotFound},
		{dir, exitCannotRun},
		{plain, exitCannotRun},
	} {
		// Node 1 is reachable nowhere: an exit other than tc.want (4,
		// the quorum's) says the lock was tried first.
		code, _, errOut := call("127.0.0.1:1", "run", "--no-wait", "name", "--", tc.cmd)
		if code != tc.want {
			t.Errorf("run %s: exit %d, stderr %q; want %d", tc.cmd, code, errOut, tc.want)
		}
	}
}

func TestVersion(t *testing.T) {
	if code, out, _ := call("", "--version"); code != exitOK || !strings.HasPrefix(out, "relock ") {
		t.Fatalf("--version: %d %q", code, out)
	}
}

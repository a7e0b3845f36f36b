package integration_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/reentrant"
)

// requireMatchesInspect checks that one lock of relock's JSON output says
// what the library's Inspect says of it: per node holders, counts and
// fencing counter, TTLs within the seconds between the two reads, and the
// quorum's holder.
func requireMatchesInspect(t *testing.T, c *lock.Client, got inspectJSON, name string, holder *lock.Mutex, count int64) {
	t.Helper()
	states, err := c.Inspect(ctxFor(t, 10*time.Second), name)
	require.NoError(t, err)
	n, quorum := c.Nodes()
	require.Equal(t, name, got.Name)
	require.Equal(t, quorum, got.Quorum)
	require.Len(t, got.Nodes, n)
	for i, s := range states {
		node := got.Nodes[i]
		require.Equal(t, i, node.Node)
		require.Equal(t, cluster.Nodes[i].Addr(), node.Addr)
		require.NoError(t, s.Err)
		require.Empty(t, node.Error)
		require.Equal(t, s.Info.Holders, node.Holders, "node %d holders", i)
		require.Equal(t, s.Info.Fence, node.Fence, "node %d fencing counter", i)
		require.NotNil(t, node.TTLms, "node %d TTL", i)
		require.InDelta(t, s.Info.TTL.Milliseconds(), *node.TTLms, 5000, "node %d TTL", i)
	}
	require.True(t, got.Held)
	require.NotNil(t, got.Holder)
	require.Equal(t, holder.Owner(), got.Holder.Owner)
	require.Equal(t, count, got.Holder.Count)
	require.Equal(t, n, got.Holder.Nodes)
	require.Equal(t, n, got.Answered)
}

// testCLIInspectAndLs: inspect and ls, as tables and as JSON, report what
// the library's Inspect reports, for a name that needs escaping in its key.
func testCLIInspectAndLs(t *testing.T, cli relockCLI, n int) {
	reset(t)
	c := newLockClient(t, n, lock.Options{})
	ctx := ctxFor(t, 30*time.Second)
	const name = "report:{eu} 1"
	m := c.NewMutex(name, lock.WithFencing(lock.CounterTokens))
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Lock(ctx)) // count 2
	other := c.NewMutex("other")
	require.NoError(t, other.Lock(ctx))

	code, out, stderr := cli.run(t, n, "inspect", "--json", name)
	require.Equal(t, 0, code, stderr)
	var view inspectJSON
	decodeJSON(t, out, &view)
	requireMatchesInspect(t, c, view, name, m, 2)
	require.Equal(t, m.Token(), view.Nodes[0].Fence, "the fencing counter is the holder's token")

	code, out, stderr = cli.run(t, n, "inspect", name)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, fmt.Sprintf("held by %s (count 2, TTL ", m.Owner()))
	require.Contains(t, out, fmt.Sprintf("on %d of %d nodes (quorum %d)", n, n, n/2+1))
	require.Equal(t, n+2, strings.Count(out, "\n"), "a summary, a header and one row per node:\n%s", out)

	code, out, stderr = cli.run(t, n, "ls", "--json", "report:*")
	require.Equal(t, 0, code, stderr)
	var listed lsJSON
	decodeJSON(t, out, &listed)
	require.Len(t, listed.Locks, 1, "only the lock matching the pattern: %s", out)
	requireMatchesInspect(t, c, listed.Locks[0], name, m, 2)
	require.False(t, listed.Truncated)
	require.Empty(t, listed.Unreachable)

	code, out, stderr = cli.run(t, n, "ls")
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, fmt.Sprintf(`(?m)^"report:\{eu\} 1"\s+%s\s+2\s+\S+s\s+%d/%d$`, m.Owner(), n, n), out)
	require.Regexp(t, fmt.Sprintf(`(?m)^other\s+%s\s+1\s+\S+s\s+%d/%d$`, other.Owner(), n, n), out)

	code, out, stderr = cli.run(t, n, "ls", "--limit", "1", "--json")
	require.Equal(t, 0, code, stderr)
	var cut lsJSON
	decodeJSON(t, out, &cut)
	require.True(t, cut.Truncated, "two locks, a limit of one per node")
	require.NotEmpty(t, cut.Locks)
	require.LessOrEqual(t, len(cut.Locks), n, "at most one lock from each node")
	require.Contains(t, stderr, "incomplete")

	// Once released, neither lists it.
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, other.Unlock(ctx))
	requireNothingListed(t, cli, n)
	code, out, _ = cli.run(t, n, "inspect", "--json", name)
	require.Equal(t, 0, code)
	var freed inspectJSON
	decodeJSON(t, out, &freed)
	require.False(t, freed.Held)
	require.Nil(t, freed.Holder)
}

// testCLIInspectAndLsReaders: an RWMutex that only readers hold shows in
// inspect (each reader's count and lease on each node, and the readers on
// a quorum) and in ls, which finds it by its readers' key (it has no lock
// hash then).
func testCLIInspectAndLsReaders(t *testing.T, cli relockCLI) {
	const n = 3
	reset(t)
	c := newLockClient(t, n, lock.Options{})
	ctx := ctxFor(t, 30*time.Second)
	const name = "config"
	a, b := c.NewRWMutex(name), c.NewRWMutex(name)
	require.NoError(t, a.RLock(ctx))
	require.NoError(t, a.RLock(ctx)) // count 2
	require.NoError(t, b.RLock(ctx))

	code, out, stderr := cli.run(t, n, "inspect", "--json", name)
	require.Equal(t, 0, code, stderr)
	var view inspectJSON
	decodeJSON(t, out, &view)
	require.False(t, view.Held, "no writer")
	require.Len(t, view.Readers, 2, out)
	requireQuorumHolds(t, view.Readers, map[string]int64{a.Owner(): 2, b.Owner(): 1}, n)
	for _, node := range view.Nodes {
		require.Len(t, node.Readers, 2, "node %d", node.Node)
		require.Equal(t, int64(2), node.Readers[a.Owner()].Count, "node %d", node.Node)
	}

	code, out, stderr = cli.run(t, n, "inspect", name)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "read by ")
	require.Equal(t, 2*n, strings.Count(out, " (read) "), "a row per reader on each node:\n%s", out)

	code, out, stderr = cli.run(t, n, "ls")
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, fmt.Sprintf(`(?m)^config\s+%s \(read\)\s+2\s+\S+s\s+%d/%d$`, a.Owner(), n, n), out)
	require.Regexp(t, fmt.Sprintf(`(?m)^config\s+%s \(read\)\s+1\s+\S+s\s+%d/%d$`, b.Owner(), n, n), out)

	require.NoError(t, a.RUnlock(ctx))
	require.NoError(t, a.RUnlock(ctx))
	require.NoError(t, b.RUnlock(ctx))
	requireNothingListed(t, cli, n)
}

// testCLIInspectAndLsPermits: a Semaphore's holders show in inspect (each
// one's permits and lease on each node, and those on the semaphore's
// quorum, which the capacity the nodes recorded sets, or --permits) and in
// ls, which finds the name by its permits' key; a Mutex of the same name
// gets its own line; unlock --force frees one holder (--owner), then all.
func testCLIInspectAndLsPermits(t *testing.T, cli relockCLI) {
	const n = 3
	reset(t)
	c := newLockClient(t, n, lock.Options{})
	ctx := ctxFor(t, 30*time.Second)
	const name = "exports"
	s := newSemaphore(t, c, name, 3)
	two, err := s.Acquire(ctx, 2)
	require.NoError(t, err)
	one, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	permits := map[string]int64{two.Owner(): 2, one.Owner(): 1}

	code, out, stderr := cli.run(t, n, "inspect", "--json", name)
	require.Equal(t, 0, code, stderr)
	var view inspectJSON
	decodeJSON(t, out, &view)
	require.False(t, view.Held, "no lock of the name")
	require.Empty(t, view.Readers)
	require.Equal(t, int64(3), view.Capacity, "as the holders gave it")
	require.Equal(t, s.Quorum(), view.PermitQuorum, "lock.SemaphoreQuorum(3, 3)")
	requireQuorumHolds(t, view.Permits, permits, n)
	for _, node := range view.Nodes {
		require.Len(t, node.Permits, 2, "node %d", node.Node)
		require.Equal(t, int64(2), node.Permits[two.Owner()].Count, "node %d", node.Node)
		require.Empty(t, node.Holders, "node %d", node.Node)
	}

	m := c.NewMutex(name)
	require.NoError(t, m.Lock(ctx))
	code, out, stderr = cli.run(t, n, "inspect", name)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, fmt.Sprintf("lock %q: held by %s", name, m.Owner()))
	require.Contains(t, out, fmt.Sprintf("semaphore %q (capacity 3): 3 permits held by ", name))
	require.Contains(t, out, fmt.Sprintf("each on a quorum of %d of %d nodes", s.Quorum(), n))
	require.Equal(t, 2*n, strings.Count(out, " (permits) "), "a row per holder on each node:\n%s", out)

	code, out, stderr = cli.run(t, n, "ls")
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, fmt.Sprintf(`(?m)^exports\s+%s\s+1\s+\S+s\s+%d/%d$`, m.Owner(), n, n), out)
	require.Regexp(t, fmt.Sprintf(`(?m)^exports\s+%s \(permits\)\s+2\s+\S+s\s+%d/%d$`, two.Owner(), n, n), out)
	require.Regexp(t, fmt.Sprintf(`(?m)^exports\s+%s \(permits\)\s+1\s+\S+s\s+%d/%d$`, one.Owner(), n, n), out)

	// --permits over what the nodes recorded: 1 permit, a majority.
	code, out, stderr = cli.run(t, n, "inspect", "--json", "--permits", "1", name)
	require.Equal(t, 0, code, stderr)
	var asOne inspectJSON
	decodeJSON(t, out, &asOne)
	require.Equal(t, int64(1), asOne.Capacity)
	require.Equal(t, n/2+1, asOne.PermitQuorum)
	for _, bad := range []string{"-1", "x"} {
		code, _, stderr = cli.run(t, n, "inspect", "--permits", bad, name)
		require.Equal(t, 2, code, "--permits %s: %s", bad, stderr)
	}

	// The semaphore alone, once the lock is released; then nothing.
	require.NoError(t, m.Unlock(ctx))
	code, out, stderr = cli.run(t, n, "ls", "--json")
	require.Equal(t, 0, code, stderr)
	var listed lsJSON
	decodeJSON(t, out, &listed)
	require.Len(t, listed.Locks, 1, out)
	require.Len(t, listed.Locks[0].Permits, 2, out)

	// unlock --force --owner frees one holder alone; an owner with nothing
	// of the name is exit status 1.
	code, _, stderr = cli.run(t, n, "unlock", "--force", "--owner", one.Owner(), name)
	require.Equal(t, 0, code, stderr)
	requirePermitsSoon(t, n, name, map[string]int64{two.Owner(): 2}, time.Second)
	require.ErrorIs(t, one.Release(ctx), lock.ErrLost)
	code, _, stderr = cli.run(t, n, "unlock", "--force", "--owner", one.Owner(), name)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, one.Owner()+" holds nothing of")

	// unlock --force frees the semaphore's holders too: their releases find
	// their permits gone.
	code, _, stderr = cli.run(t, n, "unlock", "--force", name)
	require.Equal(t, 0, code, stderr)
	requireNothingListed(t, cli, n)
	require.ErrorIs(t, two.Release(ctx), lock.ErrLost)
}

// requireQuorumHolds checks the readers or semaphore holders on a quorum
// that relock inspect --json gave: exactly the owners of counts, each with
// its count, on all n nodes, with some lease left.
func requireQuorumHolds(t *testing.T, holds []quorumHoldJSON, counts map[string]int64, n int) {
	t.Helper()
	require.Len(t, holds, len(counts))
	for _, h := range holds {
		require.Contains(t, counts, h.Owner)
		require.Equal(t, counts[h.Owner], h.Count, h.Owner)
		require.Equal(t, n, h.Nodes, h.Owner)
		require.Positive(t, h.TTLms, h.Owner)
	}
}

// requireNothingListed checks that relock ls, over the first n nodes,
// lists no lock.
func requireNothingListed(t *testing.T, cli relockCLI, n int) {
	t.Helper()
	code, out, stderr := cli.run(t, n, "ls", "--json")
	require.Equal(t, 0, code, stderr)
	var none lsJSON
	decodeJSON(t, out, &none)
	require.Empty(t, none.Locks, "released: nothing listed")
}

// testCLIInspectNodeDown: with one node of three stopped, inspect shows it
// unreachable and the lock still held on the quorum (exit 0); with two
// stopped, the state is unknown (exit 4).
func testCLIInspectNodeDown(t *testing.T, cli relockCLI) {
	reset(t)
	_, m, ctx := holdLock(t, 3, "down")
	require.NoError(t, cluster.Nodes[2].Stop(ctx))

	code, out, stderr := cli.run(t, 3, "inspect", "--json", "down")
	require.Equal(t, 0, code, stderr)
	var view inspectJSON
	decodeJSON(t, out, &view)
	require.True(t, view.Held)
	require.Equal(t, m.Owner(), view.Holder.Owner)
	require.Equal(t, 2, view.Answered)
	require.NotEmpty(t, view.Nodes[2].Error, "the stopped node is reported")
	require.Nil(t, view.Nodes[2].Holders)

	code, out, stderr = cli.run(t, 3, "ls")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, m.Owner())
	require.Contains(t, stderr, "node 2 ("+cluster.Nodes[2].Addr()+") could not be read")

	require.NoError(t, cluster.Nodes[1].Stop(ctx))
	code, out, stderr = cli.run(t, 3, "inspect", "down")
	require.Equal(t, 4, code, "stdout: %s stderr: %s", out, stderr)
	require.Contains(t, out, "unknown: 1 of 3 nodes answered, 2 needed")
	require.Contains(t, out, "unreachable")
	code, _, stderr = cli.run(t, 3, "ls")
	require.Equal(t, 4, code, stderr)
	code, _, stderr = cli.run(t, 3, "run", "--no-wait", "down", "--", "true")
	require.Equal(t, 4, code, "no quorum: %s", stderr)
	require.Contains(t, stderr, "quorum not reached")
}

// testCLILsMinority: a lock key on one node of three (what a failed
// attempt leaves until its lease ends) is not a held lock: ls leaves it
// out, ls --all shows it.
func testCLILsMinority(t *testing.T, cli relockCLI) {
	reset(t)
	key, err := reentrant.NewKey("", "partial")
	require.NoError(t, err)
	ctx := ctxFor(t, 10*time.Second)
	require.NoError(t, cluster.Nodes[0].Direct().HSet(ctx, key.Lock, "c:o", 1).Err())
	require.NoError(t, cluster.Nodes[0].Direct().PExpire(ctx, key.Lock, time.Minute).Err())

	code, out, stderr := cli.run(t, 3, "ls", "--json")
	require.Equal(t, 0, code, stderr)
	var listed lsJSON
	decodeJSON(t, out, &listed)
	require.Empty(t, listed.Locks)

	code, out, stderr = cli.run(t, 3, "ls", "--all", "--json")
	require.Equal(t, 0, code, stderr)
	var all lsJSON
	decodeJSON(t, out, &all)
	require.Len(t, all.Locks, 1)
	require.Equal(t, "partial", all.Locks[0].Name)
	require.False(t, all.Locks[0].Held)
	require.Equal(t, map[string]int64{"c:o": 1}, all.Locks[0].Nodes[0].Holders)

	code, out, _ = cli.run(t, 3, "ls", "--all")
	require.Equal(t, 0, code)
	require.Contains(t, out, "partial  (no quorum)  -      -    1/3")
}

// testCLIBadInput: bad flags, arguments and URLs exit 2 with a usage
// message, and change nothing on any node: no key changes, no connection
// is even opened.
func testCLIBadInput(t *testing.T, cli relockCLI, n int) {
	reset(t)
	c, m, ctx := holdLock(t, n, "kept") // not renewed: nothing else talks to the nodes
	require.NoError(t, cluster.Nodes[0].Direct().Set(ctx, "unrelated", "v", 0).Err())
	ran := filepath.Join(t.TempDir(), "ran")
	before := keyspace(t)
	for _, args := range [][]string{
		{"frobnicate", "kept"},
		{"run", "--bogus", "kept", "--", "touch", ran},
		{"run", "--wait", "1s", "--no-wait", "kept", "--", "touch", ran},
		{"run", "--wait", "soon", "kept", "--", "touch", ran},
		{"run", "--lease", "-1s", "kept", "--", "touch", ran},
		{"run", "kept"},
		{"unlock", "kept"},
		{"unlock", "--force"},
		{"unlock", "--force", "kept", "extra"},
		{"unlock", "--force", "--owner", "", "kept"},
		{"inspect"},
		{"ls", "--limit", "-1"},
		{"bench", "--clients", "0"},
		{"--nodes", "redis://" + cluster.Nodes[0].Addr() + ",ftp://x", "unlock", "--force", "kept"},
		{"--nodes", "redis://" + cluster.Nodes[0].Addr() + ":99999", "unlock", "--force", "kept"},
		{"--nodes", "redis://" + cluster.Nodes[0].Addr() + "/notadb", "unlock", "--force", "kept"},
		{"unlock", "--force", "--nodes", nodeURLs(n) + "," + nodeURLs(1), "kept"}, // a node twice
		{"--node-timeout", "-5ms", "unlock", "--force", "kept"},
		{"run", "--node-timeout", "1s", "--lease", "2s", "kept", "--", "touch", ran}, // lease < 10 × node timeout
	} {
		code, out, stderr := cli.run(t, n, args...)
		require.Equal(t, 2, code, "relock %q: stdout %q stderr %q", args, out, stderr)
		require.Contains(t, stderr, "usage: relock", "relock %q", args)
	}
	require.Equal(t, before, keyspace(t), "bad command lines changed or contacted a node")
	require.NoFileExists(t, ran)
	ok, err := c.IsLocked(ctx, "kept")
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, m.Unlock(ctx))
}

// testCLIUserPassword: a node URL with a user and password (an ACL user)
// works, and a wrong password fails without showing the password.
func testCLIUserPassword(t *testing.T, cli relockCLI) {
	reset(t)
	ctx := ctxFor(t, 10*time.Second)
	direct := cluster.Nodes[0].Direct()
	require.NoError(t, direct.Do(ctx, "ACL", "SETUSER", "relock-cli", "on", ">s3cret-pw", "~*", "&*", "+@all").Err())
	t.Cleanup(func() { _ = direct.Do(ctxFor(t, 5*time.Second), "ACL", "DELUSER", "relock-cli").Err() })
	addr := cluster.Nodes[0].Addr()

	code, _, stderr := cli.run(t, 0, "--nodes", "redis://relock-cli:s3cret-pw@"+addr, "run", "acl", "--", "true")
	require.Equal(t, 0, code, stderr)
	code, out, stderr := cli.run(t, 0, "--nodes", "redis://relock-cli:wrong-pw@"+addr, "inspect", "acl")
	require.Equal(t, 4, code, "stdout %s stderr %s", out, stderr)
	require.NotContains(t, out+stderr, "wrong-pw")
}

// testCLIBench: bench on one master completes cycles, writes a progress
// line and a table, and leaves no lock held.
func testCLIBench(t *testing.T, cli relockCLI) {
	reset(t)
	code, out, stderr := cli.run(t, 1, "bench", "--clients", "2", "--duration", "2500ms", "--ops", "100000")
	require.Equal(t, 0, code, "stdout %s stderr %s", out, stderr)
	require.Contains(t, stderr, "relock bench: 2 clients: ", "a progress line")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, "a title, a blank line, a header and one row:\n%s", out)
	require.Contains(t, lines[2], "LOCK P50")
	fields := strings.Fields(lines[3])
	require.Equal(t, "2", fields[0], "the round of 2 clients")
	require.NotEqual(t, "0", fields[2], "cycles done")
	require.Equal(t, "0", fields[3], "no errors")

	code, out, _ = cli.run(t, 1, "ls", "--all", "relock-bench/*")
	require.Equal(t, 0, code)
	require.Equal(t, 1, strings.Count(out, "\n"), "no bench lock left: %s", out)
}

// testCLIReplicas: --replicas turns on the replicated mode. The fixture's
// masters have no replicas, so a lock taken with --replicas 1 is never
// acknowledged: run fails as the nodes do (exit 4, saying why), without
// running the command and without leaving the lock behind, where the
// same command line without the flag runs it.
func testCLIReplicas(t *testing.T, cli relockCLI) {
	reset(t)
	const name = "cli-replicas"
	code, out, stderr := cli.run(t, 1, "--replicas", "1", "run", "--no-wait", name, "--", "echo", "ran")
	require.Equal(t, 4, code, "stdout %s stderr %s", out, stderr)
	require.NotContains(t, out, "ran", "the command ran without the lock")
	require.Contains(t, stderr, "replicas")
	ctx := ctxFor(t, 10*time.Second)
	require.Eventually(t, func() bool {
		n, err := cluster.Nodes[0].Direct().Exists(ctx, "relock:{"+name+"}").Result()
		return err == nil && n == 0
	}, 5*time.Second, 20*time.Millisecond, "the unacknowledged acquire was not undone")

	code, out, stderr = cli.run(t, 1, "run", "--no-wait", name, "--", "echo", "ran")
	require.Equal(t, 0, code, "stdout %s stderr %s", out, stderr)
	require.Contains(t, out, "ran")
}

package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
)

// cliMasters are the cluster sizes the CLI tests run against.
var cliMasters = []int{1, 3}

// cliBuildTimeout bounds the build of the relock binary (a cold -race build
// of its dependencies on two cores takes minutes).
const cliBuildTimeout = 5 * time.Minute

// cliTimeout bounds every relock process a test waits for.
const cliTimeout = 30 * time.Second

// buildRelock builds cmd/relock from the library module, as go install
// would, into a temporary directory, with the race detector when this test
// binary has it, and returns the binary's path.
func buildRelock(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "relock")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	ctx, cancel := context.WithTimeout(t.Context(), cliBuildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append(args, "./cmd/relock")...)
	cmd.Dir = ".." // the library module
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/relock: %s", out)
	return bin
}

// holdLock takes the lock name on the first n nodes through a library
// Client of the test's, for its holder to be another process than the
// relock under test. The lease is a minute and not renewed: nothing of the
// holder talks to the nodes until it unlocks. It returns the Client, the
// holder and a context that bounds the test's own calls.
func holdLock(t *testing.T, n int, name string) (*lock.Client, *lock.Mutex, context.Context) {
	t.Helper()
	c := newLockClient(t, n, lock.Options{})
	ctx := ctxFor(t, time.Minute)
	m := c.NewMutex(name)
	require.NoError(t, m.LockFor(ctx, time.Minute))
	return c, m, ctx
}

// nodeURLs is RELOCK_NODES for the first n nodes of the cluster (direct
// addresses: the relock processes do not go through the test's proxies).
func nodeURLs(n int) string {
	urls := make([]string, n)
	for i := range n {
		urls[i] = "redis://" + cluster.Nodes[i].Addr()
	}
	return strings.Join(urls, ",")
}

// relockCLI runs the relock binary against the cluster.
type relockCLI struct{ bin string }

// proc is a relock process a test started.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer // read them only after wait
	done           chan struct{}
}

// start starts relock with args and RELOCK_NODES set to the first n nodes,
// its stdin the null device. The process is killed at the end of the test
// if it still runs (its CMD then dies with it: relock starts it with a
// death signal).
func (c relockCLI) start(t *testing.T, n int, args ...string) *proc {
	t.Helper()
	return c.startWithInput(t, n, nil, args...)
}

// startWithInput is start with stdin read from in (the null device when
// nil).
func (c relockCLI) startWithInput(t *testing.T, n int, in io.Reader, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: c.command(n, args...)}
	p.cmd.Stdin = in
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.WaitDelay = 5 * time.Second // a CMD's straggler must not hold the pipes for ever
	p.launch(t)
	return p
}

// command is the relock command line args with RELOCK_NODES set to the
// first n nodes.
func (c relockCLI) command(n int, args ...string) *exec.Cmd {
	cmd := exec.Command(c.bin, args...)
	cmd.Env = append(os.Environ(), "RELOCK_NODES="+nodeURLs(n))
	return cmd
}

// launch starts p.cmd; it is killed at the end of the test if it still
// runs.
func (p *proc) launch(t *testing.T) {
	t.Helper()
	p.done = make(chan struct{})
	require.NoError(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

// wait waits up to timeout for the process to exit and returns its exit
// code; it fails the test (and kills the process) if it does not exit.
func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("relock %q still running after %v; stderr: %s", p.cmd.Args[1:], timeout, p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// signal sends sig to the relock process.
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
}

// run runs relock with args against the first n nodes and returns its exit
// code, stdout and stderr.
func (c relockCLI) run(t *testing.T, n int, args ...string) (int, string, string) {
	t.Helper()
	p := c.start(t, n, args...)
	code := p.wait(t, cliTimeout)
	return code, p.stdout.String(), p.stderr.String()
}

// waitForFile waits up to timeout for path to exist.
func waitForFile(t *testing.T, path string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %v", path, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readLines returns the lines of the file at path.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// shLoop is a shell loop that runs for at most 30 s: a test's CMD that
// waits to be stopped ends by itself if the test goes wrong.
const shLoop = `i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done`

// keyspace is every node's keys and how many connections it has accepted:
// a command line that must change nothing and send nothing leaves it as it
// was.
func keyspace(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var out []string
	for _, n := range cluster.Nodes {
		keys, err := n.Direct().Keys(ctx, "*").Result()
		require.NoError(t, err)
		slices.Sort(keys)
		stats, err := n.Direct().Info(ctx, "stats").Result()
		require.NoError(t, err)
		conns := ""
		for _, line := range strings.Split(stats, "\n") {
			if strings.HasPrefix(line, "total_connections_received:") {
				conns = strings.TrimSpace(line)
			}
		}
		out = append(out, n.Name()+" "+conns+" keys="+strings.Join(keys, ","))
	}
	return out
}

// inspectJSON is relock inspect --json's output, and each lock of ls --json.
type inspectJSON struct {
	Name     string `json:"name"`
	Quorum   int    `json:"quorum"`
	Answered int    `json:"answered"`
	Held     bool   `json:"held"`
	Holder   *struct {
		Owner string `json:"owner"`
		Count int64  `json:"count"`
		TTLms int64  `json:"ttl_ms"`
		Nodes int    `json:"nodes"`
	} `json:"holder"`
	Readers      []quorumHoldJSON `json:"readers"`
	Capacity     int64            `json:"capacity"`
	PermitQuorum int              `json:"permit_quorum"`
	Permits      []quorumHoldJSON `json:"permits"`
	Waiting      []struct {
		Owner string    `json:"owner"`
		Since time.Time `json:"since"`
		Nodes int       `json:"nodes"`
	} `json:"waiting"`
	TieBreaker int `json:"tie_breaker"`
	Nodes      []struct {
		Node    int                   `json:"node"`
		Addr    string                `json:"addr"`
		Holders map[string]int64      `json:"holders"`
		TTLms   *int64                `json:"ttl_ms"`
		Fence   int64                 `json:"fence"`
		Readers map[string]leasedJSON `json:"readers"`
		Permits map[string]leasedJSON `json:"permits"`
		Queue   []struct {
			Owner string    `json:"owner"`
			Since time.Time `json:"since"`
			TTLms int64     `json:"ttl_ms"`
		} `json:"queue"`
		Queued int64  `json:"queued"`
		Error  string `json:"error"`
	} `json:"nodes"`
}

// quorumHoldJSON is a reader or a semaphore holder on a quorum, as relock
// inspect --json shows it.
type quorumHoldJSON struct {
	Owner string `json:"owner"`
	Count int64  `json:"count"`
	TTLms int64  `json:"ttl_ms"`
	Nodes int    `json:"nodes"`
}

// leasedJSON is a read hold or a semaphore holder's permits on one node.
type leasedJSON struct {
	Count int64 `json:"count"`
	TTLms int64 `json:"ttl_ms"`
}

// lsJSON is relock ls --json's output.
type lsJSON struct {
	Locks       []inspectJSON `json:"locks"`
	Truncated   bool          `json:"truncated"`
	Unreachable []struct {
		Node  int    `json:"node"`
		Error string `json:"error"`
	} `json:"unreachable"`
}

// decodeJSON decodes out into v, failing the test on bad JSON.
func decodeJSON(t *testing.T, out string, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal([]byte(out), v), "output: %s", out)
}

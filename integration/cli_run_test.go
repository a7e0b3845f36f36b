package integration_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testCLIRunNeverOverlaps: two relock run of one name started together run
// their commands one after the other: each command's start and end marks in
// a shared file are never interleaved.
func testCLIRunNeverOverlaps(t *testing.T, cli relockCLI, n int) {
	reset(t)
	marks := filepath.Join(t.TempDir(), "marks")
	job := `echo "start $1" >> "$2"; sleep 0.4; echo "end $1" >> "$2"`
	a := cli.start(t, n, "run", "report", "--", "sh", "-c", job, "sh", "A", marks)
	b := cli.start(t, n, "run", "report", "--", "sh", "-c", job, "sh", "B", marks)
	require.Equal(t, 0, a.wait(t, cliTimeout), "stderr: %s", a.stderr.String())
	require.Equal(t, 0, b.wait(t, cliTimeout), "stderr: %s", b.stderr.String())

	lines := readLines(t, marks)
	require.Len(t, lines, 4, "both commands ran: %q", lines)
	first, second := strings.TrimPrefix(lines[0], "start "), "A"
	if first == "A" {
		second = "B"
	}
	require.Equal(t, []string{"start " + first, "end " + first, "start " + second, "end " + second}, lines,
		"the second command starts after the first ended")
	requireFree(t, n, "report", 2*time.Second)
}

// testCLIRunExitCodes: relock run exits with CMD's exit code, 128+N when
// a signal killed CMD, 127 for a missing CMD, and releases the lock.
func testCLIRunExitCodes(t *testing.T, cli relockCLI, n int) {
	reset(t)
	for _, tc := range []struct {
		cmd  []string
		want int
	}{
		{[]string{"true"}, 0},
		{[]string{"sh", "-c", "exit 7"}, 7},
		{[]string{"sh", "-c", "exit 1"}, 1},
		{[]string{"sh", "-c", "exit 2"}, 2}, // not a usage error of relock's
		{[]string{"sh", "-c", "kill -KILL $$"}, 128 + int(syscall.SIGKILL)},
		{[]string{"relock-no-such-command"}, 127},
		{[]string{"/dev/null"}, 126},
	} {
		code, _, stderr := cli.run(t, n, append([]string{"run", "codes", "--"}, tc.cmd...)...)
		require.Equal(t, tc.want, code, "relock run %q; stderr: %s", tc.cmd, stderr)
		if tc.want != 126 && tc.want != 127 {
			require.Empty(t, stderr, "relock run %q: CMD's status is passed on silently", tc.cmd)
		}
		requireFree(t, n, "codes", 2*time.Second)
	}

	// stdin, stdout and stderr are CMD's own (pipes here).
	p := cli.startWithInput(t, n, strings.NewReader("hello\n"), "run", "codes", "--", "sh", "-c", `read line; echo "out:$line"; echo "err:$line" >&2`)
	require.Equal(t, 0, p.wait(t, cliTimeout))
	require.Equal(t, "out:hello\n", p.stdout.String())
	require.Equal(t, "err:hello\n", p.stderr.String())
}

// testCLIRunWhenHeld: with the lock held elsewhere, --no-wait exits 1 at
// once and --wait exits 1 when it runs out, without running CMD; a --wait
// that outlasts the holder runs CMD.
func testCLIRunWhenHeld(t *testing.T, cli relockCLI, n int) {
	reset(t)
	_, m, ctx := holdLock(t, n, "held")
	ran := filepath.Join(t.TempDir(), "ran")

	code, _, stderr := cli.run(t, n, "run", "--no-wait", "held", "--", "touch", ran)
	require.Equal(t, 1, code, "--no-wait; stderr: %s", stderr)
	require.Contains(t, stderr, "held by another owner")

	start := time.Now()
	code, _, stderr = cli.run(t, n, "run", "--wait", "700ms", "held", "--", "touch", ran)
	require.Equal(t, 1, code, "--wait; stderr: %s", stderr)
	require.GreaterOrEqual(t, time.Since(start), 700*time.Millisecond, "--wait waited")
	require.NoFileExists(t, ran, "CMD never ran while the lock was held")

	p := cli.start(t, n, "run", "-w", "20s", "held", "--", "touch", ran)
	time.Sleep(300 * time.Millisecond)
	require.NoFileExists(t, ran)
	require.NoError(t, m.Unlock(ctx))
	require.Equal(t, 0, p.wait(t, cliTimeout), "stderr: %s", p.stderr.String())
	require.FileExists(t, ran, "CMD ran once the holder unlocked")
	requireFree(t, n, "held", 2*time.Second)
}

// testCLIRunSignals: SIGTERM, SIGHUP and SIGINT sent to relock reach CMD;
// relock exits with CMD's code and the lock is free afterwards.
func testCLIRunSignals(t *testing.T, cli relockCLI, n int) {
	reset(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT} {
		dir := t.TempDir()
		got, ready := filepath.Join(dir, "got"), filepath.Join(dir, "ready")
		name := sig.String()
		job := fmt.Sprintf(`trap 'echo %d > %s; exit 9' %d; touch %s; %s`, int(sig), got, int(sig), ready, shLoop)
		p := cli.start(t, n, "run", "signals", "--", "sh", "-c", job)
		waitForFile(t, ready, 10*time.Second)
		p.signal(t, sig)
		require.Equal(t, 9, p.wait(t, 10*time.Second), "%s: stderr: %s", name, p.stderr.String())
		require.Equal(t, []string{fmt.Sprint(int(sig))}, readLines(t, got), "%s reached CMD", name)
		requireFree(t, n, "signals", 2*time.Second)
	}

	// A signal while relock waits for the lock ends the wait: 128+N, CMD
	// never runs, nothing is left on the nodes.
	_, m, ctx := holdLock(t, n, "signals")
	ran := filepath.Join(t.TempDir(), "ran")
	p := cli.start(t, n, "run", "signals", "--", "touch", ran)
	time.Sleep(500 * time.Millisecond)
	p.signal(t, syscall.SIGTERM)
	require.Equal(t, 128+int(syscall.SIGTERM), p.wait(t, 10*time.Second), "stderr: %s", p.stderr.String())
	require.NoFileExists(t, ran)
	require.NoError(t, m.Unlock(ctx))
	requireFree(t, n, "signals", 2*time.Second)
}

// testCLIRunLockLost: a lock force-unlocked by another relock while CMD
// runs stops CMD (SIGTERM, or SIGKILL after --kill-after when CMD ignores
// SIGTERM) and relock exits 3 with a message.
func testCLIRunLockLost(t *testing.T, cli relockCLI, n int) {
	reset(t)
	for _, tc := range []struct {
		name, trap string
		killed     bool
	}{
		{"terminated", `trap 'echo term >> "$0"; exit 0' TERM`, false},
		{"killed", `trap '' TERM`, true},
	} {
		dir := t.TempDir()
		got, ready := filepath.Join(dir, "got"), filepath.Join(dir, "ready")
		job := fmt.Sprintf(`%s; touch %s; %s`, tc.trap, ready, shLoop)
		// A 3 s lease is renewed every second: the loss shows at the next renewal.
		p := cli.start(t, n, "run", "--lease", "3s", "--kill-after", "1s", "lost", "--", "sh", "-c", job, got)
		waitForFile(t, ready, 10*time.Second)

		unlocking := time.Now()
		code, _, stderr := cli.run(t, n, "unlock", "--force", "lost")
		require.Equal(t, 0, code, "unlock --force: %s", stderr)
		require.Equal(t, 3, p.wait(t, 15*time.Second), "%s: stderr: %s", tc.name, p.stderr.String())
		require.Contains(t, p.stderr.String(), `lock "lost" lost while sh ran`)
		if tc.killed {
			require.Regexp(t, `sending SIGTERM, SIGKILL in 1s\n.*sh still running 1s after SIGTERM: sending SIGKILL\n`, p.stderr.String())
			require.GreaterOrEqual(t, time.Since(unlocking), time.Second, "SIGKILL came --kill-after after SIGTERM")
			require.NoFileExists(t, got)
		} else {
			require.Equal(t, []string{"term"}, readLines(t, got), "CMD got SIGTERM")
		}
		requireFree(t, n, "lost", 2*time.Second)
	}
}

//go:build linux

package integration_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// terminal is a pseudo-terminal a relock process runs in, as the controlling
// terminal of its own session: as if a person had typed the command at a
// shell prompt.
type terminal struct {
	master *os.File
	mu     sync.Mutex
	out    bytes.Buffer // everything written to the terminal, echoed input included
	read   chan struct{}
}

// ioctl runs one ioctl request on fd.
func ioctl(fd uintptr, req uint, arg unsafe.Pointer) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, uintptr(req), uintptr(arg)); errno != 0 {
		return errno
	}
	return nil
}

// startInTerminal starts relock with args against the first n nodes in a
// new pseudo-terminal, which becomes the controlling terminal of relock's
// new session (relock is then in its foreground process group).
func (c relockCLI) startInTerminal(t *testing.T, n int, args ...string) (*proc, *terminal) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	var unlock int32
	require.NoError(t, ioctl(master.Fd(), syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)))
	var num uint32
	require.NoError(t, ioctl(master.Fd(), syscall.TIOCGPTN, unsafe.Pointer(&num)))
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", num), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)

	p := &proc{cmd: c.command(n, args...)}
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = slave, slave, slave
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	p.launch(t)
	require.NoError(t, slave.Close()) // relock has its own copies
	tm := &terminal{master: master, read: make(chan struct{})}
	go func() {
		defer close(tm.read)
		buf := make([]byte, 4096)
		for {
			k, err := master.Read(buf)
			tm.mu.Lock()
			tm.out.Write(buf[:k])
			tm.mu.Unlock()
			if err != nil { // EIO once every process has closed the terminal
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = master.Close()
		<-tm.read
	})
	return p, tm
}

// output returns what was written to the terminal so far.
func (tm *terminal) output() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.String()
}

// waitFor waits up to timeout for s to be written to the terminal.
func (tm *terminal) waitFor(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(tm.output(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("%q not written to the terminal within %v; so far: %q", s, timeout, tm.output())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// typeIn types s at the terminal.
func (tm *terminal) typeIn(t *testing.T, s string) {
	t.Helper()
	_, err := tm.master.WriteString(s)
	require.NoError(t, err)
}

// The tests in this file need Linux: its pseudo-terminal ioctls and /proc.

// testCLITerminal: at a terminal, unlock --force shows the lock and asks
// (only "y" frees it), run's CMD reads the terminal, and Ctrl-C reaches CMD
// once, from the terminal.
func testCLITerminal(t *testing.T, cli relockCLI) {
	reset(t)
	c, m, ctx := holdLock(t, 1, "asked")

	p, tm := cli.startInTerminal(t, 1, "unlock", "--force", "asked")
	tm.waitFor(t, "[y/N] ", 10*time.Second)
	require.Contains(t, tm.output(), m.Owner(), "the question shows the holder")
	tm.typeIn(t, "n\n")
	require.Equal(t, 1, p.wait(t, 10*time.Second), tm.output())
	held, err := c.IsLocked(ctx, "asked")
	require.NoError(t, err)
	require.True(t, held, "answered no: the lock stays")

	p, tm = cli.startInTerminal(t, 1, "unlock", "--force", "asked")
	tm.waitFor(t, "[y/N] ", 10*time.Second)
	tm.typeIn(t, "y\n")
	require.Equal(t, 0, p.wait(t, 10*time.Second), tm.output())
	require.Contains(t, tm.output(), `lock "asked" released`)
	requireFree(t, 1, "asked", time.Second)

	p, tm = cli.startInTerminal(t, 1, "run", "tty", "--", "sh", "-c", `read line; echo "got:$line"`)
	tm.typeIn(t, "hello\n")
	require.Equal(t, 0, p.wait(t, 10*time.Second), tm.output())
	require.Contains(t, tm.output(), "got:hello", "CMD read the terminal")

	// CMD shares relock's process group at a terminal (elsewhere it has
	// its own: see the other run tests' signals to the whole job).
	p, tm = cli.startInTerminal(t, 1, "run", "tty", "--", "sh", "-c", `read -r _ _ _ _ g _ < /proc/$$/stat; read -r _ _ _ _ pg _ < /proc/$PPID/stat; echo "groups:$g:$pg"`)
	require.Equal(t, 0, p.wait(t, 10*time.Second), tm.output())
	require.Regexp(t, `groups:(\d+):(\d+)`, tm.output())
	groups := regexp.MustCompile(`groups:(\d+):(\d+)`).FindStringSubmatch(tm.output())
	require.Equal(t, groups[2], groups[1], "CMD's process group is relock's")

	// CMD counts the SIGINTs it gets, in a loop of shell builtins that runs
	// its trap at once, and exits with the count: Ctrl-C reaches it from
	// the terminal, and relock, which gets it too, does not send a second.
	ready := filepath.Join(t.TempDir(), "ready")
	job := fmt.Sprintf(`n=0; trap 'n=$((n+1))' INT; touch %s; i=0; while [ $i -lt 1500000 ]; do i=$((i+1)); done; exit $n`, ready)
	p, tm = cli.startInTerminal(t, 1, "run", "tty", "--", "sh", "-c", job)
	waitForFile(t, ready, 10*time.Second)
	tm.typeIn(t, "\x03")
	require.Equal(t, 1, p.wait(t, cliTimeout), "SIGINTs CMD got; terminal: %q", tm.output())
	requireFree(t, 1, "tty", time.Second)
}

// testCLIJobGroup: away from a terminal, CMD leads a process group of its
// own, and a lost lock stops the whole group: a child of CMD that ignores
// SIGTERM and outlives CMD is killed too, --kill-after after the SIGTERM.
func testCLIJobGroup(t *testing.T, cli relockCLI) {
	reset(t)
	dir := t.TempDir()
	ready, child := filepath.Join(dir, "ready"), filepath.Join(dir, "child")
	job := fmt.Sprintf(`read -r _ _ _ _ g _ < /proc/$$/stat; [ "$g" = "$$" ] || exit 10
(trap '' TERM; exec sleep 30) & echo $! > %s; touch %s; wait`, child, ready)
	p := cli.start(t, 1, "run", "--lease", "3s", "--kill-after", "1s", "group", "--", "sh", "-c", job)
	waitForFile(t, ready, 10*time.Second)
	pid, err := strconv.Atoi(readLines(t, child)[0])
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // should the test fail
	require.True(t, alive(pid), "CMD's child runs")

	unlocking := time.Now()
	code, _, stderr := cli.run(t, 1, "unlock", "--force", "group")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, 3, p.wait(t, 15*time.Second), "stderr: %s", p.stderr.String())
	require.GreaterOrEqual(t, time.Since(unlocking), time.Second, "relock waited --kill-after for CMD's group")
	deadline := time.Now().Add(2 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.False(t, alive(pid), "CMD's child, which ignored SIGTERM, was killed with the group")
}

// alive reports whether the process pid runs (a zombie does not).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(after, "Z") && !strings.HasPrefix(after, "X")
}

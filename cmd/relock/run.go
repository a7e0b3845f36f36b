package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/relock-go/relock/lock"
)

var runCommand = &command{
	name:         "run",
	args:         "NAME [--] CMD [ARGS...]",
	summary:      "run CMD while holding the lock NAME",
	minArgs:      2,
	maxArgs:      -1,
	verbatimFrom: 1,
	setup:        setupRun,
	ownSignals:   true,
	examples:     runExamples,
	help: `
Waits for the lock NAME, runs CMD while holding it, and releases it when CMD
exits; exits with CMD's exit status. A distributed flock(1): every relock run
of one NAME against the same nodes runs its CMD alone, whichever machine it
runs on.

While CMD runs, relock renews the lock every third of --lease. If relock
dies (kill -9, a crash), CMD is killed too (on Linux) and the lock ends
within --lease. If the lock is lost while CMD runs (force-unlocked, or the
nodes could not be reached to renew it), CMD gets SIGTERM, then SIGKILL
after --kill-after, and relock exits with status 3.

SIGINT, SIGTERM and SIGHUP sent to relock are passed to CMD, which runs in
a process group of its own, so signals reach every process of the job. When
relock runs in the foreground of a terminal, CMD stays in relock's process
group instead: it can read the terminal, and the terminal's keys (Ctrl-C,
Ctrl-Z) reach it directly. stdin, stdout and stderr are CMD's own.
Every argument from CMD on is CMD's: put relock's flags before CMD.`,
}

// runExamples end run's help.
const runExamples = `
  # from cron on every machine: the report runs once at a time
  0 2 * * *  relock run nightly-report -- ./report.sh

  # skip this run if another one still holds the lock (exit status 1)
  relock run --no-wait backup -- ./backup.sh

  # wait at most 5 minutes; give the job a fencing token in $RELOCK_TOKEN
  relock run --wait 5m --fencing migrate-42 -- ./migrate.sh`

// runFlags are run's own flags.
type runFlags struct {
	wait, lease, killAfter time.Duration
	noWait, fencing        bool
}

func setupRun(fs *flag.FlagSet) action {
	f := new(runFlags)
	fs.DurationVar(&f.wait, "wait", 0, "give up after `DURATION` if the lock is still held, with exit status 1 (flock -w); 0 is --no-wait; default: wait as long as it takes")
	alias(fs, "w", "wait")
	fs.BoolVar(&f.noWait, "no-wait", false, "exit 1 at once if the lock is held (flock -n)")
	alias(fs, "n", "no-wait")
	fs.DurationVar(&f.lease, "lease", lock.DefaultLease, "hold the lock with a lease of `DURATION`, renewed every third of it while CMD runs; the lock of a relock that died ends after it")
	fs.BoolVar(&f.fencing, "fencing", false, "draw a fencing token for this hold and pass it to CMD as RELOCK_TOKEN")
	fs.DurationVar(&f.killAfter, "kill-after", 10*time.Second, "when the lock is lost, send CMD SIGKILL `DURATION` after SIGTERM (0: SIGKILL at once)")
	return func(ctx context.Context, e *env, g *globals, args []string) error {
		return f.run(ctx, e, g, flagSet(fs, "wait"), args)
	}
}

// run runs CMD (args[1:]) under the lock args[0].
func (f *runFlags) run(ctx context.Context, e *env, g *globals, waitSet bool, args []string) error {
	switch {
	case f.wait < 0:
		return usagef("--wait %v is negative", f.wait)
	case waitSet && f.noWait:
		return usagef("--wait and --no-wait exclude each other")
	case f.lease <= 0:
		return usagef("--lease %v is not positive", f.lease)
	case f.killAfter < 0:
		return usagef("--kill-after %v is negative", f.killAfter)
	case f.lease < 10*g.nodeTimeout:
		// The library's rule, in the flags' names (its own message names
		// its Options' fields).
		return usagef("--lease %v is below 10 × --node-timeout (%v)", f.lease, g.nodeTimeout)
	}
	name, argv := args[0], args[1:]
	// Not found, or not a program: say so before taking the lock.
	// exec.Command looks up a bare name in PATH; a name with a slash
	// ("./report.sh") it leaves to Start, after the lock is taken, so
	// LookPath checks that one here (it exists, is no directory, and may
	// be executed).
	cmd := exec.Command(argv[0], argv[1:]...)
	if cmd.Err == nil && strings.Contains(argv[0], "/") {
		_, cmd.Err = exec.LookPath(argv[0])
	}
	if cmd.Err != nil {
		return startError(argv[0], cmd.Err)
	}
	c, closeAll, err := g.connect(lock.Options{Lease: f.lease})
	if err != nil {
		return err
	}
	defer closeAll()
	var opts []lock.MutexOption
	if f.fencing {
		opts = append(opts, lock.WithFencing(lock.HybridTokens))
	}
	m := c.NewMutex(name, opts...)

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := f.acquire(ctx, m, waitSet, sigs); err != nil {
		return err
	}
	lost := m.Lost()

	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if f.fencing {
		cmd.Env = append(os.Environ(), "RELOCK_TOKEN="+strconv.FormatInt(m.Token(), 10))
	}
	shared := inForeground(os.Stdin)
	cmd.SysProcAttr = procAttr(shared)
	if err := cmd.Start(); err != nil {
		return errors.Join(startError(argv[0], err), release(m))
	}
	j := &job{cmd: cmd, group: !shared, killAfter: f.killAfter, stderr: e.stderr, lock: name}
	wasLost := j.supervise(sigs, lost)
	status := exitStatus(cmd.ProcessState)
	err = release(m)
	switch {
	case wasLost:
		return exitWith(exitLost, "%s stopped: lock %q was lost while it ran (its exit status: %d)", argv[0], name, status)
	case errors.Is(err, lock.ErrLost):
		return exitWith(exitLost, "lock %q was lost while %s ran, found when releasing it (%s's exit status: %d)", name, argv[0], argv[0], status)
	case err != nil:
		fmt.Fprintf(e.stderr, "relock run: warning: lock %q not released on a quorum (it ends within %v): %v\n", name, f.lease, err)
	}
	return exitWith(status, "")
}

// acquire takes the lock as the flags say. SIGINT, SIGTERM or SIGHUP while
// it waits ends the wait: relock exits with 128+N and holds nothing.
func (f *runFlags) acquire(ctx context.Context, m *lock.Mutex, waitSet bool, sigs <-chan os.Signal) error {
	ctx, stop := cancelOnSignal(ctx, sigs)
	err := f.take(ctx, m, waitSet)
	got := stop()
	if got == nil {
		return err
	}
	if err == nil {
		err = release(m) // won just as the signal came
	}
	return errors.Join(exitWith(signalStatus(got), "%v while waiting for lock %q", got, m.Name()), err)
}

// take makes the attempt the flags ask for: one (--no-wait, --wait 0), or
// waiting for up to --wait, or for as long as ctx lasts.
func (f *runFlags) take(ctx context.Context, m *lock.Mutex, waitSet bool) error {
	if f.noWait || waitSet && f.wait == 0 {
		ok, err := m.TryLock(ctx)
		if err == nil && !ok {
			return exitWith(exitNotAcquired, "lock %q is held by another owner", m.Name())
		}
		return err
	}
	if waitSet {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.wait)
		defer cancel()
	}
	err := m.Lock(ctx)
	var qe *lock.QuorumError
	switch {
	case err == nil || !waitSet || !errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.As(err, &qe) && len(qe.Nodes) > 0:
		return fmt.Errorf("lock %q not acquired within %v: %w", m.Name(), f.wait, qe)
	}
	return exitWith(exitNotAcquired, "lock %q still held by another owner after %v", m.Name(), f.wait)
}

// releaseTimeout bounds the release after CMD (each node call is bounded
// by the node timeout already).
const releaseTimeout = 10 * time.Second

// release gives the lock back, whatever happened to relock's context.
func release(m *lock.Mutex) error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	return m.Unlock(ctx)
}

// startError is the error for a CMD that could not be started: exit status
// 127 when it does not exist, 126 otherwise, as the shells report them.
func startError(name string, err error) error {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return exitWith(exitNotFound, "%s: command not found: %v", name, err)
	}
	return exitWith(exitCannotRun, "%s: cannot run: %v", name, err)
}

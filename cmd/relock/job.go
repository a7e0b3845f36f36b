package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// job is CMD, started by run, running under the lock.
type job struct {
	cmd       *exec.Cmd
	group     bool // CMD leads a process group of its own
	killAfter time.Duration
	stderr    io.Writer
	lock      string // the lock's name, for messages
}

// groupPoll is how often supervise checks whether the rest of a stopped
// job's process group has gone.
const groupPoll = 20 * time.Millisecond

// supervise waits until CMD exits, passing the signals that come on sigs to
// it. If lost closes first, it stops the job: SIGTERM, then SIGKILL after
// killAfter; it then also waits, until that SIGKILL, for the rest of the
// job's process group, and kills what is left of it. It reports whether the
// lock was lost.
func (j *job) supervise(sigs <-chan os.Signal, lost <-chan struct{}) bool {
	exited := make(chan struct{})
	go func() {
		_ = j.cmd.Wait() // its status is in j.cmd.ProcessState
		close(exited)
	}()
	var kill <-chan time.Time // the SIGKILL's time, once the lock is lost
	wasLost := false
	for {
		select {
		case <-exited:
			if wasLost {
				j.killGroup(kill)
			}
			return wasLost
		case sig := <-sigs:
			if !j.fromTerminal(sig) {
				_ = signalJob(j.cmd.Process, sig, j.group)
			}
		case <-lost:
			lost, wasLost = nil, true
			if j.killAfter == 0 {
				fmt.Fprintf(j.stderr, "relock run: lock %q lost while %s ran: sending SIGKILL\n", j.lock, j.cmd.Args[0])
				_ = signalJob(j.cmd.Process, os.Kill, j.group)
				continue
			}
			fmt.Fprintf(j.stderr, "relock run: lock %q lost while %s ran: sending SIGTERM, SIGKILL in %v\n", j.lock, j.cmd.Args[0], j.killAfter)
			_ = signalJob(j.cmd.Process, syscall.SIGTERM, j.group)
			kill = time.After(j.killAfter)
		case <-kill:
			kill = nil
			fmt.Fprintf(j.stderr, "relock run: %s still running %v after SIGTERM: sending SIGKILL\n", j.cmd.Args[0], j.killAfter)
			_ = signalJob(j.cmd.Process, os.Kill, j.group)
		}
	}
}

// killGroup waits, after CMD has exited, for the rest of its process group
// to exit until kill fires, and then kills what is left (at once when kill
// is nil: the SIGKILL was sent already). A job that lost its lock must stop,
// its children too.
func (j *job) killGroup(kill <-chan time.Time) {
	if !j.group {
		return
	}
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	for kill != nil && groupAlive(j.cmd.Process) {
		select {
		case <-kill:
			kill = nil
		case <-tick.C:
		}
	}
	if groupAlive(j.cmd.Process) {
		_ = signalJob(j.cmd.Process, os.Kill, true)
	}
}

// fromTerminal reports whether sig most likely came from the terminal's
// keys and so reached CMD already: a SIGINT while CMD shares relock's
// process group in the terminal's foreground.
func (j *job) fromTerminal(sig os.Signal) bool {
	return !j.group && sig == os.Interrupt && inForeground(os.Stdin)
}

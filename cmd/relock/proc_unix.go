//go:build unix

package main

import (
	"os"
	"syscall"
)

// signalJob sends sig to CMD's process group when CMD leads one (every
// process of the job gets it), or else to CMD alone.
func signalJob(p *os.Process, sig os.Signal, group bool) error {
	if s, ok := sig.(syscall.Signal); ok && group {
		return syscall.Kill(-p.Pid, s)
	}
	return p.Signal(sig)
}

// groupAlive reports whether a process of the group that CMD led is still
// running after CMD itself has exited.
func groupAlive(p *os.Process) bool { return syscall.Kill(-p.Pid, 0) == nil }

// exitStatus is CMD's exit status as a shell reports it: its exit code, or
// 128+N when signal N killed it.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
	}
	return ps.ExitCode()
}

// signalStatus is the exit status for relock itself ending on sig.
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return exitSignalBase + int(s)
	}
	return exitSignalBase
}

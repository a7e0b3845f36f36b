//go:build !unix

package main

import (
	"os"
	"syscall"
)

// procAttr: no process groups here; CMD is started as is.
func procAttr(bool) *syscall.SysProcAttr { return nil }

// signalJob sends sig to CMD (SIGKILL is the only signal every system has).
func signalJob(p *os.Process, sig os.Signal, _ bool) error { return p.Signal(sig) }

// groupAlive: no process groups here.
func groupAlive(*os.Process) bool { return false }

// exitStatus is CMD's exit code.
func exitStatus(ps *os.ProcessState) int { return ps.ExitCode() }

// signalStatus is the exit status for relock itself ending on sig.
func signalStatus(os.Signal) int { return exitSignalBase }

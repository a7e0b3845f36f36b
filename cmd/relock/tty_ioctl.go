//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"os"
	"syscall"
	"unsafe"
)

// foregroundGroup returns the foreground process group of the terminal f,
// or false when f is not relock's controlling terminal.
func foregroundGroup(f *os.File) (int, bool) {
	var pgid int32
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), uintptr(syscall.TIOCGPGRP), uintptr(unsafe.Pointer(&pgid)))
	return int(pgid), errno == 0
}

// isTerminal reports whether f is relock's terminal (its controlling
// terminal: a person may be typing at it).
func isTerminal(f *os.File) bool {
	_, ok := foregroundGroup(f)
	return ok
}

// inForeground reports whether relock runs in the foreground process group
// of the terminal f: the terminal's keys (Ctrl-C) signal relock's group.
func inForeground(f *os.File) bool {
	pgid, ok := foregroundGroup(f)
	return ok && pgid == syscall.Getpgrp()
}

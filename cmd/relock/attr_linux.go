package main

import "syscall"

// procAttr is how run starts CMD: in a process group of its own unless
// shareGroup, and killed by the kernel if relock dies (kill -9, a crash),
// since nothing would renew the lock from then on.
func procAttr(shareGroup bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: !shareGroup, Pdeathsig: syscall.SIGKILL}
}

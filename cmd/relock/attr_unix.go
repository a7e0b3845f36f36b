//go:build unix && !linux

package main

import "syscall"

// procAttr is how run starts CMD: in a process group of its own unless
// shareGroup. (Only Linux can have CMD killed when relock dies.)
func procAttr(shareGroup bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: !shareGroup}
}

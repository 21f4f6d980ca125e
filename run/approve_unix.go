//go:build unix

package run

import "syscall"

// newProcessGroup puts a started process in a process group of its own.
func newProcessGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killProcessGroup kills every process of group pgid.
func killProcessGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

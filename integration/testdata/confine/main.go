//go:build linux

// Command confine runs a command as a container's default seccomp profile
// and capability set would: it refuses pidfd_getfd (Docker allows it only
// with CAP_SYS_PTRACE), every new namespace (unshare, setns, and clone
// with a CLONE_NEW* flag: they need CAP_SYS_ADMIN there), answers clone3
// ENOSYS (as Docker does, so that libc falls back to clone, whose flags a
// filter can read), and drops CAP_SYS_ADMIN from the bounding set. The
// filter is installed without a listener, as a container runtime's is, so
// the command may install its own with one.
//
//	confine CMD [ARG...]
//
// scripts/matrix runs a cell of the integration tests under it: the
// container row of the support matrix, on the real kernel rather than
// simulated (WRUN_SIMULATE). It must start as root (CAP_SYS_ADMIN
// installs the filter without no_new_privs, as a runtime does).
package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: confine CMD [ARG...]")
		os.Exit(2)
	}
	path, err := exec.LookPath(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "confine:", err)
		os.Exit(2)
	}
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_ADMIN, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "confine: dropping CAP_SYS_ADMIN from the bounding set:", err)
		os.Exit(2)
	}
	if err := install(); err != nil {
		fmt.Fprintln(os.Stderr, "confine: installing the filter:", err)
		os.Exit(2)
	}
	err = syscall.Exec(path, os.Args[1:], os.Environ())
	fmt.Fprintln(os.Stderr, "confine:", err)
	os.Exit(2)
}

// install sets the filter on every thread (TSYNC: the Go runtime's
// threads exist already, and the exec may come from any of them).
func install() error {
	const newNS = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
		unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	enosys := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	ret := func(v uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: v} }
	// jeq jumps over n instructions to the "return eperm/enosys" pair
	// at the end when the number matches.
	prog := []unix.SockFilter{
		ld(4), // arch
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: auditArch, Jt: 1},
		ret(unix.SECCOMP_RET_KILL_PROCESS),
		ld(0), // nr
	}
	// Each refused number: if equal, return its errno.
	for _, r := range []struct {
		nr  uint32
		ret uint32
	}{{unix.SYS_PIDFD_GETFD, eperm}, {unix.SYS_UNSHARE, eperm}, {unix.SYS_SETNS, eperm}, {unix.SYS_CLONE3, enosys}} {
		prog = append(prog,
			unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: r.nr, Jf: 1},
			ret(r.ret))
	}
	// clone: its flags are the first argument (low word).
	prog = append(prog,
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_CLONE, Jf: 3},
		ld(16),
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: newNS, Jf: 1},
		ret(eperm),
		ret(allow))
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return errno
	}
	return nil
}

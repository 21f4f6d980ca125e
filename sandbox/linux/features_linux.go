//go:build linux

package linux

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Probe asks the kernel what it offers, by calling each feature rather
// than by reading the kernel's version: a backported feature counts, a
// feature an outer seccomp filter refuses does not. It has no lasting
// side effect. Whether the seccomp listener is free (Nested) is known for
// certain only when a launch tries to take it; Probe reads what an
// enclosing wrun says (WRUN_SANDBOX) and whether any filter is loaded
// already, and a launch that finds the listener taken plans again.
func Probe() Features {
	var f Features
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		f.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == 0:
		f.LandlockABI = int(abi)
		// A kernel that predates the query refuses the flag (EINVAL):
		// no erratum is known to be fixed there.
		errata, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_ERRATA)
		if errno == 0 {
			f.LandlockErrata = uint64(errata)
		}
	case errno == unix.ENOSYS:
		f.LandlockError = "the kernel was built without Landlock (CONFIG_SECURITY_LANDLOCK)"
	case errno == unix.EOPNOTSUPP:
		f.LandlockError = "Landlock is built in but not enabled (add landlock to the lsm= boot parameter)"
	default:
		f.LandlockError = errno.Error()
	}
	// seccomp(SECCOMP_GET_ACTION_AVAIL) tells which return actions exist.
	if actionAvail(unix.SECCOMP_RET_ERRNO) {
		f.Seccomp = true
		f.UserNotif = actionAvail(unix.SECCOMP_RET_USER_NOTIF)
	}
	if f.UserNotif {
		var busy bool
		f.AddFD, f.AddFDSend, f.WaitKillable, busy = probeNotifFeatures()
		if busy {
			f.Nested, f.Outer = true, OuterOther
		}
	}
	f.PidfdThread = probePidfdThread()
	f.PidfdGetfd = probePidfdGetfd()
	f.Root = os.Geteuid() == 0
	f.Yama = yamaScope()
	f.ProcMem = f.Root && hasCap(unix.CAP_SYS_PTRACE) || f.Yama < 2
	if f.Nested && os.Getenv("WRUN_SANDBOX") != "" {
		f.Outer = OuterWrun
	}
	return f
}

func actionAvail(action uint32) bool {
	const seccompGetActionAvail = 2
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, seccompGetActionAvail, 0, uintptr(unsafe.Pointer(&action)))
	return errno == 0
}

// probeNotifFeatures finds which of the user-notification extensions
// the kernel has: ADDFD (5.9), its SEND flag (5.14) and
// WAIT_KILLABLE_RECV (5.19), and whether a filter further up holds the
// listener already (the kernel allows one per filter chain: EBUSY). A
// filter flag seccomp does not know is EINVAL before it looks at the
// program (NULL here, so a known flag fails with EFAULT instead); every
// kernel that knows WAIT_KILLABLE_RECV has the other two. The rest is
// asked of a real listener, on a throwaway thread, only where it is in
// doubt: on an older kernel, or where a filter is loaded already (a
// container's, or an enclosing wrun's).
func probeNotifFeatures() (addfd, addfdSend, waitKillable, busy bool) {
	const seccompSetModeFilter = 1
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, seccompSetModeFilter,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|seccompFilterFlagWaitKillableRecv, 0)
	waitKillable = errno == unix.EFAULT
	if waitKillable && !filtered() {
		return true, true, true, false
	}
	addfd, addfdSend, busy = probeListener(waitKillable)
	return addfd, addfdSend, waitKillable, busy
}

// filtered reports whether this process runs under a seccomp filter.
func filtered() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return true
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Seccomp:"); ok {
			return strings.TrimSpace(v) != "0"
		}
	}
	return true
}

// seccompNotifAddfd is struct seccomp_notif_addfd.
type seccompNotifAddfd struct {
	ID         uint64
	Flags      uint32
	SrcFD      uint32
	NewFD      uint32
	NewFDFlags uint32
}

// Notification ioctls and flags not in x/sys.
const (
	ioctlNotifAddfd   = 0x40182103 // SECCOMP_IOCTL_NOTIF_ADDFD
	addfdFlagSetFD    = 1 << 0     // SECCOMP_ADDFD_FLAG_SETFD
	addfdFlagSend     = 1 << 1     // SECCOMP_ADDFD_FLAG_SEND
	notifFlagContinue = 1 << 0     // SECCOMP_USER_NOTIF_FLAG_CONTINUE
)

// probeListener loads a filter that sends nothing to its listener on a
// thread that is then discarded, and asks the listener for ADDFD with
// and without SEND on a notification that does not exist: ENOENT means
// the kernel knows the request.
func probeListener(waitKillable bool) (addfd, send, busy bool) {
	type answer struct{ addfd, send, busy bool }
	ch := make(chan answer, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the filtered thread ends with this goroutine
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			ch <- answer{}
			return
		}
		prog := []unix.SockFilter{{Code: 0x06, K: unix.SECCOMP_RET_ALLOW}} // ret ALLOW
		fprog := unix.SockFprog{Len: 1, Filter: &prog[0]}
		flags := uintptr(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
		if waitKillable {
			flags |= seccompFilterFlagWaitKillableRecv
		}
		const seccompSetModeFilter = 1
		fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, seccompSetModeFilter, flags, uintptr(unsafe.Pointer(&fprog)))
		runtime.KeepAlive(prog)
		if errno == unix.EBUSY {
			ch <- answer{busy: true}
			return
		}
		if errno != 0 {
			ch <- answer{}
			return
		}
		defer unix.Close(int(fd))
		try := func(fl uint32) bool {
			a := seccompNotifAddfd{ID: ^uint64(0), Flags: fl}
			return ioctlPtr(int(fd), ioctlNotifAddfd, unsafe.Pointer(&a)) == unix.ENOENT
		}
		ch <- answer{addfd: try(0), send: try(addfdFlagSend)}
	}()
	a := <-ch
	return a.addfd, a.send, a.busy
}

// pidfdThread is PIDFD_THREAD (O_EXCL).
const pidfdThread = unix.O_EXCL

// probePidfdThread opens a pidfd for a thread of this process that is not
// its leader: a kernel without PIDFD_THREAD refuses the flag (EINVAL).
func probePidfdThread() bool {
	ch := make(chan bool, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid := unix.Gettid()
		if tid == unix.Getpid() {
			ch <- false
			return
		}
		fd, err := unix.PidfdOpen(tid, pidfdThread)
		if err == nil {
			unix.Close(fd)
		}
		ch <- err == nil
	}()
	return <-ch
}

// probePidfdGetfd takes one of this process's own descriptors with
// pidfd_getfd: an outer filter that refuses the call says EPERM (or
// ENOSYS), a kernel without it ENOSYS.
func probePidfdGetfd() bool {
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return false
	}
	defer unix.Close(pidfd)
	fd, err := unix.PidfdGetfd(pidfd, 0, 0)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// hasCap reports whether this thread holds capability c in its effective
// set.
func hasCap(c uint) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(c%32)) != 0
}

// yamaScope is Yama's kernel.yama.ptrace_scope, 0 without Yama. At 1 a
// process may trace its descendants, which every process of the sandbox
// is (wrun is their subreaper); at 2 only CAP_SYS_PTRACE may.
func yamaScope() int {
	b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope")
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		return 3
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 3
	}
	return n
}

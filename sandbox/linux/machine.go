package linux

// What a machine offers the sandbox, as plain values: the Landlock ABI and
// errata, and the seccomp and pidfd features the mediation needs. Probe
// (features_linux.go) fills them in by calling the kernel; Simulate takes
// features away, so that every row of the support matrix can be run on
// one kernel. This file makes no system call and has no build tag.

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Features is what this kernel and process offer the sandbox.
type Features struct {
	Kernel      string `json:"kernel"`
	LandlockABI int    `json:"landlock_abi"`
	// LandlockErrata is the mask of Landlock errata the kernel reports
	// fixed (bit N-1 for erratum N; 0 on a kernel that predates the
	// query). See landlockErrata.
	LandlockErrata uint64 `json:"landlock_errata"`
	LandlockError  string `json:"landlock_error,omitempty"`
	// Seccomp: seccomp filter mode (CONFIG_SECCOMP_FILTER).
	Seccomp bool `json:"seccomp"`
	// UserNotif: SECCOMP_RET_USER_NOTIF (Linux 5.0): the kernel can send
	// a call to wrun before it runs, which the mediation is built on.
	UserNotif bool `json:"seccomp_user_notification"`
	// AddFD: SECCOMP_IOCTL_NOTIF_ADDFD (5.9): wrun can hand the command a
	// descriptor it opened, which a performed open needs.
	AddFD bool `json:"seccomp_addfd"`
	// AddFDSend: SECCOMP_ADDFD_FLAG_SEND (5.14): the descriptor is
	// installed and the call answered in one step.
	AddFDSend bool `json:"seccomp_addfd_send"`
	// WaitKillable: SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (5.19): once
	// wrun has received a call, only a fatal signal interrupts the
	// command's wait for the answer. Without it a signal restarts the
	// call, and wrun answers the restart from what it already did
	// (replay) rather than performing it twice.
	WaitKillable bool `json:"seccomp_wait_killable"`
	// PidfdThread: pidfd_open(PIDFD_THREAD) (6.9), a descriptor for one
	// thread. Without it wrun opens the thread's process, checked live
	// against the notification.
	PidfdThread bool `json:"pidfd_thread"`
	// PidfdGetfd: pidfd_getfd (5.6) is allowed (an outer seccomp filter,
	// Docker's default profile without CAP_SYS_PTRACE, refuses it). It
	// gives wrun the command's own open file (a socket, a directory);
	// without it files are reopened through /proc/PID/fd/N, which a
	// socket cannot be.
	PidfdGetfd bool `json:"pidfd_getfd"`
	// ProcMem: wrun may read the command's memory through /proc/PID/mem
	// (ptrace access: Yama's ptrace_scope below 2, or CAP_SYS_PTRACE).
	ProcMem bool `json:"proc_mem"`
	// Yama is Yama's kernel.yama.ptrace_scope (0 without Yama).
	Yama int `json:"yama_ptrace_scope"`
	// Nested: the seccomp listener is taken (EBUSY: the kernel allows one
	// per filter chain): wrun runs inside another wrun (Outer), or under
	// another supervisor holding one.
	Nested bool `json:"nested,omitempty"`
	// Outer names what holds the listener when Nested: "wrun", or
	// "another supervisor".
	Outer string `json:"outer,omitempty"`
	// Root: wrun runs as uid 0; the command keeps uid 0 but no
	// capability.
	Root bool `json:"root"`
	// Simulated lists the features Simulate took away.
	Simulated []string `json:"simulated,omitempty"`
	// Audit is filled by ProbeAudit for wrun doctor only: a launch asks
	// the kernel itself when it starts a run.
	Audit AuditStatus `json:"audit"`
}

// AuditStatus says whether the kernel's audit records can be read here.
type AuditStatus struct {
	// Readable: auditing is on and this process may read the records.
	Readable bool `json:"readable"`
	// Detail says why not, or what was found.
	Detail string `json:"detail,omitempty"`
}

// Outer supervisors of a nested wrun.
const (
	OuterWrun  = "wrun"
	OuterOther = "another supervisor"
)

// landlock is what the kernel's Landlock offers, as the table of kernel
// facts reads it.
func (f Features) landlock() landlockKernel {
	return landlockKernel{ABI: f.LandlockABI, Errata: f.LandlockErrata}
}

// mediates reports whether wrun can mediate calls here: receive them
// before they run, read their arguments, take the command's descriptors
// and hand one back. Everything Landlock has no hook for rests on it.
func (f Features) mediates() bool {
	return f.Seccomp && f.UserNotif && f.AddFD && f.ProcMem && !f.Nested
}

// Mediates reports whether wrun mediates the command's calls on machine
// f: creates beside protected paths, metadata, signals.
func Mediates(f Features) bool { return f.mediates() }

// MediatesSockets reports whether wrun performs the command's socket
// calls on machine f (below Landlock ABI 9 it then confines UNIX
// sockets by what the sandbox bound; otherwise it refuses them).
func MediatesSockets(f Features) bool { return f.Seccomp && f.takesSockets() }

// takesSockets reports whether the mediation can perform socket calls:
// they act on the command's own socket, which only pidfd_getfd can take
// (a socket cannot be reopened through /proc).
func (f Features) takesSockets() bool { return f.mediates() && f.PidfdGetfd }

// simulations are the switches Simulate understands: the feature's name
// in WRUN_SIMULATE, and what setting it takes away.
var simulations = []struct {
	name, what string
	off        func(*Features)
}{
	{"no-user-notif", "SECCOMP_RET_USER_NOTIF (Linux 5.0)", func(f *Features) { f.UserNotif, f.AddFD, f.AddFDSend = false, false, false }},
	{"no-addfd", "SECCOMP_IOCTL_NOTIF_ADDFD (5.9)", func(f *Features) { f.AddFD, f.AddFDSend = false, false }},
	{"no-addfd-send", "SECCOMP_ADDFD_FLAG_SEND (5.14)", func(f *Features) { f.AddFDSend = false }},
	{"no-wait-killable", "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (5.19)", func(f *Features) { f.WaitKillable = false }},
	{"no-pidfd-thread", "PIDFD_THREAD (6.9)", func(f *Features) { f.PidfdThread = false }},
	{"no-pidfd-getfd", "pidfd_getfd, as Docker's default seccomp profile refuses it", func(f *Features) { f.PidfdGetfd = false }},
	{"no-proc-mem", "ptrace access to the command's memory (Yama ptrace_scope 2)", func(f *Features) { f.ProcMem = false }},
	{"nested-other", "the seccomp listener, held by another supervisor", func(f *Features) { f.Nested, f.Outer = true, OuterOther }},
}

// Simulate takes away what WRUN_LANDLOCK_ABI (abi: the highest Landlock
// ABI to use, "" for no cap) and WRUN_SIMULATE (sim: a comma-separated
// list of simulations' names) ask, as on an older kernel or a more
// restricted machine. wrun then runs as it would there, every fallback
// for real; what the kernel itself has is unchanged.
func Simulate(f Features, abi, sim string) (Features, error) {
	if abi != "" {
		n, err := strconv.Atoi(abi)
		if err != nil || n < 0 {
			return f, fmt.Errorf("WRUN_LANDLOCK_ABI=%q: want a whole number (the highest Landlock ABI to use)", abi)
		}
		if n < f.LandlockABI {
			f.LandlockABI = n
			f.Simulated = append(f.Simulated, fmt.Sprintf("Landlock ABI %d", n))
		}
	}
	for _, name := range strings.Split(sim, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		i := slices.IndexFunc(simulations, func(s struct {
			name, what string
			off        func(*Features)
		}) bool {
			return s.name == name
		})
		if i < 0 {
			var names []string
			for _, s := range simulations {
				names = append(names, s.name)
			}
			sort.Strings(names)
			return f, fmt.Errorf("WRUN_SIMULATE: unknown simulation %q (known: %s)", name, strings.Join(names, ", "))
		}
		simulations[i].off(&f)
		f.Simulated = append(f.Simulated, "without "+simulations[i].what)
	}
	return f, nil
}

// AsUser is what a wrun run by an unprivileged user on the same machine
// finds: no root, and ptrace access to its children only as Yama allows.
func (f Features) AsUser() Features {
	f.Root = false
	f.ProcMem = f.Yama < 2
	return f
}

// Name names the machine's row of the support matrix: "root, Landlock ABI
// 7", "a user, Landlock ABI 4, inside another wrun".
func (f Features) Name() string {
	who := "a user"
	if f.Root {
		who = "root"
	}
	parts := []string{who, fmt.Sprintf("Landlock ABI %d", f.LandlockABI)}
	switch {
	case f.Nested && f.Outer == OuterWrun:
		parts = append(parts, "inside another wrun")
	case f.Nested:
		parts = append(parts, "under another seccomp supervisor")
	case !f.Seccomp:
		parts = append(parts, "without seccomp")
	case !f.UserNotif:
		parts = append(parts, "without seccomp user notification")
	case !f.AddFD:
		parts = append(parts, "without SECCOMP_IOCTL_NOTIF_ADDFD")
	case !f.ProcMem:
		parts = append(parts, "without ptrace access to its own children (Yama)")
	case !f.PidfdGetfd:
		parts = append(parts, "without pidfd_getfd (a container's default seccomp profile)")
	}
	return strings.Join(parts, ", ")
}

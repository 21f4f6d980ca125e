//go:build linux

package linux

import (
	"fmt"
	"sort"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The command's seccomp filter. It refuses what no build or test needs and
// what would reach outside the sandbox, decides by register arguments
// where it can, and, with the mediation, sends wrun (the listener) every
// call Landlock has no hook for or cannot grant beside protected paths:
// wrun performs those itself (mediation.go) and lets the rest continue,
// where Landlock decides.

// seccompSpec says what the filter is built for.
type seccompSpec struct {
	// DenyInet: no socket family but AF_UNIX may be created.
	DenyInet bool `json:"deny_inet,omitempty"`
	// DenyUnix: AF_UNIX sockets may not be created either, nor datagram
	// socketpairs (stream and seqpacket ones still work): used where
	// nothing confines connect() to pathname sockets.
	DenyUnix bool `json:"deny_unix,omitempty"`
	// Mediate sends wrun the calls it decides or performs: opens that
	// write, create or truncate; every create, removal, rename and link;
	// every metadata call; openat2; the calls that name another process's
	// priority, scheduling or limits; landlock_restrict_self; and refused
	// socket families (to report them). Without it those that cannot be
	// decided by registers are refused (setid mode bits, openat2, other
	// processes) or left to Landlock.
	Mediate bool `json:"mediate,omitempty"`
	// Sockets sends every call that names a socket address (connect,
	// bind, sendto with an address, sendmsg, sendmmsg) to wrun, which
	// performs them: pathname UNIX sockets outside the sandbox stay out of
	// reach below Landlock ABI 9.
	Sockets bool `json:"sockets,omitempty"`
	// Inet: network=loopback or hosts: UNIX, IPv4 and IPv6 sockets may be
	// made (no other family), and with Sockets every listen goes to wrun
	// too, which decides each call on an IP socket (inet.go).
	Inet bool `json:"inet,omitempty"`
	// Truncate: Landlock has no truncate right (ABI < 3): truncate(2)
	// goes to wrun, and so does every open with O_TRUNC, and wrun performs
	// the ones that open for reading (O_RDONLY|O_TRUNC: no write right
	// is checked for them).
	Truncate bool `json:"truncate,omitempty"`
	// Signals: Landlock does not scope signals (ABI < 6): every signal to
	// another process is sent by wrun after its target is checked.
	Signals bool `json:"signals,omitempty"`
	// Nested: an enclosing filter holds the listener. Calls are left to it
	// and to Landlock rather than refused where the enclosing wrun decides
	// them.
	Nested bool `json:"nested,omitempty"`
	// DenyPlant: no symbolic link, FIFO or socket node may be made with
	// symlink or mknod, anywhere (without Landlock nothing else keeps them
	// out of the places later unsandboxed runs write).
	DenyPlant bool `json:"deny_plant,omitempty"`
	// Self is wrun's process id and Launch the thread the command is
	// forked from, which shares the command's Landlock domain: the calls
	// that name them by number are refused.
	Self, Launch int `json:"-"`
}

// Offsets into struct seccomp_data. Arguments are 64-bit; the kernel
// truncates int-typed ones (pids, socket families, ioctl requests) to 32
// bits, so the filter compares only the low word, or setting high bits
// would bypass it.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16 // args[i] low word at offArgs+8*i on little-endian machines
)

// seccompFilterFlagWaitKillableRecv is SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV.
const seccompFilterFlagWaitKillableRecv = 1 << 5

// Return values.
const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	retNotify = unix.SECCOMP_RET_USER_NOTIF
)

// modeSetID are the mode bits that make an executable run with its
// owner's or group's identity.
const modeSetID = unix.S_ISUID | unix.S_ISGID

// openCreates are the open flags under which the mode argument is used.
const openCreates = unix.O_CREAT | unix.O_TMPFILE

// openWriteMask: an open with none of these flags only reads.
const openWriteMask = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC

// Terminal and socket ioctls the filter decides.
const (
	ioctlTIOCSTI     = 0x5412
	ioctlTIOCLINUX   = 0x541C
	ioctlTIOCGPTPEER = 0x5441
	ioctlFIOSETOWN   = 0x8901
	ioctlSIOCSPGRP   = 0x8902
	// Inode flags and project ids (chattr, FS_IOC_FSSETXATTR): metadata
	// Landlock has no hook for, set on any descriptor the command holds.
	ioctlFSSetFlags     = 0x40086602 // FS_IOC_SETFLAGS
	ioctlFSSetFlags32   = 0x40046602 // FS_IOC32_SETFLAGS
	ioctlFSSetVersion   = 0x40087602 // FS_IOC_SETVERSION
	ioctlFSSetVersion32 = 0x40047602 // FS_IOC32_SETVERSION
	ioctlFSSetXattr     = 0x401c5820 // FS_IOC_FSSETXATTR
)

// fcntl commands the filter decides.
const (
	fcntlSetOwn   = unix.F_SETOWN
	fcntlSetOwnEx = unix.F_SETOWN_EX
)

// deniedSyscalls are refused with EPERM under every grant: they reach
// other processes' memory (ptrace, process_vm_*), bypass the file system
// hooks or the seccomp filter itself (io_uring), widen the kernel's attack
// surface for no build or test need (bpf, perf_event_open, userfaultfd,
// keyrings), or change the machine (modules, mounts, clock, reboot), which
// matters when wrun runs as root.
func deniedSyscalls() []uint32 {
	common := []uint32{
		unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
		unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
		unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
		unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_KEYCTL,
		unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_INIT_MODULE,
		unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE, unix.SYS_REBOOT,
		unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT,
		unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX,
		unix.SYS_SETHOSTNAME, unix.SYS_SETDOMAINNAME,
		unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_MOVE_MOUNT,
		unix.SYS_OPEN_TREE, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT,
		unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR, unix.SYS_OPEN_BY_HANDLE_AT,
		unix.SYS_QUOTACTL, unix.SYS_SETNS,
	}
	return append(common, archDenied...)
}

// ipcSyscalls are SysV IPC and POSIX message queues: objects named by a
// key or a name, not a path, that Landlock does not see and that would
// reach other processes' segments and queues.
func ipcSyscalls() []uint32 {
	return []uint32{
		unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMCTL, unix.SYS_SHMDT,
		unix.SYS_MSGGET, unix.SYS_MSGSND, unix.SYS_MSGRCV, unix.SYS_MSGCTL,
		unix.SYS_SEMGET, unix.SYS_SEMOP, unix.SYS_SEMTIMEDOP, unix.SYS_SEMCTL,
		unix.SYS_MQ_OPEN, unix.SYS_MQ_UNLINK, unix.SYS_MQ_TIMEDSEND, unix.SYS_MQ_TIMEDRECEIVE,
		unix.SYS_MQ_NOTIFY, unix.SYS_MQ_GETSETATTR,
	}
}

// rule is the filter's code for one system call: instructions that end
// in a return on every path. The accumulator holds the call's number on
// entry; a rule loads what it compares.
type rule []bpf.Instruction

// asm assembles a rule whose conditional jumps name the label their true
// branch goes to; a false branch falls through.
type asm struct {
	ins    []bpf.Instruction
	to     map[int]string // index of a JumpIf -> its label
	labels map[string]int
}

func newAsm() *asm { return &asm{to: map[int]string{}, labels: map[string]int{}} }

// arg loads the low word of argument i (the kernel reads no more of an
// int argument).
func (a *asm) arg(i int) *asm {
	a.ins = append(a.ins, bpf.LoadAbsolute{Off: uint32(offArgs + 8*i), Size: 4})
	return a
}

// argHigh loads the high word of argument i (a pointer's).
func (a *asm) argHigh(i int) *asm {
	a.ins = append(a.ins, bpf.LoadAbsolute{Off: uint32(offArgs + 8*i + 4), Size: 4})
	return a
}

// and masks the accumulator.
func (a *asm) and(v uint32) *asm {
	a.ins = append(a.ins, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: v})
	return a
}

func (a *asm) jump(cond bpf.JumpTest, v uint32, label string) *asm {
	a.to[len(a.ins)] = label
	a.ins = append(a.ins, bpf.JumpIf{Cond: cond, Val: v})
	return a
}

// eq goes to label when the accumulator is v.
func (a *asm) eq(v uint32, label string) *asm { return a.jump(bpf.JumpEqual, v, label) }

// set goes to label when the accumulator has any of bits.
func (a *asm) set(bits uint32, label string) *asm { return a.jump(bpf.JumpBitsSet, bits, label) }

// ret returns v.
func (a *asm) ret(v uint32) *asm {
	a.ins = append(a.ins, bpf.RetConstant{Val: v})
	return a
}

// at places label here.
func (a *asm) at(label string) *asm {
	a.labels[label] = len(a.ins)
	return a
}

// rule resolves the labels. Every path must end in a return: the last
// instruction is one.
func (a *asm) rule() rule {
	out := make(rule, len(a.ins))
	copy(out, a.ins)
	for i, l := range a.to {
		at, ok := a.labels[l]
		if !ok || at <= i || at-i-1 > 255 {
			panic(fmt.Sprintf("seccomp rule: bad label %q", l))
		}
		j := out[i].(bpf.JumpIf)
		j.SkipTrue = uint8(at - i - 1)
		out[i] = j
	}
	if _, ok := out[len(out)-1].(bpf.RetConstant); !ok {
		panic("seccomp rule: does not end in a return")
	}
	return out
}

// ret is a rule that returns v.
func ret(v uint32) rule { return newAsm().ret(v).rule() }

// argIn returns then when argument i is one of vals, else otherwise.
func argIn(i int, vals []uint32, then, otherwise uint32) rule {
	a := newAsm().arg(i)
	for _, v := range vals {
		a.eq(v, "then")
	}
	return a.ret(otherwise).at("then").ret(then).rule()
}

// filterRules is the filter's rule for each system call it decides; a
// call without one is allowed.
func filterRules(s seccompSpec) map[uint32]rule {
	rules := map[uint32]rule{}
	set := func(r rule, nrs ...uint32) {
		for _, nr := range nrs {
			rules[nr] = r
		}
	}
	for _, nr := range deniedSyscalls() {
		rules[nr] = ret(retEPERM)
	}
	for _, nr := range ipcSyscalls() {
		rules[nr] = ret(retEPERM)
	}
	notify := func(or uint32) uint32 {
		if s.Mediate {
			return retNotify
		}
		return or
	}

	// ioctl: no terminal input injection. TIOCGPTPEER opens the slave of
	// a pseudo-terminal the command made, which Landlock checks against
	// /dev/pts (hidden): wrun performs it. FIOSETOWN and SIOCSPGRP name
	// the owner of a socket's I/O signals in memory the filter cannot
	// read (the launch thread's id would do: its signals reach wrun's
	// whole process), so they are refused; so are the ioctls that set an
	// inode's flags or project id, metadata no Landlock right covers.
	// TIOCSCTTY and TIOCSPGRP pass: an interactive run's pty relay
	// (launch.go) needs them in the sandbox, where its monitor makes the
	// relay's terminal its session's and gives the command its
	// foreground; the kernel lets a process set only its own session's
	// terminal, and the command holds no terminal of wrun's session then.
	ioctl := newAsm().arg(1).eq(ioctlTIOCSTI, "deny").eq(ioctlTIOCLINUX, "deny").
		eq(ioctlFIOSETOWN, "deny").eq(ioctlSIOCSPGRP, "deny").
		eq(ioctlFSSetFlags, "deny").eq(ioctlFSSetFlags32, "deny").eq(ioctlFSSetVersion, "deny").
		eq(ioctlFSSetVersion32, "deny").eq(ioctlFSSetXattr, "deny")
	if s.Mediate {
		ioctl.eq(ioctlTIOCGPTPEER, "notify")
	}
	rules[unix.SYS_IOCTL] = ioctl.ret(retAllow).at("deny").ret(retEPERM).at("notify").ret(retNotify).rule()

	// New user namespaces: the start of most kernel privilege escalations,
	// and never needed by a build or a test. clone3 passes its flags in
	// memory the filter cannot read: ENOSYS makes the C library fall back
	// to clone, whose flags it can.
	set(newAsm().arg(0).set(unix.CLONE_NEWUSER, "deny").ret(retAllow).at("deny").ret(retEPERM).rule(),
		unix.SYS_UNSHARE, unix.SYS_CLONE)
	rules[unix.SYS_CLONE3] = ret(retENOSYS)
	// file_setattr (Linux 6.17) sets inode flags and project ids by
	// path, metadata no Landlock right covers: answered as on a kernel
	// without it (callers fall back to the ioctl, refused above).
	// open_tree_attr clones mounts, as open_tree does.
	rules[sysFileSetattr] = ret(retENOSYS)
	rules[sysOpenTreeAttr] = ret(retEPERM)

	// Other processes' limits, priorities and scheduling: the caller's own
	// (0) pass; wrun checks any other target (mediation), or it is
	// refused. A hard RLIMIT_CPU on another process makes the kernel kill
	// it, whatever the signal scope says.
	set(argIn(0, []uint32{0}, retAllow, notify(retEPERM)),
		unix.SYS_SCHED_SETAFFINITY, unix.SYS_SCHED_SETSCHEDULER,
		unix.SYS_SCHED_SETPARAM, unix.SYS_SCHED_SETATTR)
	// RLIMIT_NPROC is the bound on the command's tasks (processBound
	// lowers its soft limit only: wrun's own hard one could not be raised
	// back), so no process of it sets that limit, its own or another's;
	// reading it (prlimit64 with no new limit) passes. Otherwise
	// prlimit64 is checked as the calls above.
	nproc := uint32(unix.RLIMIT_NPROC)
	rules[unix.SYS_SETRLIMIT] = newAsm().arg(0).eq(nproc, "deny").ret(retAllow).at("deny").ret(retEPERM).rule()
	rules[unix.SYS_PRLIMIT64] = newAsm().arg(1).eq(nproc, "nproc").
		arg(0).eq(0, "allow").ret(notify(retEPERM)).
		at("nproc").arg(2).eq(0, "low").ret(retEPERM).
		at("low").argHigh(2).eq(0, "get").ret(retEPERM).
		at("get").arg(0).eq(0, "allow").ret(notify(retEPERM)).
		at("allow").ret(retAllow).rule()
	// setpriority(which, who): PRIO_PROCESS (0) and PRIO_PGRP (1) of the
	// caller (who 0) pass; PRIO_USER reaches every process of the user.
	// ioprio_set numbers its kinds from 1 (IOPRIO_WHO_PROCESS, _PGRP).
	prio := func(process, pgrp uint32) rule {
		return newAsm().arg(1).eq(0, "self").ret(notify(retEPERM)).
			at("self").arg(0).eq(process, "allow").eq(pgrp, "allow").ret(notify(retEPERM)).
			at("allow").ret(retAllow).rule()
	}
	rules[unix.SYS_SETPRIORITY] = prio(unix.PRIO_PROCESS, unix.PRIO_PGRP)
	rules[unix.SYS_IOPRIO_SET] = prio(1, 2)

	// Signals. The thread the command is forked from shares its Landlock
	// domain, so the signal scope lets the command signal it, and a
	// signal to a thread's number (kill, rt_sigqueueinfo) is checked
	// against that thread but delivered to its whole process: the calls
	// that name it by number (or wrun's process, for the thread-directed
	// ones) are refused. pidfd_send_signal names its target by a
	// descriptor, which may be /proc/TID of that thread: with the
	// mediation wrun sends it, after checking the target; without it, it
	// is refused. Where signals are not scoped (Signals) every signal to
	// another process goes to wrun, which sends it after checking its
	// target; the null signal (existence) and SIGURG (ignored by default;
	// the Go runtime preempts its own threads with it, often) pass.
	self, launch := uint32(s.Self), uint32(s.Launch)
	quiet := []uint32{0, uint32(unix.SIGURG)}
	threadSignal := func(sigArg int, targets ...uint32) rule {
		a := newAsm().arg(0)
		for _, t := range targets {
			a.eq(t, "deny")
		}
		if s.Signals {
			a.arg(sigArg)
			for _, v := range quiet {
				a.eq(v, "allow")
			}
			a.ret(retNotify)
		} else {
			a.ret(retAllow)
		}
		return a.at("deny").ret(retEPERM).at("allow").ret(retAllow).rule()
	}
	rules[unix.SYS_TKILL] = threadSignal(1, launch, self)
	rules[unix.SYS_TGKILL] = threadSignal(2, self)
	rules[unix.SYS_RT_SIGQUEUEINFO] = argIn(0, []uint32{launch, self}, retEPERM, retAllow)
	if s.Signals {
		rules[unix.SYS_KILL] = newAsm().arg(0).eq(launch, "deny").eq(self, "deny").arg(1).eq(0, "allow").ret(retNotify).
			at("deny").ret(retEPERM).at("allow").ret(retAllow).rule()
		rules[unix.SYS_RT_SIGQUEUEINFO] = argIn(0, []uint32{launch, self}, retEPERM, retNotify)
		rules[unix.SYS_RT_TGSIGQUEUEINFO] = argIn(0, []uint32{self}, retEPERM, retNotify)
	} else {
		rules[unix.SYS_KILL] = argIn(0, []uint32{launch, self}, retEPERM, retAllow)
		rules[unix.SYS_RT_TGSIGQUEUEINFO] = argIn(0, []uint32{self}, retEPERM, retAllow)
	}
	rules[unix.SYS_PIDFD_SEND_SIGNAL] = ret(notify(retEPERM))
	rules[unix.SYS_PIDFD_OPEN] = argIn(0, []uint32{launch, self}, retEPERM, retAllow)
	// fcntl: an owner for I/O signals. F_SETOWN_EX can name a thread (the
	// launch thread) in memory the filter cannot read: refused. F_SETOWN
	// takes a process, but the kernel looks up any thread's id, and the
	// launch thread's signals reach wrun's whole process: refused for it.
	// Where signals are not scoped, F_SETOWN goes to wrun, which lets
	// only the caller's own process or group through.
	fcntl := newAsm().arg(1).eq(fcntlSetOwnEx, "deny").eq(fcntlSetOwn, "setown").ret(retAllow).
		at("setown").arg(2).eq(launch, "deny").eq(self, "deny")
	if s.Signals {
		fcntl.ret(retNotify)
	} else {
		fcntl.ret(retAllow)
	}
	rules[unix.SYS_FCNTL] = fcntl.at("deny").ret(retEPERM).rule()

	if s.Mediate {
		for _, c := range mediatedCalls() {
			if c.op == opOpen && c.flags >= 0 {
				mask := uint32(openWriteMask)
				rules[c.nr] = newAsm().arg(c.flags).set(mask, "notify").ret(retAllow).at("notify").ret(retNotify).rule()
				continue
			}
			rules[c.nr] = ret(retNotify)
		}
		// A nested Landlock domain: wrun must know, so that it never
		// performs a call for a sandbox narrower than its own.
		rules[unix.SYS_LANDLOCK_RESTRICT_SELF] = ret(retNotify)
		for _, nr := range refusedNewCalls() {
			rules[nr] = ret(retENOSYS)
		}
	} else {
		// Setuid and setgid files (a chmod setting the bits, a create
		// with them) are refused: no one can tell a directory's harmless
		// setgid bit from a file's here.
		setid := func(mode int) rule {
			return newAsm().arg(mode).set(modeSetID, "deny").ret(retAllow).at("deny").ret(retEPERM).rule()
		}
		createSetid := func(flags, mode int) rule {
			return newAsm().arg(flags).set(openCreates, "creates").ret(retAllow).
				at("creates").arg(mode).set(modeSetID, "deny").ret(retAllow).at("deny").ret(retEPERM).rule()
		}
		set(setid(1), unix.SYS_FCHMOD)
		set(setid(2), unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2, unix.SYS_MKNODAT)
		rules[unix.SYS_OPENAT] = createSetid(2, 3)
		for _, c := range archArgumentCalls() {
			if c.kind == "open" {
				rules[c.nr] = createSetid(c.flags, c.mode)
			} else {
				rules[c.nr] = setid(c.mode)
			}
		}
		// openat2 passes its flags and mode in memory the filter cannot
		// read: ENOSYS, as on a kernel without it, so callers fall back.
		rules[unix.SYS_OPENAT2] = ret(retENOSYS)
	}

	// socket: by family; with the mediation a refused one is reported.
	if s.DenyInet || s.DenyUnix {
		deny := notify(retEPERM)
		switch {
		case s.DenyInet && s.DenyUnix:
			rules[unix.SYS_SOCKET] = ret(deny)
		case s.DenyInet:
			rules[unix.SYS_SOCKET] = argIn(0, []uint32{unix.AF_UNIX}, retAllow, deny)
		default:
			rules[unix.SYS_SOCKET] = argIn(0, []uint32{unix.AF_UNIX}, deny, retAllow)
		}
	}
	if s.Inet && !s.DenyInet && !s.DenyUnix {
		rules[unix.SYS_SOCKET] = argIn(0, []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6}, retAllow, notify(retEPERM))
	}
	if s.DenyUnix {
		// socketpair(AF_UNIX, SOCK_DGRAM): an unbound datagram socket can
		// sendto any pathname socket. Stream and seqpacket pairs are
		// connected for good. The type is compared without SOCK_NONBLOCK
		// and SOCK_CLOEXEC.
		rules[unix.SYS_SOCKETPAIR] = newAsm().arg(0).eq(unix.AF_UNIX, "unix").ret(retAllow).
			at("unix").arg(1).and(^uint32(unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)).eq(unix.SOCK_DGRAM, "deny").ret(retAllow).
			at("deny").ret(retEPERM).rule()
	}
	if s.Sockets {
		// sendto with a NULL address (argument 4, a register) names none.
		rules[unix.SYS_SENDTO] = newAsm().arg(4).eq(0, "low").ret(retNotify).
			at("low").argHigh(4).eq(0, "none").ret(retNotify).at("none").ret(retAllow).rule()
		set(ret(retNotify), unix.SYS_CONNECT, unix.SYS_BIND, unix.SYS_SENDMSG, unix.SYS_SENDMMSG)
		if s.Inet {
			rules[unix.SYS_LISTEN] = ret(retNotify)
			// SO_REUSEPORT shares a port with a socket of the same user
			// outside the sandbox, whenever either binds or listens:
			// the kernel then spreads the host service's connections
			// (and the command's to it) over both, whatever sock_diag
			// named. Refused; level and name are ints, so the low 32
			// bits are what the kernel reads.
			rules[unix.SYS_SETSOCKOPT] = newAsm().arg(1).eq(unix.SOL_SOCKET, "sol").ret(retAllow).
				at("sol").arg(2).eq(unix.SO_REUSEPORT, "deny").ret(retAllow).
				at("deny").ret(retEPERM).rule()
		}
	}
	if s.DenyPlant {
		rules[unix.SYS_SYMLINKAT] = ret(retEPERM)
		rules[unix.SYS_MKNODAT] = plantMode(2)
		for _, c := range archPlantCalls() {
			if c.mode < 0 {
				rules[c.nr] = ret(retEPERM)
			} else {
				rules[c.nr] = plantMode(c.mode)
			}
		}
	}
	return rules
}

// plantMode refuses making a FIFO or socket node with mknod (mode in
// argument i), and setuid or setgid bits.
func plantMode(i int) rule {
	return newAsm().arg(i).set(modeSetID, "deny").and(unix.S_IFMT).eq(unix.S_IFIFO, "deny").eq(unix.S_IFSOCK, "deny").
		ret(retAllow).at("deny").ret(retEPERM).rule()
}

// buildFilter assembles the classic BPF program for spec: the
// architecture check, then one comparison per system call with a rule,
// each falling through to the next when the number differs, then allow.
func buildFilter(spec seccompSpec) []bpf.Instruction {
	deny := bpf.RetConstant{Val: retEPERM}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		deny, // a foreign system call ABI (e.g. int 0x80 on x86-64)
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	if x32Bit != 0 {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: x32Bit, SkipFalse: 1}, deny)
	}
	rules := filterRules(spec)
	nrs := make([]uint32, 0, len(rules))
	for nr := range rules {
		nrs = append(nrs, nr)
	}
	sort.Slice(nrs, func(i, j int) bool { return nrs[i] < nrs[j] })
	for _, nr := range nrs {
		r := rules[nr]
		// A rule returns on every path, so a number that differs skips
		// it and lands on the next comparison, the accumulator still
		// holding the number.
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: uint8(len(r))})
		prog = append(prog, r...)
	}
	return append(prog, bpf.RetConstant{Val: retAllow})
}

// argumentCall is a call that only some architectures have, with where its
// flags and mode arguments are.
type argumentCall struct {
	nr          uint32
	kind        string // "mode": the mode argument counts; "open": only when the flags create
	flags, mode int
	// chmod: the call changes an existing file's mode (path first);
	// mknod: it makes a node.
	chmod, mknod bool
}

// loadFilter installs the program on the calling thread only (no TSYNC).
// no_new_privs must already be set. With listener it returns the
// user-notification file descriptor (close-on-exec), else -1.
// waitKillable asks that, once wrun has received a call, only a fatal
// signal interrupt the wait for its answer (Linux 5.19).
func loadFilter(raw []bpf.RawInstruction, listener, waitKillable bool) (int, error) {
	fprog := unix.SockFprog{Len: uint16(len(raw)), Filter: (*unix.SockFilter)(unsafe.Pointer(&raw[0]))}
	const seccompSetModeFilter = 1
	var flags uintptr
	if listener {
		flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
		if waitKillable {
			flags |= seccompFilterFlagWaitKillableRecv
		}
	}
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, seccompSetModeFilter, flags, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return -1, fmt.Errorf("loading the seccomp filter: %w", errno)
	}
	if !listener {
		return -1, nil
	}
	return int(fd), nil
}

//go:build linux

package linux

import (
	"fmt"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompSpec is what the filter must deny beyond the fixed list.
type seccompSpec struct {
	// DenyInet: no socket family but AF_UNIX may be created.
	DenyInet bool `json:"deny_inet,omitempty"`
	// DenyUnix: AF_UNIX sockets may not be created either, nor datagram
	// socketpairs (stream and seqpacket ones still work). Used where Landlock cannot confine connect() to
	// pathname sockets (ABI < 9).
	DenyUnix bool `json:"deny_unix,omitempty"`
	// Observe sends mutating file system calls, connect and bind to the
	// observer (which lets them continue), and refused socket families too
	// (which it answers with EPERM), so that denials are reported.
	Observe bool `json:"observe,omitempty"`
	// Mediate sends every call that names a socket address (connect,
	// bind, sendto with an address, sendmsg, sendmmsg) to wrun, which
	// never lets one continue: the hands process performs it (see
	// hands.go). AF_UNIX sockets and datagram socketpairs are then
	// allowed.
	Mediate bool `json:"mediate,omitempty"`
	// IsolatedIPC: the child has an IPC namespace of its own, so SysV IPC
	// and POSIX message queues reach only the sandbox's own objects.
	// Without it those calls are refused: Landlock has no hook for them,
	// and they would reach other processes' segments and queues.
	IsolatedIPC bool `json:"isolated_ipc,omitempty"`
	// DenyPlant: no symbolic link, FIFO or socket node may be made with
	// symlink or mknod, anywhere. Without Landlock nothing else keeps them
	// out of the places later unsandboxed runs write (ReadWritePlain).
	DenyPlant bool `json:"deny_plant,omitempty"`
}

// Offsets into struct seccomp_data. Arguments are 64-bit; the kernel
// truncates int-typed ones (socket family, ioctl request) to 32 bits, so the
// filter compares only the low word, or setting high bits would bypass it.
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
)

// modeSetID are the mode bits that make an executable run with its
// owner's or group's identity. A child running as root must not create
// a setuid-root file anywhere, not even inside a writable tree: it would
// outlive the run as a way up for any user of the machine. On a
// directory S_ISGID only makes new entries inherit its group, which is
// harmless: where wrun can see the call (a listener), the filter sends
// these calls to wrun, which makes that one and refuses the rest with a
// denial (setid.go); without a listener all are refused.
const modeSetID = unix.S_ISUID | unix.S_ISGID

// openCreates are the open flags under which the mode argument is used.
const openCreates = unix.O_CREAT | 0o20000000 // __O_TMPFILE

// Terminal ioctls that inject input or poke the console.
const (
	ioctlTIOCSTI   = 0x5412
	ioctlTIOCLINUX = 0x541C
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

// buildFilter assembles the classic BPF program for spec.
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
	for _, nr := range deniedSyscalls() {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1}, deny)
	}
	// ioctl: no terminal input injection.
	ioctl := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArgs + 8*1, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: ioctlTIOCSTI, SkipFalse: 1}, deny,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: ioctlTIOCLINUX, SkipFalse: 1}, deny,
		bpf.RetConstant{Val: retAllow},
	}
	prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_IOCTL, SkipFalse: uint8(len(ioctl))})
	prog = append(prog, ioctl...)
	prog = append(prog, argumentRules(spec)...)
	if spec.DenyPlant {
		prog = append(prog, plantRules()...)
	}
	// socket: by family.
	if spec.DenyInet || spec.DenyUnix {
		deny := deny
		if spec.Observe {
			deny = bpf.RetConstant{Val: retNotify}
		}
		var sock []bpf.Instruction
		switch {
		case spec.DenyInet && spec.DenyUnix:
			sock = []bpf.Instruction{deny}
		case spec.DenyInet:
			sock = []bpf.Instruction{
				bpf.LoadAbsolute{Off: offArgs, Size: 4},
				bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipFalse: 1},
				bpf.RetConstant{Val: retAllow},
				deny,
			}
		default:
			sock = []bpf.Instruction{
				bpf.LoadAbsolute{Off: offArgs, Size: 4},
				bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipFalse: 1},
				deny,
				bpf.RetConstant{Val: retAllow},
			}
		}
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SOCKET, SkipFalse: uint8(len(sock))})
		prog = append(prog, sock...)
	}
	if spec.DenyUnix {
		prog = append(prog, socketpairRule()...)
	}
	if spec.Mediate {
		prog = append(prog, mediateFilter()...)
	}
	if spec.Observe {
		prog = append(prog, observeFilter(observedCalls())...)
	}
	return append(prog, bpf.RetConstant{Val: retAllow})
}

// socketpairRule refuses socketpair(AF_UNIX, SOCK_DGRAM): an unbound
// datagram socket can sendto (or connect to) any pathname socket, so where
// AF_UNIX sockets are refused because connect() cannot be confined, the
// datagram pair is refused with them. Stream and seqpacket pairs are
// connected for good: an address given to their sends is refused or
// ignored by the kernel. The type's low bits are compared without the
// SOCK_NONBLOCK and SOCK_CLOEXEC flags. The accumulator holds the system
// call number on entry and on exit.
func socketpairRule() []bpf.Instruction {
	const typeFlags = unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC
	code := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArgs, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipFalse: 4},
		bpf.LoadAbsolute{Off: offArgs + 8*1, Size: 4},
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: ^uint32(typeFlags)},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_DGRAM, SkipFalse: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	return append([]bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SOCKETPAIR, SkipFalse: uint8(len(code))}}, code...)
}

// argumentRules refuses the calls that reach outside the sandbox, or
// create what outlives it, only with some arguments. A call whose
// arguments are harmless falls through to the rest of the filter (the
// socket rules and the observer), so these rules come after the
// unconditional denials and before the observer's part. The accumulator
// holds the system call number on entry and on exit. Arguments are
// compared on their low 32 bits, which is all the kernel reads of an int.
func argumentRules(spec seccompSpec) []bpf.Instruction {
	deny := bpf.RetConstant{Val: retEPERM}
	// setid answers a call with setuid or setgid bits: wrun decides and
	// reports it where it holds the listener (setid.go), else EPERM.
	setid := deny
	if spec.Observe || spec.Mediate {
		setid = bpf.RetConstant{Val: retNotify}
	}
	openat2 := bpf.RetConstant{Val: retENOSYS}
	if spec.Observe {
		openat2 = bpf.RetConstant{Val: retNotify}
	}
	loadNr := bpf.LoadAbsolute{Off: offNr, Size: 4}
	arg := func(i int) bpf.Instruction { return bpf.LoadAbsolute{Off: uint32(offArgs + 8*i), Size: 4} }
	// bitsAt: deny when argument i has any of bits.
	bitsAt := func(i int, bits uint32) []bpf.Instruction {
		return []bpf.Instruction{arg(i), bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: bits, SkipFalse: 1}, deny}
	}
	// setidAt: setid when the mode (argument i) has setuid or setgid bits.
	setidAt := func(i int) []bpf.Instruction {
		return []bpf.Instruction{arg(i), bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: modeSetID, SkipFalse: 1}, setid}
	}
	// createMode: setid when the flags (argument f) create a file and the
	// mode (argument m) has setuid or setgid bits.
	createMode := func(f, m int) []bpf.Instruction {
		return []bpf.Instruction{
			arg(f), bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: openCreates, SkipFalse: 3},
			arg(m), bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: modeSetID, SkipFalse: 1}, setid,
		}
	}
	type block struct {
		nr   uint32
		code []bpf.Instruction
	}
	blocks := []block{
		// New user namespaces: the start of most kernel privilege
		// escalations, and never needed by a build or a test. clone3
		// passes its flags in memory the filter cannot read: ENOSYS makes
		// the C library fall back to clone, whose flags it can.
		{unix.SYS_UNSHARE, bitsAt(0, unix.CLONE_NEWUSER)},
		{unix.SYS_CLONE, bitsAt(0, unix.CLONE_NEWUSER)},
		{unix.SYS_CLONE3, []bpf.Instruction{bpf.RetConstant{Val: retENOSYS}}},
		// Resource limits of another process: a hard RLIMIT_CPU makes the
		// kernel kill it, whatever Landlock's signal scope says.
		{unix.SYS_PRLIMIT64, []bpf.Instruction{arg(0), bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: 1}, deny}},
		// setuid and setgid files.
		{unix.SYS_FCHMOD, setidAt(1)},
		{unix.SYS_FCHMODAT, setidAt(2)},
		{unix.SYS_FCHMODAT2, setidAt(2)},
		{unix.SYS_MKNODAT, setidAt(2)},
		{unix.SYS_OPENAT, createMode(2, 3)},
		// openat2 passes its mode in memory the filter cannot read; the C
		// library's open never uses it. With the observer, it answers
		// ENOSYS and records the refusal (setid.go).
		{unix.SYS_OPENAT2, []bpf.Instruction{openat2}},
	}
	for _, c := range archArgumentCalls() {
		if c.kind == "open" {
			blocks = append(blocks, block{c.nr, createMode(c.flags, c.mode)})
		} else {
			blocks = append(blocks, block{c.nr, setidAt(c.mode)})
		}
	}
	var prog []bpf.Instruction
	for i, b := range blocks {
		if i > 0 {
			prog = append(prog, loadNr) // the block before loaded an argument
		}
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: b.nr, SkipFalse: uint8(len(b.code))})
		prog = append(prog, b.code...)
	}
	prog = append(prog, loadNr)
	if !spec.IsolatedIPC {
		for _, nr := range ipcSyscalls() {
			prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1}, deny)
		}
	}
	return prog
}

// ipcSyscalls are SysV IPC and POSIX message queues: objects named by a
// key or a name, not a path, that Landlock does not see.
func ipcSyscalls() []uint32 {
	return []uint32{
		unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMCTL, unix.SYS_SHMDT,
		unix.SYS_MSGGET, unix.SYS_MSGSND, unix.SYS_MSGRCV, unix.SYS_MSGCTL,
		unix.SYS_SEMGET, unix.SYS_SEMOP, unix.SYS_SEMTIMEDOP, unix.SYS_SEMCTL,
		unix.SYS_MQ_OPEN, unix.SYS_MQ_UNLINK, unix.SYS_MQ_TIMEDSEND, unix.SYS_MQ_TIMEDRECEIVE,
		unix.SYS_MQ_NOTIFY, unix.SYS_MQ_GETSETATTR,
	}
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
func loadFilter(prog []bpf.Instruction, listener bool) (int, error) {
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return -1, fmt.Errorf("assembling the seccomp filter: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(raw)), Filter: (*unix.SockFilter)(unsafe.Pointer(&raw[0]))}
	const seccompSetModeFilter = 1
	var flags uintptr
	if listener {
		// Once wrun has received a notification, only a fatal signal
		// interrupts the wait for its answer: a mediated call is performed
		// by the hands, and a restart after a signal would perform it twice.
		flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | seccompFilterFlagWaitKillableRecv
	}
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, seccompSetModeFilter, flags, uintptr(unsafe.Pointer(&fprog)))
	if errno == unix.EINVAL && listener {
		// A kernel before 5.19 has no such flag.
		flags &^= seccompFilterFlagWaitKillableRecv
		fd, _, errno = unix.Syscall(unix.SYS_SECCOMP, seccompSetModeFilter, flags, uintptr(unsafe.Pointer(&fprog)))
	}
	if errno != 0 {
		return -1, fmt.Errorf("loading the seccomp filter: %w", errno)
	}
	if !listener {
		return -1, nil
	}
	return int(fd), nil
}

// plantRules refuses (EPERM) making symbolic links, and FIFOs or socket
// nodes with mknod (regular files and devices fall through: the latter
// need a capability the child lacks). The accumulator holds the system
// call number on entry and on exit.
func plantRules() []bpf.Instruction {
	deny := bpf.RetConstant{Val: retEPERM}
	calls := append([]argumentCall{{nr: unix.SYS_SYMLINKAT, kind: "link", mode: -1}, {nr: unix.SYS_MKNODAT, kind: "mode", mode: 2}}, archPlantCalls()...)
	var prog []bpf.Instruction
	for _, c := range calls {
		if c.mode < 0 {
			prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: c.nr, SkipFalse: 1}, deny)
			continue
		}
		code := []bpf.Instruction{
			bpf.LoadAbsolute{Off: uint32(offArgs + 8*c.mode), Size: 4},
			bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: unix.S_IFMT},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.S_IFIFO, SkipFalse: 1}, deny,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.S_IFSOCK, SkipFalse: 1}, deny,
			bpf.LoadAbsolute{Off: offNr, Size: 4},
		}
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: c.nr, SkipFalse: uint8(len(code))})
		prog = append(prog, code...)
	}
	return prog
}

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
	// DenyUnix: AF_UNIX sockets may not be created either (socketpair
	// still works). Used where Landlock cannot confine connect() to
	// pathname sockets (ABI < 9).
	DenyUnix bool `json:"deny_unix,omitempty"`
	// Observe sends mutating file system calls, connect and bind to the
	// observer (which lets them continue), and refused socket families too
	// (which it answers with EPERM), so that denials are reported.
	Observe bool `json:"observe,omitempty"`
}

// Offsets into struct seccomp_data. Arguments are 64-bit; the kernel
// truncates int-typed ones (socket family, ioctl request) to 32 bits, so the
// filter compares only the low word, or setting high bits would bypass it.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16 // args[i] low word at offArgs+8*i on little-endian machines
)

// Return values.
const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
)

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
		unix.SYS_QUOTACTL,
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
	if spec.Observe {
		prog = append(prog, observeFilter(observedCalls())...)
	}
	return append(prog, bpf.RetConstant{Val: retAllow})
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
		flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
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

//go:build linux && amd64

package linux

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_X86_64
	// x32Bit marks x32-ABI system call numbers, which the filter refuses
	// wholesale so that no call can slip past it under another number.
	x32Bit = 0x40000000
)

var archDenied = []uint32{unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_USELIB, unix.SYS__SYSCTL, unix.SYS_LOOKUP_DCOOKIE}

// archArgumentCalls are the legacy calls of x86-64 that take a mode.
func archArgumentCalls() []argumentCall {
	return []argumentCall{
		{nr: unix.SYS_CHMOD, kind: "mode", mode: 1, chmod: true},
		{nr: unix.SYS_MKNOD, kind: "mode", mode: 1, mknod: true},
		{nr: unix.SYS_OPEN, kind: "open", flags: 1, mode: 2},
		// creat is open(O_CREAT|O_WRONLY|O_TRUNC): its mode always counts.
		{nr: unix.SYS_CREAT, kind: "mode", mode: 1},
	}
}

// archPlantCalls are x86-64's legacy calls that make a symbolic link
// (mode < 0) or a node of the type in its mode argument.
func archPlantCalls() []argumentCall {
	return []argumentCall{{nr: unix.SYS_SYMLINK, kind: "link", mode: -1}, {nr: unix.SYS_MKNOD, kind: "mode", mode: 1}}
}

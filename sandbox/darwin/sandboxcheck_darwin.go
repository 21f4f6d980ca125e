//go:build darwin

package darwin

import (
	"os"
	"syscall"
	_ "unsafe" // go:linkname
)

// sandboxCheck asks libsystem_sandbox whether this process runs inside a
// Seatbelt sandbox: sandbox_check(pid, NULL, SANDBOX_FILTER_NONE), as
// WebKit asks it. It returns 1 when sandboxed, 0 when not, -1 when the
// question failed. No process is started: the call goes through the same
// libSystem trampoline the syscall package uses, without cgo.
func sandboxCheck() int32 {
	r, _, _ := syscallSyscall(libcSandboxCheckTrampolineAddr, uintptr(os.Getpid()), 0, 0)
	return int32(r)
}

// syscallSyscall calls a libSystem function through its trampoline (the
// runtime's syscall.syscall, which x/sys/unix calls the same way).
//
//go:linkname syscallSyscall syscall.syscall
func syscallSyscall(fn, a1, a2, a3 uintptr) (r1, r2 uintptr, err syscall.Errno)

// libcSandboxCheckTrampolineAddr is the address of the trampoline in
// sandboxcheck_darwin.s that jumps to libSystem's sandbox_check.
var libcSandboxCheckTrampolineAddr uintptr

//go:cgo_import_dynamic libc_sandbox_check sandbox_check "/usr/lib/libSystem.B.dylib"

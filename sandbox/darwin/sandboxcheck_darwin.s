// A trampoline into libSystem's sandbox_check, for sandboxcheck_darwin.go:
// the same on amd64 and arm64.

#include "textflag.h"

TEXT libc_sandbox_check_trampoline<>(SB),NOSPLIT,$0-0
	JMP	libc_sandbox_check(SB)

GLOBL	·libcSandboxCheckTrampolineAddr(SB), RODATA, $8
DATA	·libcSandboxCheckTrampolineAddr(SB)/8, $libc_sandbox_check_trampoline<>(SB)

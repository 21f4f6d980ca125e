//go:build linux && arm64

package linux

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	x32Bit    = 0
)

var archDenied = []uint32{unix.SYS_LOOKUP_DCOOKIE}

// archArgumentCalls: arm64 has no legacy calls that take a mode.
func archArgumentCalls() []argumentCall { return nil }

// archPlantCalls: arm64 has no legacy symlink or mknod.
func archPlantCalls() []argumentCall { return nil }

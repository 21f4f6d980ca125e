//go:build linux && arm64

package linux

import "golang.org/x/sys/unix"

// observedCalls are the file system and socket calls the observer sees on
// this architecture (see observe_amd64.go for the layout string).
func observedCalls() []observedCall {
	return []observedCall{
		call(unix.SYS_OPENAT, opOpen, "dpf"),
		call(unix.SYS_OPENAT2, opOpen2, "dpf"),
		call(unix.SYS_MKDIRAT, opMkdir, "dp"),
		call(unix.SYS_MKNODAT, opMknod, "dpf"),
		call(unix.SYS_UNLINKAT, opUnlink, "dpf"),
		call(unix.SYS_RENAMEAT, opRename, "dpDP"),
		call(unix.SYS_RENAMEAT2, opRename, "dpDPf"),
		call(unix.SYS_LINKAT, opLink, "dpDPf"),
		call(unix.SYS_SYMLINKAT, opSymlink, "_dp"),
		call(unix.SYS_TRUNCATE, opTruncate, "p"),
		call(unix.SYS_FCHMODAT, opChmod, "dp"),
		call(unix.SYS_FCHOWNAT, opChown, "dp"),
		call(unix.SYS_CONNECT, opConnect, "_s"),
		call(unix.SYS_BIND, opBind, "_s"),
	}
}

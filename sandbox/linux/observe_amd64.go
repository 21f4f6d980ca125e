//go:build linux && amd64

package linux

import "golang.org/x/sys/unix"

// observedCalls are the file system and socket calls the observer sees on
// this architecture. The layout string names each argument in order: d
// dirfd, p path, D second dirfd, P second path, f flags or mode, s sockaddr,
// _ anything else.
func observedCalls() []observedCall {
	return []observedCall{
		call(unix.SYS_OPEN, opOpen, "pf"),
		call(unix.SYS_OPENAT, opOpen, "dpf"),
		call(unix.SYS_OPENAT2, opOpen2, "dpf"),
		call(unix.SYS_CREAT, opCreate, "p"),
		call(unix.SYS_MKDIR, opMkdir, "p"),
		call(unix.SYS_MKDIRAT, opMkdir, "dp"),
		call(unix.SYS_MKNOD, opMknod, "pf"),
		call(unix.SYS_MKNODAT, opMknod, "dpf"),
		call(unix.SYS_UNLINK, opUnlink, "p"),
		call(unix.SYS_UNLINKAT, opUnlink, "dpf"),
		call(unix.SYS_RMDIR, opRmdir, "p"),
		call(unix.SYS_RENAME, opRename, "pP"),
		call(unix.SYS_RENAMEAT, opRename, "dpDP"),
		call(unix.SYS_RENAMEAT2, opRename, "dpDPf"),
		call(unix.SYS_LINK, opLink, "pP"),
		call(unix.SYS_LINKAT, opLink, "dpDPf"),
		call(unix.SYS_SYMLINK, opSymlink, "_p"),
		call(unix.SYS_SYMLINKAT, opSymlink, "_dp"),
		call(unix.SYS_TRUNCATE, opTruncate, "p"),
		call(unix.SYS_CHMOD, opChmod, "p"),
		call(unix.SYS_FCHMODAT, opChmod, "dp"),
		call(unix.SYS_CHOWN, opChown, "p"),
		call(unix.SYS_LCHOWN, opChown, "p"),
		call(unix.SYS_FCHOWNAT, opChown, "dp"),
		call(unix.SYS_CONNECT, opConnect, "_s"),
		call(unix.SYS_BIND, opBind, "_s"),
	}
}

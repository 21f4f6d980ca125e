//go:build linux && amd64

package linux

import "golang.org/x/sys/unix"

// archCalls are the mediated calls only x86-64 has: the legacy forms of
// the *at calls (see mediatedCalls for the layout letters).
func archCalls() []callSpec {
	return []callSpec{
		call(unix.SYS_OPEN, opOpen, "pfm"),
		call(unix.SYS_CREAT, opCreate, "pm"),
		call(unix.SYS_MKDIR, opMkdir, "pm"),
		call(unix.SYS_MKNOD, opMknod, "pm"),
		call(unix.SYS_UNLINK, opUnlink, "p"),
		call(unix.SYS_RMDIR, opRmdir, "p"),
		call(unix.SYS_RENAME, opRename, "pP"),
		call(unix.SYS_LINK, opLink, "pP"),
		call(unix.SYS_SYMLINK, opSymlink, "Tp"),
		call(unix.SYS_CHMOD, opChmod, "pm"),
		call(unix.SYS_CHOWN, opChown, "pug"),
		call(unix.SYS_LCHOWN, opLchown, "pug"),
		call(unix.SYS_UTIME, opUtime, "pt"),
		call(unix.SYS_UTIMES, opUtimes, "pt"),
		call(unix.SYS_FUTIMESAT, opUtimes, "dpt"),
	}
}

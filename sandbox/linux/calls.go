//go:build linux

package linux

import "golang.org/x/sys/unix"

// The file system calls the filter sends wrun (with the mediation), and
// where each keeps its arguments.

type opKind int

const (
	opOpen opKind = iota
	opOpen2
	opCreate
	opMkdir
	opMknod
	opUnlink
	opRmdir
	opRename
	opLink
	opSymlink
	opTruncate
	opChmod  // path, follows links (fchmodat2 may not)
	opFchmod // descriptor
	opChown  // path, follows links (fchownat may not)
	opLchown // path, not followed
	opFchown // descriptor
	opUtimens
	opUtime  // struct utimbuf (x86-64 utime)
	opUtimes // struct timeval[2] (utimes, futimesat)
	opSetxattr
	opLsetxattr
	opFsetxattr
	opRemovexattr
	opLremovexattr
	opFremovexattr
	opConnect
	opBind
)

// callSpec says where a call's arguments are; -1 means absent.
type callSpec struct {
	nr uint32
	op opKind
	// dirfd and path name the file (dirfd2 and path2 the second one of a
	// rename or link); flags are an open's or a rename's flags; atFlags
	// an *at call's AT_ flags; mode the mode; fd the descriptor a call
	// acts on; uid and gid a chown's; times a utime's times; target a
	// symlink's target; name, value and size an xattr's; sockarg a
	// socket address (and its length after it).
	dirfd, path, dirfd2, path2, flags, atFlags, mode, fd, uid, gid, times, target, name, value, size, sockarg, length int
}

// call makes a callSpec from a layout: one letter per argument, in order.
//
//	d dirfd       p path         D second dirfd   P second path
//	f flags       a AT_ flags    m mode           F descriptor
//	u uid         g gid          t times          T symlink target
//	n xattr name  v xattr value  z xattr size     x xattr flags
//	s sockaddr    l length       _ anything else
func call(nr uintptr, op opKind, layout string) callSpec {
	c := callSpec{nr: uint32(nr), op: op, dirfd: -1, path: -1, dirfd2: -1, path2: -1, flags: -1, atFlags: -1,
		mode: -1, fd: -1, uid: -1, gid: -1, times: -1, target: -1, name: -1, value: -1, size: -1, sockarg: -1, length: -1}
	for i, ch := range layout {
		switch ch {
		case 'd':
			c.dirfd = i
		case 'p':
			c.path = i
		case 'D':
			c.dirfd2 = i
		case 'P':
			c.path2 = i
		case 'f', 'x':
			c.flags = i
		case 'a':
			c.atFlags = i
		case 'm':
			c.mode = i
		case 'F':
			c.fd = i
		case 'u':
			c.uid = i
		case 'g':
			c.gid = i
		case 't':
			c.times = i
		case 'T':
			c.target = i
		case 'n':
			c.name = i
		case 'v':
			c.value = i
		case 'z':
			c.size = i
		case 's':
			c.sockarg = i
		case 'l':
			c.length = i
		}
	}
	return c
}

// mediatedCalls are the file system calls the filter sends wrun with the
// mediation, on this architecture.
func mediatedCalls() []callSpec {
	calls := []callSpec{
		call(unix.SYS_OPENAT, opOpen, "dpfm"),
		call(unix.SYS_OPENAT2, opOpen2, "dp__"),
		call(unix.SYS_MKDIRAT, opMkdir, "dpm"),
		call(unix.SYS_MKNODAT, opMknod, "dpm_"),
		call(unix.SYS_UNLINKAT, opUnlink, "dpa"),
		call(unix.SYS_RENAMEAT, opRename, "dpDP"),
		call(unix.SYS_RENAMEAT2, opRename, "dpDPf"),
		call(unix.SYS_LINKAT, opLink, "dpDPa"),
		call(unix.SYS_SYMLINKAT, opSymlink, "Tdp"),
		call(unix.SYS_TRUNCATE, opTruncate, "pl"),
		call(unix.SYS_FCHMODAT, opChmod, "dpm"),
		call(unix.SYS_FCHMODAT2, opChmod, "dpma"),
		call(unix.SYS_FCHMOD, opFchmod, "Fm"),
		call(unix.SYS_FCHOWNAT, opChown, "dpuga"),
		call(unix.SYS_FCHOWN, opFchown, "Fug"),
		call(unix.SYS_UTIMENSAT, opUtimens, "dpta"),
		call(unix.SYS_SETXATTR, opSetxattr, "pnvzx"),
		call(unix.SYS_LSETXATTR, opLsetxattr, "pnvzx"),
		call(unix.SYS_FSETXATTR, opFsetxattr, "Fnvzx"),
		call(unix.SYS_REMOVEXATTR, opRemovexattr, "pn"),
		call(unix.SYS_LREMOVEXATTR, opLremovexattr, "pn"),
		call(unix.SYS_FREMOVEXATTR, opFremovexattr, "Fn"),
	}
	return append(calls, archCalls()...)
}

// Calls wrun refuses outright under the mediation, as a kernel without
// them would: setxattrat and removexattrat (Linux 6.13) take their
// arguments in a structure; the C library falls back to the older calls.
func refusedNewCalls() []uint32 {
	return []uint32{sysSetxattrat, sysRemovexattrat}
}

// System call numbers x/sys does not have yet.
const (
	sysSetxattrat    = 463
	sysRemovexattrat = 466
	sysOpenTreeAttr  = 467
	sysFileSetattr   = 469
)

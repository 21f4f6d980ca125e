//go:build linux

package linux

import (
	"encoding/binary"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/access"
)

// The metadata calls: chmod, chown, utimes and the xattr family. Landlock
// has no hook for them, so none may continue: wrun performs each, on the
// file it resolved, inside the write scope only, and never on a protected
// path or inode (mediation.go has the rest of the design).

// metaKind is the access model's operation of a metadata call.
func metaKind(op opKind) string {
	switch op {
	case opChmod, opFchmod:
		return access.OpChmod
	case opChown, opLchown, opFchown:
		return access.OpChown
	case opUtimens, opUtime, opUtimes:
		return access.OpUtime
	}
	return access.OpXattr
}

// maxXattr bounds an xattr value copied from the command (the kernel's
// XATTR_SIZE_MAX).
const maxXattr = 64 << 10

// metadata handles one metadata call.
func (s *supervisor) metadata(c *notice, spec callSpec) {
	args := c.args()
	kind := metaKind(spec.op)
	follow := true
	switch spec.op {
	case opLchown, opLsetxattr, opLremovexattr:
		follow = false
	}
	var atFlags uint32
	if spec.atFlags >= 0 {
		atFlags = uint32(args[spec.atFlags])
		if atFlags&unix.AT_SYMLINK_NOFOLLOW != 0 {
			follow = false
		}
	}
	fdNum := -1
	if spec.fd >= 0 {
		fdNum = int(int32(args[spec.fd]))
	}
	var path string
	if fdNum < 0 {
		if spec.op == opUtimens && args[spec.path] == 0 {
			fdNum = int(int32(args[spec.dirfd])) // utimensat(fd, NULL, ...): the descriptor itself
		} else {
			p, err := c.path(spec.path)
			if err != nil {
				c.answer(-1, unix.EFAULT)
				return
			}
			path = p
			if n, ok := procFDPath(path, c.tid, c.tgid); ok {
				fdNum = n
			} else if path == "" && atFlags&unix.AT_EMPTY_PATH != 0 {
				fdNum = int(int32(args[spec.dirfd]))
			} else if path == "" {
				c.answer(-1, unix.ENOENT)
				return
			}
		}
	}
	var e entry
	var st unix.Stat_t
	if fdNum >= 0 {
		t, err := c.fdPath(fdNum)
		if err != nil {
			c.answer(-1, errnoOf(err))
			return
		}
		if err := unix.Fstat(t, &st); err != nil {
			c.answer(-1, errnoOf(err))
			return
		}
		where, err := fdPath(t)
		if err != nil {
			c.answer(-1, errnoOf(err))
			return
		}
		if !strings.HasPrefix(where, "/") {
			// A pipe, a socket, an anonymous inode: no file anyone opens
			// by name later. The call is made on it as it is.
			s.metaOn(c, spec, kind, t, st, entry{dir: -1}, true)
			return
		}
		if strings.HasSuffix(where, " (deleted)") {
			if st.Nlink == 0 {
				s.metaOn(c, spec, kind, t, st, entry{dir: -1}, true)
				return
			}
			c.answer(-1, unix.EPERM)
			return
		}
		e, err = resolveEntry(unix.AT_FDCWD, where, false)
		if err != nil {
			c.answer(-1, unix.EPERM)
			return
		}
		c.hold(e.dir)
		now, ok, _ := e.stat()
		if !ok || idOf(&now) != idOf(&st) {
			c.answer(-1, unix.EAGAIN) // moved meanwhile: the command may try again
			return
		}
		follow = true // the descriptor's file itself
	} else {
		start, err := c.start(spec.dirfd)
		if err != nil {
			c.answer(-1, errnoOf(err))
			return
		}
		e, err = resolveEntry(start, path, follow)
		if err != nil {
			if err == errNotPlain {
				err = unix.EPERM
			}
			c.answer(-1, errnoOf(err))
			return
		}
		c.hold(e.dir)
		var ok bool
		st, ok, err = e.stat()
		if !ok {
			if err == nil {
				err = unix.ENOENT
			}
			c.answer(-1, errnoOf(err))
			return
		}
	}
	if s.dev.ownsEntry(e, &st) {
		s.metaOn(c, spec, kind, -1, st, e, follow)
		return
	}
	if _, ok := s.guard.refuses(e, &st); ok {
		c.answer(-1, unix.EPERM)
		s.record(c, kind, e.path(), "", access.RightMetadata)
		return
	}
	// Beneath a directory approved while the command runs (hold.go) the
	// grant's model does not know of it: Landlock has no hook for these
	// calls, so the check is wrun's alone either way.
	if missing := s.exact.Check(access.Op{Kind: kind, Path: e.path()}); len(missing) > 0 && s.wide.covering(missing) == nil {
		s.refuse(c, unix.EPERM, kind, missing)
		return
	}
	s.metaOn(c, spec, kind, -1, st, e, follow)
}

// metaOn performs the metadata call on the checked file: t, a descriptor
// of wrun's (anonymous: the call's own descriptor), or the entry e, whose
// file is st. follow: a symbolic link at e is the call's target itself
// only when false.
func (s *supervisor) metaOn(c *notice, spec callSpec, kind string, t int, st unix.Stat_t, e entry, follow bool) {
	args := c.args()
	isLink := st.Mode&unix.S_IFMT == unix.S_IFLNK
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	var do func(fd int) error
	switch spec.op {
	case opChmod, opFchmod:
		mode := uint32(args[spec.mode]) & 0o7777
		if mode&unix.S_ISUID != 0 || mode&unix.S_ISGID != 0 && !isDir {
			s.refuseSetID(c, access.OpChmod, e.path(), mode)
			return
		}
		if isLink && !follow {
			c.answer(-1, unix.EOPNOTSUPP) // a link's mode cannot change
			return
		}
		do = func(fd int) error { return unix.Fchmodat(unix.AT_FDCWD, selfFD(fd), mode, 0) }
	case opChown, opLchown, opFchown:
		uid, gid := int(int32(args[spec.uid])), int(int32(args[spec.gid]))
		do = func(fd int) error {
			if isLink && !follow && e.dir >= 0 {
				return unix.Fchownat(e.dir, e.name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
			}
			return unix.Fchownat(unix.AT_FDCWD, selfFD(fd), uid, gid, 0)
		}
	case opUtimens, opUtime, opUtimes:
		ts, err := readTimes(c, spec)
		if err != nil {
			c.answer(-1, errnoOf(err))
			return
		}
		do = func(fd int) error {
			if isLink && !follow && e.dir >= 0 {
				return utimensat(e.dir, e.name, ts, unix.AT_SYMLINK_NOFOLLOW)
			}
			return utimensat(unix.AT_FDCWD, selfFD(fd), ts, 0)
		}
	case opSetxattr, opLsetxattr, opFsetxattr:
		name, err := c.mem.readString(args[spec.name], 256)
		if err != nil {
			c.answer(-1, unix.ERANGE)
			return
		}
		size := args[spec.size]
		if size > maxXattr {
			c.answer(-1, unix.E2BIG)
			return
		}
		value := make([]byte, size)
		if size > 0 {
			if err := c.mem.read(args[spec.value], value); err != nil {
				c.answer(-1, unix.EFAULT)
				return
			}
		}
		flags := int(int32(args[spec.flags]))
		if isLink && !follow {
			c.answer(-1, unix.EPERM) // user xattrs are not allowed on links
			return
		}
		do = func(fd int) error { return unix.Setxattr(selfFD(fd), name, value, flags) }
	default: // the removexattr family
		name, err := c.mem.readString(args[spec.name], 256)
		if err != nil {
			c.answer(-1, unix.ERANGE)
			return
		}
		if isLink && !follow {
			c.answer(-1, unix.EPERM)
			return
		}
		do = func(fd int) error { return unix.Removexattr(selfFD(fd), name) }
	}
	var perr error
	if !s.perform(c, func() {
		fd := t
		if fd < 0 {
			var err error
			fd, err = unix.Openat(e.dir, e.name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				perr = err
				return
			}
			defer unix.Close(fd)
			var now unix.Stat_t
			if err := unix.Fstat(fd, &now); err != nil || idOf(&now) != idOf(&st) {
				perr = unix.EAGAIN // replaced meanwhile
				return
			}
		}
		perr = do(fd)
	}) {
		return
	}
	if perr != nil {
		c.answer(-1, errnoOf(perr))
		return
	}
	c.answer(0, 0)
}

// readTimes reads a utime call's times as struct timespec[2] (nil: now).
func readTimes(c *notice, spec callSpec) (*[2]unix.Timespec, error) {
	ptr := c.args()[spec.times]
	if ptr == 0 {
		return nil, nil
	}
	ne := binary.NativeEndian
	switch spec.op {
	case opUtime: // struct utimbuf: actime, modtime (seconds)
		var b [16]byte
		if err := c.mem.read(ptr, b[:]); err != nil {
			return nil, unix.EFAULT
		}
		return &[2]unix.Timespec{{Sec: int64(ne.Uint64(b[0:]))}, {Sec: int64(ne.Uint64(b[8:]))}}, nil
	case opUtimes: // struct timeval[2]
		var b [32]byte
		if err := c.mem.read(ptr, b[:]); err != nil {
			return nil, unix.EFAULT
		}
		tv := func(o int) unix.Timespec {
			usec := int64(ne.Uint64(b[o+8:]))
			if usec < 0 || usec >= 1000000 {
				usec = -1 // refused below
			}
			return unix.Timespec{Sec: int64(ne.Uint64(b[o:])), Nsec: usec * 1000}
		}
		t := [2]unix.Timespec{tv(0), tv(16)}
		if t[0].Nsec < 0 || t[1].Nsec < 0 {
			return nil, unix.EINVAL
		}
		return &t, nil
	}
	var b [32]byte
	if err := c.mem.read(ptr, b[:]); err != nil {
		return nil, unix.EFAULT
	}
	return &[2]unix.Timespec{
		{Sec: int64(ne.Uint64(b[0:])), Nsec: int64(ne.Uint64(b[8:]))},
		{Sec: int64(ne.Uint64(b[16:])), Nsec: int64(ne.Uint64(b[24:]))},
	}, nil
}

// utimensat is utimensat(2) with times that may be nil (now).
func utimensat(dir int, path string, ts *[2]unix.Timespec, flags int) error {
	if ts == nil {
		now := [2]unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
		return unix.UtimesNanoAt(dir, path, now[:], flags)
	}
	return unix.UtimesNanoAt(dir, path, ts[:], flags)
}

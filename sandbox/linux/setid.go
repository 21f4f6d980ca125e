//go:build linux

package linux

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/access"
)

// Setuid and setgid bits. The filter refuses every call that would set
// them (chmod, creating a file or a node with them); where wrun holds the
// listener it sends those calls here instead, so that each refusal is
// reported as a denial (the run's summary never fails a test silently)
// and so that the one harmless case works: S_ISGID on a directory, which
// only makes new entries inherit its group (test suites set it, and
// tools such as mkdir -p --mode=2775). What is dangerous is the bit on a
// file, which runs with the file's owner or group when another user
// executes it, after the run: that stays refused.
//
// Telling a directory from a file must not race: the child could swap one
// for the other between a check and the call. So the call is never let
// continue: the hands (hands.go), which has the child's credentials,
// namespaces and Landlock domain, opens the target as the call would
// find it, checks that the descriptor is a directory and changes the mode
// of that descriptor. Without the hands (no mediation on this kernel)
// the directory's bit is refused too, with the same denial.

// setidCall says how a call the filter sent here for its mode bits reads:
// the mode, whether it changes an existing file's mode (a chmod), and for
// a chmod where the path and dirfd are (path < 0: fchmod on a
// descriptor).
type setidCall struct {
	mode        uint32
	chmod       bool
	dirfd, path int
	flags       int    // the argument with fchmodat2's flags, or -1
	op          string // the denial's operation (access.Op*)
}

// setidCallOf decodes a notification the filter sent for its mode bits,
// or reports that it is not one.
func setidCallOf(nr uint32, args [6]uint64) (setidCall, bool) {
	arg := func(i int) uint32 { return uint32(args[i]) }
	var c setidCall
	switch nr {
	case unix.SYS_FCHMOD:
		c = setidCall{mode: arg(1), chmod: true, dirfd: 0, path: -1, flags: -1, op: access.OpChmod}
	case unix.SYS_FCHMODAT:
		c = setidCall{mode: arg(2), chmod: true, dirfd: 0, path: 1, flags: -1, op: access.OpChmod}
	case unix.SYS_FCHMODAT2:
		c = setidCall{mode: arg(2), chmod: true, dirfd: 0, path: 1, flags: 3, op: access.OpChmod}
	case unix.SYS_MKNODAT:
		c = setidCall{mode: arg(2), dirfd: 0, path: 1, flags: -1, op: access.OpMknod}
	case unix.SYS_OPENAT:
		if arg(2)&openCreates == 0 {
			return c, false
		}
		c = setidCall{mode: arg(3), dirfd: 0, path: 1, flags: -1, op: access.OpCreate}
	default:
		found := false
		for _, a := range archArgumentCalls() {
			if a.nr != nr {
				continue
			}
			if a.kind == "open" && arg(a.flags)&openCreates == 0 {
				return c, false
			}
			c = setidCall{mode: arg(a.mode), chmod: a.chmod, dirfd: -1, path: 0, flags: -1, op: access.OpCreate}
			switch {
			case a.chmod:
				c.op = access.OpChmod
			case a.kind == "mode" && a.mknod:
				c.op = access.OpMknod
			}
			found = true
		}
		if !found {
			return c, false
		}
	}
	return c, c.mode&modeSetID != 0
}

// dirOnly: the mode sets S_ISGID but not S_ISUID, the one case a
// directory may have.
func (c setidCall) dirOnly() bool { return c.mode&unix.S_ISUID == 0 && c.mode&unix.S_ISGID != 0 }

// handleSetID answers a call the filter sent for its setuid or setgid
// bits: with viaHands, a chmod setting S_ISGID alone is made by the hands
// when the target is a directory; everything else is refused with EPERM
// and a denial naming the file.
func (o *observer) handleSetID(n *seccompNotif, sc setidCall, viaHands bool) {
	pid := int(n.PID)
	var ret int64
	errno := unix.EPERM
	path := ""
	made := false
	if viaHands && sc.chmod && sc.dirOnly() {
		c := &mediation{o: o, n: n, pid: pid, pidfd: -1, mem: procMemory(n.PID)}
		func() {
			defer func() {
				if recover() != nil {
					ret, errno = -1, unix.EPERM
				}
			}()
			var refused string
			ret, errno, refused = c.chmodDir(sc)
			path = refused
			made = refused == ""
		}()
		for _, fd := range c.taken {
			unix.Close(fd)
		}
		if c.pidfd >= 0 {
			unix.Close(c.pidfd)
		}
	}
	if made {
		o.answer(n.ID, ret, errno)
		return
	}
	if path == "" {
		path = setidPath(pid, sc, &n.Data)
	}
	prog := programOf(pid)
	o.answer(n.ID, -1, unix.EPERM)
	o.recordAs(pid, prog, sc.op, path, fmt.Sprintf("mode %#o", sc.mode&0o7777), access.RightSetID)
}

// setidPath names the file a refused call is about, for the denial:
// read from the child's memory, so only for the report.
func setidPath(pid int, sc setidCall, d *seccompData) string {
	mem := procMemory(pid)
	dirfd := unix.AT_FDCWD
	if sc.dirfd >= 0 {
		dirfd = int(int32(d.Args[sc.dirfd]))
	}
	if sc.path < 0 {
		p, err := mem.readLink(dirfd)
		if err != nil {
			return ""
		}
		return mem.view(p)
	}
	p, err := readPath(mem, dirfd, uintptr(d.Args[sc.path]))
	if err != nil {
		return ""
	}
	return p
}

// chmodDir has the hands make a chmod that sets S_ISGID alone, if its
// target is a directory. It returns the call's result, or the path of a
// target that is not a directory (refused: the caller records it).
func (c *mediation) chmodDir(sc setidCall) (int64, unix.Errno, string) {
	pidfd, err := unix.PidfdOpen(c.pid, unix.PIDFD_THREAD)
	if err != nil {
		return -1, unix.EPERM, ""
	}
	c.pidfd = pidfd
	if !c.valid() {
		return -1, unix.EINTR, ""
	}
	args := c.n.Data.Args
	r := request{op: handsChmod, cwd: -1, flags: int(sc.mode & 0o7777)}
	dirfd := unix.AT_FDCWD
	if sc.dirfd >= 0 {
		dirfd = int(int32(args[sc.dirfd]))
	}
	if sc.path >= 0 {
		p, err := c.mem.readString(uintptr(args[sc.path]))
		if err != nil {
			return -1, unix.EFAULT, ""
		}
		r.data = []byte(p)
		if sc.flags >= 0 {
			fl := int(int32(args[sc.flags]))
			if fl&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
				return -1, unix.EINVAL, ""
			}
			if fl&unix.AT_SYMLINK_NOFOLLOW != 0 {
				r.flags |= handsChmodNoFollow
			}
			if fl&unix.AT_EMPTY_PATH != 0 {
				r.flags |= handsChmodEmptyPath
			}
		}
	} else {
		r.flags |= handsChmodFD
	}
	if dirfd == unix.AT_FDCWD {
		// The caller's working directory; an absolute path ignores it.
		cwd, err := unix.Open("/proc/"+strconv.Itoa(c.pid)+"/cwd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, unix.EPERM, ""
		}
		c.taken = append(c.taken, cwd)
		r.sock = cwd
	} else {
		fd, err := c.take(dirfd)
		if err != nil {
			return -1, unix.EBADF, ""
		}
		r.sock = fd
	}
	if !c.valid() {
		return -1, unix.EINTR, ""
	}
	a := c.o.med.call(r)
	return a.ret, a.errno, a.outside
}

// Flags of a handsChmod request, above the mode's bits.
const (
	handsChmodFD        = 1 << 16 // fchmod: the descriptor itself
	handsChmodNoFollow  = 1 << 17 // AT_SYMLINK_NOFOLLOW
	handsChmodEmptyPath = 1 << 18 // AT_EMPTY_PATH
)

// chmodDir is the hands' half: base is the caller's descriptor (fchmod),
// or the directory a relative path starts from; path is the path the call
// named. The target is opened once, as the call would find it, and its
// mode changed only when that descriptor is a directory; otherwise the
// answer is EPERM and the target's path, for the denial.
func (h *hands) chmodDir(base int, path []byte, flags uint32) (int, unix.Errno, string) {
	mode := flags & 0o7777
	fd := base
	switch {
	case flags&handsChmodFD != 0:
		// fchmod on an O_PATH descriptor is EBADF, as the kernel says.
		fl, err := unix.FcntlInt(uintptr(base), unix.F_GETFL, 0)
		if err != nil || fl&unix.O_PATH != 0 {
			return -1, unix.EBADF, ""
		}
	case len(path) == 0 && flags&handsChmodEmptyPath != 0:
	case len(path) == 0:
		return -1, unix.ENOENT, ""
	default:
		of := unix.O_PATH | unix.O_CLOEXEC
		if flags&handsChmodNoFollow != 0 {
			of |= unix.O_NOFOLLOW
		}
		t, err := unix.Openat(base, string(path), of, 0)
		if err != nil {
			return -1, errnoOf(err), ""
		}
		defer unix.Close(t)
		fd = t
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return -1, errnoOf(err), ""
	}
	self := "/proc/self/fd/" + strconv.Itoa(fd)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
	case unix.S_IFLNK:
		return -1, unix.EOPNOTSUPP, "" // a link's mode cannot change (fchmodat2)
	default:
		name, err := os.Readlink(self)
		if err != nil || name == "" {
			name = string(path)
		}
		return -1, unix.EPERM, name
	}
	// The descriptor checked is the file changed: chmod through its
	// /proc link, with the child's credentials and on its mount.
	if err := unix.Chmod(self, mode); err != nil {
		return -1, errnoOf(err), ""
	}
	return 0, 0, ""
}

// handleOpenat2 answers openat2, which the filter cannot check (its flags
// and mode sit in memory, so a file could be created with setid bits):
// ENOSYS, as on a kernel without it, so callers fall back to openat; and
// the refusal is recorded, so a program that needs it is not left without
// a reason. The path is read for the report only.
func (o *observer) handleOpenat2(n *seccompNotif) {
	pid := int(n.PID)
	path := ""
	if c, ok := o.calls[unix.SYS_OPENAT2]; ok && c.dirfd >= 0 && c.path >= 0 {
		if p, err := readPath(procMemory(n.PID), int(int32(n.Data.Args[c.dirfd])), uintptr(n.Data.Args[c.path])); err == nil {
			path = p
		}
	}
	prog := programOf(pid)
	o.answer(n.ID, -1, unix.ENOSYS)
	o.recordAs(pid, prog, access.OpOpen, path, "", access.RightOpenat2)
}

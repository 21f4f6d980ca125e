//go:build linux

package linux

import (
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/policy"
)

// The sandbox's own pseudo-terminals and POSIX shared memory, without a
// mount namespace to give it a devpts and a /dev/shm of its own.
//
// /dev/pts and /dev/shm are hidden from the command (the terminals of the
// user's other sessions, the shared memory of the user's other programs).
// wrun performs every open of /dev/ptmx, records the number of the
// terminal each made (with its inode's change time, so that a number the
// kernel gives again to a terminal outside is not taken for it), and
// opens /dev/pts/N for the command only for a terminal the sandbox made.
// In /dev/shm it makes what the command creates (shm_open, sem_open) and
// records each inode; it opens, links, renames and removes only those,
// and removes the ones left after the run, as a private /dev/shm would
// vanish.

// privateDevice is a device path the performers need rules for.
type privateDevice struct {
	path   string
	access policy.Access
	why    string
}

// privateDevices are the paths the mediation opens for the command.
func privateDevices() []privateDevice {
	tty := policy.ReadFile | policy.WriteFile | policy.IoctlDev
	return []privateDevice{
		{"/dev/ptmx", tty, "new pseudo-terminals of the sandbox's own"},
		{"/dev/pts", tty, "the pseudo-terminals the sandbox made"},
		{"/dev/shm", policy.ReadFile | policy.WriteFile | policy.Truncate | policy.MakeReg | policy.RemoveFile | policy.Refer,
			"POSIX shared memory and semaphores the sandbox made"},
	}
}

// maxPtys bounds the terminals the sandbox may hold at once, as a devpts
// instance's max=256 would.
const maxPtys = 256

// ptyID identifies a terminal the sandbox made: its slave's inode and the
// inode's change time (devpts reuses inode numbers with the index).
type ptyID struct {
	ino   uint64
	ctime unix.Timespec
}

type devices struct {
	ptsDir, shmDir devIno
	ptmx           devIno
	mu             sync.Mutex
	ptys           map[string]ptyID
	shm            map[devIno]string // inode -> name, of what the sandbox made in /dev/shm
}

func newDevices() *devices {
	d := &devices{ptys: map[string]ptyID{}, shm: map[devIno]string{}}
	var st unix.Stat_t
	if unix.Stat("/dev/pts", &st) == nil {
		d.ptsDir = idOf(&st)
	}
	if unix.Stat("/dev/shm", &st) == nil {
		d.shmDir = idOf(&st)
	}
	if unix.Stat("/dev/ptmx", &st) == nil {
		d.ptmx = idOf(&st)
	}
	return d
}

// mayBe reports whether path, from start, can name something under /dev:
// only then is it resolved for the devices.
func mayBe(path string) bool {
	return strings.HasPrefix(path, "/dev/") || !strings.HasPrefix(path, "/")
}

// open handles an open of /dev/ptmx, /dev/pts/N or an entry of /dev/shm;
// it reports false, having done nothing, for any other path.
func (d *devices) open(c *notice, start int, path string, flags uint64) bool {
	if !mayBe(path) {
		return false
	}
	e, err := resolveEntry(start, path, flags&unix.O_NOFOLLOW == 0)
	if err != nil {
		return false
	}
	c.hold(e.dir)
	st, exists, _ := e.stat()
	s := c.s
	switch {
	case exists && idOf(&st) == d.ptmx || e.dirID == d.ptsDir && e.name == "ptmx":
		d.openPtmx(c, e, flags)
	case e.dirID == d.ptsDir && d.ptsDir != (devIno{}):
		if !exists || !d.ours(e.name, &st) {
			c.answer(-1, unix.EACCES)
			s.record(c, access.OpOpen, e.path(), "", access.RightTerminal)
			return true
		}
		var fd int
		var oerr error
		if !s.perform(c, func() {
			fd, oerr = unix.Openat(e.dir, e.name, int(flags)&^unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		}) {
			return true
		}
		if oerr != nil {
			c.answer(-1, errnoOf(oerr))
			return true
		}
		c.hold(fd)
		c.installFD(fd, flags&unix.O_CLOEXEC != 0)
	case e.dirID == d.shmDir && d.shmDir != (devIno{}):
		d.openShm(c, e, st, exists, flags)
	default:
		return false
	}
	return true
}

// openPtmx makes a new pseudo-terminal for the command and records it.
func (d *devices) openPtmx(c *notice, e entry, flags uint64) {
	s := c.s
	d.mu.Lock()
	if len(d.ptys) >= maxPtys {
		d.prune()
	}
	full := len(d.ptys) >= maxPtys
	d.mu.Unlock()
	if full {
		c.answer(-1, unix.ENOSPC)
		return
	}
	var fd int
	var oerr error
	if !s.perform(c, func() {
		fd, oerr = unix.Openat(e.dir, e.name, int(flags)&^(unix.O_CREAT|unix.O_TRUNC)|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	}) {
		return
	}
	if oerr != nil {
		c.answer(-1, errnoOf(oerr))
		return
	}
	c.hold(fd)
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err == nil {
		name := strconv.FormatUint(uint64(n), 10)
		var st unix.Stat_t
		if unix.Stat("/dev/pts/"+name, &st) == nil {
			d.mu.Lock()
			d.ptys[name] = ptyID{st.Ino, st.Ctim}
			d.mu.Unlock()
		}
	}
	c.installFD(fd, flags&unix.O_CLOEXEC != 0)
}

// adopt records the terminal at path (/dev/pts/N, made outside the
// sandbox for it: the pty relay's inner one) as the sandbox's own.
func (d *devices) adopt(path string) {
	name, ok := strings.CutPrefix(path, "/dev/pts/")
	var st unix.Stat_t
	if !ok || unix.Stat(path, &st) != nil {
		return
	}
	d.mu.Lock()
	d.ptys[name] = ptyID{st.Ino, st.Ctim}
	d.mu.Unlock()
}

// ours reports whether the terminal name (st its slave) is one the
// sandbox made.
func (d *devices) ours(name string, st *unix.Stat_t) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	id, ok := d.ptys[name]
	return ok && id.ino == st.Ino && id.ctime == st.Ctim
}

// prune forgets the terminals that are gone. d.mu is held.
func (d *devices) prune() {
	for name, id := range d.ptys {
		var st unix.Stat_t
		if unix.Stat("/dev/pts/"+name, &st) != nil || st.Ino != id.ino || st.Ctim != id.ctime {
			delete(d.ptys, name)
		}
	}
}

// openShm opens, or makes, an entry of /dev/shm for the command: only one
// the sandbox made may be opened.
func (d *devices) openShm(c *notice, e entry, st unix.Stat_t, exists bool, flags uint64) {
	s := c.s
	if exists && !d.ownsEntry(e, &st) {
		c.answer(-1, unix.EACCES)
		s.record(c, access.OpOpen, e.path(), "", policy.ReadFile.String())
		return
	}
	if !exists && flags&unix.O_CREAT == 0 {
		c.answer(-1, unix.ENOENT)
		return
	}
	mode := uint32(c.args()[3]) & 0o777
	if spec, ok := s.calls[uint32(c.n.Data.Nr)]; ok && spec.mode >= 0 {
		mode = uint32(c.args()[spec.mode]) & 0o777
	}
	umask := c.umask()
	var fd int
	var oerr error
	if !s.perform(c, func() {
		s.fs.withUmask(umask, func() {
			fd, oerr = unix.Openat(e.dir, e.name, int(flags)|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY, mode)
		})
	}) {
		return
	}
	if oerr != nil {
		c.answer(-1, errnoOf(oerr))
		return
	}
	c.hold(fd)
	var now unix.Stat_t
	if unix.Fstat(fd, &now) == nil {
		d.mu.Lock()
		d.shm[idOf(&now)] = e.name
		d.mu.Unlock()
	}
	c.installFD(fd, flags&unix.O_CLOEXEC != 0)
}

// ownsEntry reports whether e (st its file) is an entry of /dev/shm the
// sandbox made.
func (d *devices) ownsEntry(e entry, st *unix.Stat_t) bool {
	if d.shmDir == (devIno{}) || e.dirID != d.shmDir {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.shm[idOf(st)]
	return ok
}

// remove handles an unlink in /dev/shm (shm_unlink, sem_unlink) or
// /dev/pts; false for any other path.
func (d *devices) remove(c *notice, start int, path string, dir bool) bool {
	if !mayBe(path) {
		return false
	}
	e, err := resolveEntry(start, path, false)
	if err != nil {
		return false
	}
	c.hold(e.dir)
	if e.dirID != d.shmDir && e.dirID != d.ptsDir || e.dirID == (devIno{}) {
		return false
	}
	st, exists, _ := e.stat()
	if !exists {
		c.answer(-1, unix.ENOENT)
		return true
	}
	if dir || !d.ownsEntry(e, &st) {
		c.answer(-1, unix.EACCES)
		c.s.record(c, access.OpUnlink, e.path(), "", policy.RemoveFile.String())
		return true
	}
	var perr error
	if !c.s.perform(c, func() { perr = unix.Unlinkat(e.dir, e.name, 0) }) {
		return true
	}
	if perr != nil {
		c.answer(-1, errnoOf(perr))
		return true
	}
	d.mu.Lock()
	if n := st.Nlink; n <= 1 {
		delete(d.shm, idOf(&st))
	}
	d.mu.Unlock()
	c.answer(0, 0)
	return true
}

// moves handles a rename or link with either side in /dev/shm: both
// sides there, the source the sandbox's (sem_open links a temporary file
// to the semaphore's name). It reports false for any other.
func (d *devices) moves(c *notice, src, dst entry) bool {
	return d.move(c, src, dst, false)
}

// links is moves for a link.
func (d *devices) links(c *notice, src, dst entry) bool {
	return d.move(c, src, dst, true)
}

func (d *devices) move(c *notice, src, dst entry, link bool) bool {
	if d.shmDir == (devIno{}) || src.dirID != d.shmDir && dst.dirID != d.shmDir {
		return false
	}
	s := c.s
	op := access.OpRename
	if link {
		op = access.OpLink
	}
	sst, sok, _ := src.stat()
	if !sok {
		c.answer(-1, unix.ENOENT)
		return true
	}
	dstSt, dok, _ := dst.stat()
	if src.dirID != d.shmDir || dst.dirID != d.shmDir || !d.ownsEntry(src, &sst) || dok && !d.ownsEntry(dst, &dstSt) {
		c.answer(-1, unix.EACCES)
		s.record(c, op, dst.path(), "", policy.MakeReg.String())
		return true
	}
	if link && dok {
		c.answer(-1, unix.EEXIST)
		return true
	}
	var perr error
	if !s.perform(c, func() {
		if link {
			perr = unix.Linkat(src.dir, src.name, dst.dir, dst.name, 0)
		} else {
			perr = unix.Renameat2(src.dir, src.name, dst.dir, dst.name, uint(uint32(c.args()[4])))
		}
	}) {
		return true
	}
	if perr != nil {
		c.answer(-1, errnoOf(perr))
		return true
	}
	c.answer(0, 0)
	return true
}

// ptyPeer handles ioctl(TIOCGPTPEER): the slave of a pseudo-terminal the
// command holds the master of, opened on the master itself.
func (s *supervisor) ptyPeer(c *notice) {
	args := c.args()
	if uint32(args[1]) != ioctlTIOCGPTPEER {
		c.continueCall()
		return
	}
	master, err := c.takeFD(int(int32(args[0])))
	if err != nil {
		// Without the master itself the C library falls back to opening
		// /dev/pts/N by name, which wrun performs.
		c.answer(-1, unix.EINVAL)
		return
	}
	flags := int(int32(args[2]))
	var fd int
	var oerr error
	if !s.perform(c, func() {
		r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(master), ioctlTIOCGPTPEER, uintptr(flags|unix.O_NOCTTY|unix.O_CLOEXEC))
		fd = int(r)
		if e != 0 {
			oerr = e
		}
	}) {
		return
	}
	if oerr != nil {
		c.answer(-1, errnoOf(oerr))
		return
	}
	c.hold(fd)
	c.installFD(fd, flags&unix.O_CLOEXEC != 0)
}

// cleanup removes what the sandbox left in /dev/shm.
func (d *devices) cleanup() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.shm) == 0 {
		return nil
	}
	dir, err := os.Open("/dev/shm")
	if err != nil {
		return nil
	}
	defer dir.Close()
	names, _ := dir.Readdirnames(-1)
	var removed []string
	for _, n := range names {
		var st unix.Stat_t
		if unix.Fstatat(int(dir.Fd()), n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		if _, ok := d.shm[idOf(&st)]; ok {
			if unix.Unlinkat(int(dir.Fd()), n, 0) == nil {
				removed = append(removed, "/dev/shm/"+n)
			}
		}
	}
	return removed
}

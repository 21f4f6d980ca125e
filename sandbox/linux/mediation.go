//go:build linux

package linux

import (
	"encoding/binary"
	"errors"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/policy"
)

// The file system calls of the mediation (see supervise.go).
//
// Carving cannot give a directory that holds a protected path (the
// workspace root, .git) the rights to make or remove entries: a right on
// a directory reaches everything beneath it, .git/config included. So the
// command's own rules leave those directories (Plan.Mediated), and every
// directory made in them during the run, without those rights, and wrun
// makes the call itself there: on the directory it resolved, after
// refusing the protected names and inodes and asking the grant's model.
// Landlock keeps refusing creates in those directories, so a call wrun
// lets continue after a racy read of its path can never create there.
//
// Every metadata call is performed (Landlock has no hook for chmod, chown,
// utimes or xattrs, so none may continue), inside the write scope only;
// so is every truncate where Landlock cannot restrict it (ABI < 3).

// fsCall handles one mediated file system call.
func (s *supervisor) fsCall(c *notice, spec callSpec) {
	switch spec.op {
	case opOpen, opCreate:
		s.open(c, spec)
	case opOpen2:
		s.open2(c, spec)
	case opMkdir, opMknod, opSymlink:
		s.make(c, spec)
	case opUnlink, opRmdir:
		s.remove(c, spec)
	case opRename:
		s.rename(c, spec)
	case opLink:
		s.link(c, spec)
	case opTruncate:
		s.truncate(c, spec)
	default:
		s.metadata(c, spec)
	}
}

// refuse answers errno and records a denial per missing right.
func (s *supervisor) refuse(c *notice, errno unix.Errno, op string, missing []access.Missing) {
	c.answer(-1, errno)
	s.recordMissing(c, op, missing)
}

// refuseProtected answers a call on a protected path.
func (s *supervisor) refuseProtected(c *notice, op, path string, right policy.Access) {
	c.answer(-1, unix.EACCES)
	s.record(c, op, path, "", right.String())
}

// continueOrPredict lets the call continue, first recording what the
// command's own rules will refuse of op (a report only: the kernel
// decides).
func (s *supervisor) continueOrPredict(c *notice, op access.Op, name string) {
	var missing []access.Missing
	if op.Kind != "" && !s.pl.Options.NoObserve {
		missing = s.kernel.Check(op)
	}
	if len(missing) > 0 {
		c.program()
	}
	c.continueCall()
	s.recordMissing(c, name, missing)
}

// perform runs f on a performer. A call for which no performer can be
// made fails with EPERM, counted for the run's warnings.
func (s *supervisor) perform(c *notice, f func()) bool {
	c.performed = true
	if err := s.perf.do(f); err != nil {
		s.mu.Lock()
		s.failed++
		s.mu.Unlock()
		c.answer(-1, unix.EPERM)
		return false
	}
	return true
}

// start resolves argument dirfd of spec (AT_FDCWD, or one -1: the caller's
// working directory) to a held descriptor.
func (c *notice) start(i int) (int, error) {
	dirfd := int32(unix.AT_FDCWD)
	if i >= 0 {
		dirfd = int32(c.args()[i])
	}
	return c.dir(dirfd)
}

// open handles open, openat and creat that write, create or truncate.
func (s *supervisor) open(c *notice, spec callSpec) {
	args := c.args()
	flags := uint64(unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC)
	if spec.flags >= 0 {
		flags = uint64(uint32(args[spec.flags]))
	}
	mode := uint32(args[spec.mode]) & 0o7777
	s.openWith(c, spec, flags, mode, false)
}

// openWith is open with the flags and mode decided; must: the call
// cannot continue (openat2), so what wrun does not perform it refuses.
func (s *supervisor) openWith(c *notice, spec callSpec, flags uint64, mode uint32, must bool) {
	if flags&unix.O_PATH != 0 && !must {
		c.continueCall() // opens nothing that writes
		return
	}
	// Below Landlock ABI 3 (no truncate right) an open that truncates
	// must be made by wrun only when it reads: O_RDONLY|O_TRUNC truncates
	// without Landlock's write check, where any open for writing passes
	// it (so /dev/stdout, a magic link, stays the kernel's to open).
	truncating := readTruncates(flags) && s.pl.attr.handledFS&llTruncate == 0
	must = must || truncating
	path, err := c.path(spec.path)
	if err != nil {
		s.failOrContinue(c, must, unix.EFAULT)
		return
	}
	start, err := c.start(spec.dirfd)
	if err != nil {
		s.failOrContinue(c, must, errnoOf(err))
		return
	}
	if s.dev.open(c, start, path, flags) {
		return
	}
	if flags&unix.O_TMPFILE == unix.O_TMPFILE {
		s.openTmpfile(c, start, path, flags, mode, must)
		return
	}
	follow := flags&unix.O_NOFOLLOW == 0 && flags&(unix.O_CREAT|unix.O_EXCL) != unix.O_CREAT|unix.O_EXCL
	e, err := resolveEntry(start, path, follow)
	if err != nil {
		if errors.Is(err, errNotPlain) {
			if p, ok := procFile(path, c.tgid, c.tid); ok && !must {
				// A file of /proc, named through self: predicted as the
				// child's own.
				s.continueOrPredict(c, access.Op{Kind: access.OpOpen, Path: p, Rights: openRights(flags)}, access.OpOpen)
				return
			}
			err = unix.EPERM
		}
		s.failOrContinue(c, must, errnoOf(err))
		return
	}
	c.hold(e.dir)
	st, exists, serr := e.stat()
	if serr != nil {
		s.failOrContinue(c, must, errnoOf(serr))
		return
	}
	var op access.Op
	switch {
	case exists:
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		op = access.Op{Kind: access.OpOpen, Path: e.path(), Rights: openRights(flags), Dir: isDir}
	case flags&unix.O_CREAT != 0:
		op = access.Op{Kind: access.OpCreate, Path: e.path(), Rights: openRights(flags) &^ policy.Truncate}
	}
	inTree := s.trees.has(e.dirID)
	if !inTree && !must {
		s.holdOrPredict(c, op, func(p *performers) { s.openHeld(c, p, e, st, exists, flags, mode, op) })
		return
	}
	if op.Kind == "" {
		c.answer(-1, unix.ENOENT)
		return
	}
	if exists && flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL {
		c.answer(-1, unix.EEXIST)
		return
	}
	if !exists && e.mustDir {
		c.answer(-1, unix.EISDIR)
		return
	}
	var stp *unix.Stat_t
	if exists {
		stp = &st
	}
	if flags&unix.O_ACCMODE != unix.O_RDONLY || flags&(unix.O_CREAT|unix.O_TRUNC) != 0 {
		if pr, ok := s.guard.refuses(e, stp); ok {
			s.refuseProtected(c, op.Kind, e.path(), policy.WriteFile)
			_ = pr
			return
		}
	}
	if missing := s.exact.Check(op); len(missing) > 0 {
		s.refuse(c, unix.EACCES, op.Kind, missing)
		return
	}
	if !exists && mode&modeSetID != 0 {
		s.refuseSetID(c, op.Kind, e.path(), mode)
		return
	}
	// The call as the command made it, on the entry resolved: the last
	// component never followed again (a link planted meanwhile fails
	// with ELOOP), no controlling terminal taken on wrun's behalf.
	oflags := int(flags&^uint64(unix.O_NOFOLLOW)) | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NOCTTY
	umask := 0
	if !exists {
		umask = c.umask()
	}
	fifo := exists && st.Mode&unix.S_IFMT == unix.S_IFIFO
	var fd int
	var oerr error
	run := func() {
		s.fs.withUmask(umask, func() { fd, oerr = unix.Openat(e.dir, e.name, oflags, mode) })
	}
	if !fifo {
		// An open that may create changes the directory: serialized with
		// the mediation's other changes. One of a FIFO may wait for a
		// reader, and changes nothing.
		s.structure.Lock()
		defer s.structure.Unlock()
	}
	if !s.perform(c, run) {
		return
	}
	if oerr != nil {
		c.answer(-1, errnoOf(oerr))
		return
	}
	c.hold(fd)
	c.installFD(fd, flags&unix.O_CLOEXEC != 0)
}

// openHeld performs, on p, an open beneath a directory approved while
// the command runs (holdOrPredict), as openWith performs one in the
// directories the mediation watches.
func (s *supervisor) openHeld(c *notice, p *performers, e entry, st unix.Stat_t, exists bool, flags uint64, mode uint32, op access.Op) {
	var stp *unix.Stat_t
	if exists {
		stp = &st
	}
	if _, ok := s.guard.refuses(e, stp); ok {
		s.refuseProtected(c, op.Kind, e.path(), policy.WriteFile)
		return
	}
	if !exists && mode&modeSetID != 0 {
		s.refuseSetID(c, op.Kind, e.path(), mode)
		return
	}
	oflags := int(flags&^uint64(unix.O_NOFOLLOW)) | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NOCTTY
	umask := 0
	if !exists {
		umask = c.umask()
	}
	var fd int
	var oerr error
	if !s.performOn(c, p, func() {
		s.fs.withUmask(umask, func() { fd, oerr = unix.Openat(e.dir, e.name, oflags, mode) })
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

// failOrContinue lets a call the kernel may decide continue (it gives
// the error the call deserves), and answers errno where it may not.
func (s *supervisor) failOrContinue(c *notice, must bool, errno unix.Errno) {
	if must {
		c.answer(-1, errno)
		return
	}
	c.continueCall()
}

// openTmpfile handles an open with O_TMPFILE: path names the directory
// the new, nameless file goes in.
func (s *supervisor) openTmpfile(c *notice, start int, path string, flags uint64, mode uint32, must bool) {
	dir, err := openDirAt(start, path)
	if err != nil {
		s.failOrContinue(c, must, errnoOf(err))
		return
	}
	c.hold(dir)
	var st unix.Stat_t
	if err := unix.Fstat(dir, &st); err != nil {
		s.failOrContinue(c, must, errnoOf(err))
		return
	}
	dirPath, err := fdPath(dir)
	if err != nil {
		s.failOrContinue(c, must, errnoOf(err))
		return
	}
	op := access.Op{Kind: access.OpCreate, Path: dirPath + "/#tmpfile", Rights: openRights(flags) &^ policy.Truncate}
	if !s.trees.has(idOf(&st)) && !must {
		s.continueOrPredict(c, op, op.Kind)
		return
	}
	if _, ok := s.guard.inode(&st); ok {
		s.refuseProtected(c, op.Kind, dirPath, policy.MakeReg)
		return
	}
	if missing := s.exact.Check(op); len(missing) > 0 {
		s.refuse(c, unix.EACCES, op.Kind, missing)
		return
	}
	if mode&modeSetID != 0 {
		s.refuseSetID(c, op.Kind, dirPath, mode)
		return
	}
	umask := c.umask()
	var fd int
	var oerr error
	if !s.perform(c, func() {
		s.fs.withUmask(umask, func() { fd, oerr = unix.Openat(dir, ".", int(flags)|unix.O_CLOEXEC, mode) })
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

// open2 handles openat2, whose flags and mode sit in memory the filter
// cannot read: it never continues (the command could change them after
// wrun read them: a setuid mode, O_TRUNC below Landlock ABI 3). wrun
// performs it with its copy. An open in a directory the mediation
// watches is performed as openat's are; any other is made by a performer
// restricted with the command's own Landlock rules (asCommand), with the
// command's resolve flags, so the kernel decides it as it would have
// decided the command's own.
func (s *supervisor) open2(c *notice, spec callSpec) {
	args := c.args()
	size := args[3]
	if size < 24 || size > 4096 {
		c.answer(-1, unix.EINVAL)
		return
	}
	b := make([]byte, size)
	if err := c.mem.read(args[2], b); err != nil {
		c.answer(-1, unix.EFAULT)
		return
	}
	for _, x := range b[24:] {
		if x != 0 {
			c.answer(-1, unix.E2BIG) // a field this kernel may know and wrun does not
			return
		}
	}
	how := unix.OpenHow{Flags: binary.NativeEndian.Uint64(b[0:]), Mode: binary.NativeEndian.Uint64(b[8:]), Resolve: binary.NativeEndian.Uint64(b[16:])}
	if how.Flags&openCreates != 0 && how.Mode&modeSetID != 0 {
		path, _ := c.path(spec.path)
		s.refuseSetID(c, access.OpCreate, path, uint32(how.Mode))
		return
	}
	if how.Resolve == 0 && how.Flags&openWriteMask != 0 && how.Flags&unix.O_PATH == 0 {
		// As openat: performed where the mediation watches, else below.
		if s.open2Watched(c, spec, how) {
			return
		}
	}
	path, err := c.path(spec.path)
	if err != nil {
		c.answer(-1, unix.EFAULT)
		return
	}
	start, err := c.start(spec.dirfd)
	if err != nil {
		c.answer(-1, errnoOf(err))
		return
	}
	// The command's /proc/self is not wrun's: no magic link is followed.
	h := unix.OpenHow{Flags: how.Flags | unix.O_CLOEXEC | unix.O_NOCTTY, Mode: how.Mode, Resolve: how.Resolve | unix.RESOLVE_NO_MAGICLINKS}
	umask := 0
	if how.Flags&openCreates != 0 {
		umask = c.umask()
	}
	var fd int
	var oerr error
	c.performed = true
	if err := s.asCmd.do(func() {
		s.fs.withUmask(umask, func() { fd, oerr = unix.Openat2(start, path, &h) })
	}); err != nil {
		c.answer(-1, unix.EPERM)
		return
	}
	if errors.Is(oerr, unix.ELOOP) && how.Resolve&(unix.RESOLVE_NO_MAGICLINKS|unix.RESOLVE_NO_SYMLINKS) == 0 {
		// A magic link the caller did not refuse: what it names is the
		// resolving process's. ENOSYS: the caller falls back to openat,
		// which resolves it as itself.
		c.answer(-1, unix.ENOSYS)
		return
	}
	if oerr != nil {
		c.answer(-1, errnoOf(oerr))
		return
	}
	c.hold(fd)
	if selfRelative(fd) {
		c.answer(-1, unix.ENOSYS)
		return
	}
	c.installFD(fd, how.Flags&unix.O_CLOEXEC != 0)
}

// selfRelative reports whether fd, opened by wrun for the command, may be
// a file whose meaning depends on who opened it: anything in /proc
// (/proc/self is wrun's there) and any character device (/dev/tty is
// wrun's terminal). The command opens those itself (openat), as itself.
func selfRelative(fd int) bool {
	var fs unix.Statfs_t
	if unix.Fstatfs(fd, &fs) != nil || fs.Type == unix.PROC_SUPER_MAGIC {
		return true
	}
	var st unix.Stat_t
	return unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT == unix.S_IFCHR
}

// open2Watched performs an openat2 without resolve flags that writes, as
// openWith does an openat, when its directory is one the mediation
// watches; it reports false, having done nothing, otherwise.
func (s *supervisor) open2Watched(c *notice, spec callSpec, how unix.OpenHow) bool {
	path, err := c.path(spec.path)
	if err != nil {
		return false
	}
	start, err := c.start(spec.dirfd)
	if err != nil {
		return false
	}
	follow := how.Flags&unix.O_NOFOLLOW == 0 && how.Flags&(unix.O_CREAT|unix.O_EXCL) != unix.O_CREAT|unix.O_EXCL
	e, err := resolveEntry(start, path, follow)
	if err != nil {
		return false
	}
	watched := s.trees.has(e.dirID)
	e.close()
	if !watched {
		return false
	}
	s.openWith(c, spec, how.Flags, uint32(how.Mode)&0o7777, true)
	return true
}

// refuseSetID refuses a setuid or setgid file: it would run as its owner
// or group for any user after the run.
func (s *supervisor) refuseSetID(c *notice, op, path string, mode uint32) {
	c.answer(-1, unix.EPERM)
	s.record(c, op, path, "mode "+octal(mode), access.RightSetID)
}

func octal(m uint32) string {
	const digits = "01234567"
	b := []byte{'0'}
	for shift := 9; shift >= 0; shift -= 3 {
		b = append(b, digits[(m>>uint(shift))&7])
	}
	return strings.TrimLeft(string(b[1:]), "0")
}

// make handles mkdir, mknod and symlink.
func (s *supervisor) make(c *notice, spec callSpec) {
	args := c.args()
	path, err := c.path(spec.path)
	if err != nil {
		c.continueCall()
		return
	}
	var target string
	if spec.op == opSymlink {
		if target, err = c.mem.readString(args[spec.target], unix.PathMax); err != nil {
			c.continueCall()
			return
		}
	}
	var mode uint32
	if spec.mode >= 0 {
		mode = uint32(args[spec.mode])
	}
	start, err := c.start(spec.dirfd)
	if err != nil {
		c.continueCall()
		return
	}
	e, err := resolveEntry(start, path, false)
	if err != nil {
		c.continueCall()
		return
	}
	c.hold(e.dir)
	var op access.Op
	switch spec.op {
	case opMkdir:
		op = access.Op{Kind: access.OpMkdir, Path: e.path()}
	case opMknod:
		op = access.Op{Kind: access.OpMknod, Path: e.path(), Rights: mknodRight(mode)}
		if mode&unix.S_IFMT == unix.S_IFREG || mode&unix.S_IFMT == 0 {
			op = access.Op{Kind: access.OpCreate, Path: e.path(), Rights: policy.WriteFile}
		}
	case opSymlink:
		op = access.Op{Kind: access.OpSymlink, Path: e.path()}
	}
	if !s.trees.has(e.dirID) {
		if _, exists, _ := e.stat(); exists {
			// The kernel answers EEXIST before it asks Landlock (mkdir -p
			// of an existing /tmp): no denial to predict.
			op = access.Op{}
		}
		s.holdOrPredict(c, op, func(p *performers) {
			if _, ok := s.guard.refuses(e, nil); ok {
				s.refuseProtected(c, op.Kind, e.path(), policy.MakeReg)
				return
			}
			if spec.op == opMkdir && mode&unix.S_ISUID != 0 || spec.op == opMknod && mode&modeSetID != 0 {
				s.refuseSetID(c, op.Kind, e.path(), mode)
				return
			}
			umask := c.umask()
			var perr error
			if !s.performOn(c, p, func() {
				s.fs.withUmask(umask, func() { perr = makeAt(spec.op, e, mode, target, int(args[3])) })
			}) {
				return
			}
			if perr != nil {
				c.answer(-1, errnoOf(perr))
				return
			}
			c.answer(0, 0)
		})
		return
	}
	s.structure.Lock()
	defer s.structure.Unlock()
	if _, exists, _ := e.stat(); exists {
		c.answer(-1, unix.EEXIST)
		return
	}
	if _, ok := s.guard.refuses(e, nil); ok {
		s.refuseProtected(c, op.Kind, e.path(), policy.MakeReg)
		return
	}
	if missing := s.exact.Check(op); len(missing) > 0 {
		s.refuse(c, unix.EACCES, op.Kind, missing)
		return
	}
	if spec.op == opMkdir && mode&unix.S_ISUID != 0 || spec.op == opMknod && mode&modeSetID != 0 {
		s.refuseSetID(c, op.Kind, e.path(), mode)
		return
	}
	umask := c.umask()
	var perr error
	if !s.perform(c, func() {
		s.fs.withUmask(umask, func() { perr = makeAt(spec.op, e, mode, target, int(args[3])) })
	}) {
		return
	}
	if perr != nil {
		c.answer(-1, errnoOf(perr))
		return
	}
	if spec.op == opMkdir {
		var st unix.Stat_t
		if unix.Fstatat(e.dir, e.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && !s.trees.add(idOf(&st)) {
			// Past the bound the directory stays, but the mediation no
			// longer makes entries in it (they fail with EACCES).
			s.record(c, op.Kind, e.path(), "", "mediation_bound")
		}
	}
	c.answer(0, 0)
}

// makeAt makes the entry e: a directory, a node (dev) or a symbolic link
// to target.
func makeAt(op opKind, e entry, mode uint32, target string, dev int) error {
	switch op {
	case opMkdir:
		return unix.Mkdirat(e.dir, e.name, mode&0o7777)
	case opMknod:
		return unix.Mknodat(e.dir, e.name, mode, dev)
	case opSymlink:
		return unix.Symlinkat(target, e.dir, e.name)
	}
	return unix.ENOSYS
}

// remove handles unlink, unlinkat and rmdir.
func (s *supervisor) remove(c *notice, spec callSpec) {
	args := c.args()
	path, err := c.path(spec.path)
	if err != nil {
		c.continueCall()
		return
	}
	dir := spec.op == opRmdir
	var atFlags uint64
	if spec.atFlags >= 0 {
		atFlags = uint64(uint32(args[spec.atFlags]))
		dir = dir || atFlags&unix.AT_REMOVEDIR != 0
	}
	start, err := c.start(spec.dirfd)
	if err != nil {
		c.continueCall()
		return
	}
	if s.dev.remove(c, start, path, dir) {
		return
	}
	e, err := resolveEntry(start, path, false)
	if err != nil {
		c.continueCall()
		return
	}
	c.hold(e.dir)
	kind := access.OpUnlink
	if dir {
		kind = access.OpRmdir
	}
	op := access.Op{Kind: kind, Path: e.path(), Dir: dir}
	if !s.trees.has(e.dirID) {
		s.holdOrPredict(c, op, func(p *performers) {
			st, exists, _ := e.stat()
			var stp *unix.Stat_t
			if exists {
				stp = &st
			}
			if _, ok := s.guard.refuses(e, stp); ok {
				s.refuseProtected(c, kind, e.path(), policy.RemoveFile)
				return
			}
			flags := 0
			if dir {
				flags = unix.AT_REMOVEDIR
			}
			var perr error
			if !s.performOn(c, p, func() { perr = unix.Unlinkat(e.dir, e.name, flags) }) {
				return
			}
			if perr != nil {
				c.answer(-1, errnoOf(perr))
				return
			}
			c.answer(0, 0)
		})
		return
	}
	s.structure.Lock()
	defer s.structure.Unlock()
	st, exists, _ := e.stat()
	if !exists {
		c.answer(-1, unix.ENOENT)
		return
	}
	if _, ok := s.guard.refuses(e, &st); ok {
		right := policy.RemoveFile
		if dir {
			right = policy.RemoveDir
		}
		s.refuseProtected(c, kind, e.path(), right)
		return
	}
	if missing := s.exact.Check(op); len(missing) > 0 {
		s.refuse(c, unix.EACCES, kind, missing)
		return
	}
	flags := 0
	if dir {
		flags = unix.AT_REMOVEDIR
	}
	var perr error
	if !s.perform(c, func() { perr = unix.Unlinkat(e.dir, e.name, flags) }) {
		return
	}
	if perr != nil {
		c.answer(-1, errnoOf(perr))
		return
	}
	if dir {
		s.trees.remove(idOf(&st))
	}
	c.answer(0, 0)
}

// rename handles rename, renameat and renameat2.
func (s *supervisor) rename(c *notice, spec callSpec) {
	args := c.args()
	var flags uint
	if spec.flags >= 0 {
		flags = uint(uint32(args[spec.flags]))
	}
	src, dst, ok := s.twoEntries(c, spec, false)
	if !ok {
		return
	}
	sst, sok, _ := src.stat()
	var op access.Op
	if sok {
		_, dok, _ := dst.stat()
		op = access.Op{Kind: access.OpRename, Path: src.path(), Dest: dst.path(), Dir: sst.Mode&unix.S_IFMT == unix.S_IFDIR,
			Replace: dok, Rights: statRight(sst.Mode)}
	}
	if s.dev.moves(c, src, dst) {
		return
	}
	if !s.trees.has(src.dirID) && !s.trees.has(dst.dirID) {
		if op.Kind == "" {
			s.continueOrPredict(c, op, access.OpRename)
			return
		}
		s.holdOrPredict(c, op, func(p *performers) {
			sst, sok, _ := src.stat()
			if !sok {
				c.answer(-1, unix.ENOENT)
				return
			}
			dst2, dok, _ := dst.stat()
			var dstp *unix.Stat_t
			if dok {
				dstp = &dst2
			}
			if _, refused := s.guard.refuses(src, &sst); refused {
				s.refuseProtected(c, access.OpRename, src.path(), policy.RemoveFile)
				return
			}
			if _, refused := s.guard.refuses(dst, dstp); refused {
				s.refuseProtected(c, access.OpRename, dst.path(), policy.MakeReg)
				return
			}
			var perr error
			if !s.performOn(c, p, func() { perr = unix.Renameat2(src.dir, src.name, dst.dir, dst.name, flags) }) {
				return
			}
			if perr != nil {
				c.answer(-1, errnoOf(perr))
				return
			}
			c.answer(0, 0)
		})
		return
	}
	s.structure.Lock()
	defer s.structure.Unlock()
	sst, sok, _ = src.stat()
	if !sok {
		c.answer(-1, unix.ENOENT)
		return
	}
	dst2, dok, _ := dst.stat()
	var dstp *unix.Stat_t
	if dok {
		dstp = &dst2
	}
	if _, refused := s.guard.refuses(src, &sst); refused {
		s.refuseProtected(c, access.OpRename, src.path(), policy.RemoveFile)
		return
	}
	if _, refused := s.guard.refuses(dst, dstp); refused {
		s.refuseProtected(c, access.OpRename, dst.path(), policy.MakeReg)
		return
	}
	op = access.Op{Kind: access.OpRename, Path: src.path(), Dest: dst.path(), Dir: sst.Mode&unix.S_IFMT == unix.S_IFDIR,
		Replace: dok, Rights: statRight(sst.Mode)}
	missing := s.exact.Check(op)
	if flags&unix.RENAME_EXCHANGE != 0 && dok {
		missing = append(missing, s.exact.Check(access.Op{Kind: access.OpRename, Path: dst.path(), Dest: src.path(),
			Dir: dst2.Mode&unix.S_IFMT == unix.S_IFDIR, Replace: true, Rights: statRight(dst2.Mode)})...)
	}
	if len(missing) > 0 {
		s.refuse(c, moveErrno(missing), access.OpRename, missing)
		return
	}
	var perr error
	if !s.perform(c, func() { perr = unix.Renameat2(src.dir, src.name, dst.dir, dst.name, flags) }) {
		return
	}
	if perr != nil {
		c.answer(-1, errnoOf(perr))
		return
	}
	if dok && dst2.Mode&unix.S_IFMT == unix.S_IFDIR && flags&unix.RENAME_EXCHANGE == 0 {
		s.trees.remove(idOf(&dst2))
	}
	c.answer(0, 0)
}

// moveErrno is the errno Landlock answers a refused rename or link with:
// EXDEV where refer is what is missing (across directories, or a move
// that would gain rights), so that tools fall back to a copy; EACCES for
// any other right.
func moveErrno(missing []access.Missing) unix.Errno {
	for _, m := range missing {
		if m.Access&^policy.Refer != 0 && m.Cause.Kind != access.CauseGain {
			return unix.EACCES
		}
	}
	return unix.EXDEV
}

// twoEntries resolves the two paths of a rename or link; followFirst
// follows a symbolic link at the first (linkat's AT_SYMLINK_FOLLOW). On
// failure it has let the call continue.
func (s *supervisor) twoEntries(c *notice, spec callSpec, followFirst bool) (entry, entry, bool) {
	p1, err1 := c.path(spec.path)
	p2, err2 := c.path(spec.path2)
	if err1 != nil || err2 != nil {
		c.continueCall()
		return entry{}, entry{}, false
	}
	s1, err1 := c.start(spec.dirfd)
	s2, err2 := c.start(spec.dirfd2)
	if err1 != nil || err2 != nil {
		c.continueCall()
		return entry{}, entry{}, false
	}
	src, err := resolveEntry(s1, p1, followFirst)
	if err != nil {
		c.continueCall()
		return entry{}, entry{}, false
	}
	c.hold(src.dir)
	dst, err := resolveEntry(s2, p2, false)
	if err != nil {
		c.continueCall()
		return entry{}, entry{}, false
	}
	c.hold(dst.dir)
	return src, dst, true
}

// link handles link and linkat.
func (s *supervisor) link(c *notice, spec callSpec) {
	args := c.args()
	var atFlags uint64
	if spec.atFlags >= 0 {
		atFlags = uint64(uint32(args[spec.atFlags]))
	}
	if atFlags&unix.AT_EMPTY_PATH != 0 {
		// The source is a descriptor: only a file made with O_TMPFILE can
		// be given a name without a capability; the kernel decides.
		c.continueCall()
		return
	}
	src, dst, ok := s.twoEntries(c, spec, atFlags&unix.AT_SYMLINK_FOLLOW != 0)
	if !ok {
		return
	}
	if s.dev.links(c, src, dst) {
		return
	}
	sst, sok, _ := src.stat()
	op := access.Op{Kind: access.OpLink, Path: src.path(), Dest: dst.path(), Rights: statRight(sst.Mode)}
	if !s.trees.has(dst.dirID) {
		if _, dexists, _ := dst.stat(); !sok || dexists {
			// ENOENT or EEXIST, answered before Landlock is asked.
			op = access.Op{}
		}
		s.holdOrPredict(c, op, func(p *performers) {
			if _, refused := s.guard.refuses(src, &sst); refused {
				s.refuseProtected(c, access.OpLink, src.path(), policy.MakeReg)
				return
			}
			if _, refused := s.guard.refuses(dst, nil); refused {
				s.refuseProtected(c, access.OpLink, dst.path(), policy.MakeReg)
				return
			}
			var perr error
			if !s.performOn(c, p, func() { perr = unix.Linkat(src.dir, src.name, dst.dir, dst.name, 0) }) {
				return
			}
			if perr != nil {
				c.answer(-1, errnoOf(perr))
				return
			}
			c.answer(0, 0)
		})
		return
	}
	s.structure.Lock()
	defer s.structure.Unlock()
	if sst, sok, _ = src.stat(); !sok {
		c.answer(-1, unix.ENOENT)
		return
	}
	if sst.Mode&unix.S_IFMT == unix.S_IFDIR {
		c.answer(-1, unix.EPERM)
		return
	}
	if _, exists, _ := dst.stat(); exists {
		c.answer(-1, unix.EEXIST)
		return
	}
	if _, refused := s.guard.refuses(src, &sst); refused {
		s.refuseProtected(c, access.OpLink, src.path(), policy.MakeReg)
		return
	}
	if _, refused := s.guard.refuses(dst, nil); refused {
		s.refuseProtected(c, access.OpLink, dst.path(), policy.MakeReg)
		return
	}
	if missing := s.exact.Check(op); len(missing) > 0 {
		s.refuse(c, moveErrno(missing), access.OpLink, missing)
		return
	}
	var perr error
	if !s.perform(c, func() { perr = unix.Linkat(src.dir, src.name, dst.dir, dst.name, 0) }) {
		return
	}
	if perr != nil {
		c.answer(-1, errnoOf(perr))
		return
	}
	c.answer(0, 0)
}

// truncate handles truncate(2).
func (s *supervisor) truncate(c *notice, spec callSpec) {
	args := c.args()
	must := s.pl.attr.handledFS&llTruncate == 0
	path, err := c.path(spec.path)
	if err != nil {
		s.failOrContinue(c, must, unix.EFAULT)
		return
	}
	start, err := c.start(-1)
	if err != nil {
		s.failOrContinue(c, must, errnoOf(err))
		return
	}
	e, err := resolveEntry(start, path, true)
	if err != nil {
		if errors.Is(err, errNotPlain) {
			err = unix.EPERM
		}
		s.failOrContinue(c, must, errnoOf(err))
		return
	}
	c.hold(e.dir)
	op := access.Op{Kind: access.OpTrunc, Path: e.path()}
	if !must && !s.trees.has(e.dirID) {
		s.holdOrPredict(c, op, func(p *performers) {
			st, exists, _ := e.stat()
			if !exists {
				c.answer(-1, unix.ENOENT)
				return
			}
			if _, ok := s.guard.refuses(e, &st); ok {
				s.refuseProtected(c, access.OpTrunc, e.path(), policy.Truncate)
				return
			}
			var perr error
			if !s.performOn(c, p, func() { perr = truncateAt(e, st, int64(args[spec.length])) }) {
				return
			}
			if perr != nil {
				c.answer(-1, errnoOf(perr))
				return
			}
			c.answer(0, 0)
		})
		return
	}
	st, exists, _ := e.stat()
	if !exists {
		c.answer(-1, unix.ENOENT)
		return
	}
	if _, ok := s.guard.refuses(e, &st); ok {
		s.refuseProtected(c, access.OpTrunc, e.path(), policy.Truncate)
		return
	}
	// Below Landlock ABI 3 truncate(2) is wrun's alone to decide, also
	// beneath a directory approved while the command runs (hold.go).
	if missing := s.exact.Check(op); len(missing) > 0 && s.wide.covering(missing) == nil {
		s.refuse(c, unix.EACCES, access.OpTrunc, missing)
		return
	}
	length := int64(args[spec.length])
	var perr error
	if !s.perform(c, func() { perr = truncateAt(e, st, length) }) {
		return
	}
	if perr != nil {
		c.answer(-1, errnoOf(perr))
		return
	}
	c.answer(0, 0)
}

// truncateAt truncates the file at e, which must still be st, to length.
func truncateAt(e entry, st unix.Stat_t, length int64) error {
	fd, err := unix.Openat(e.dir, e.name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil || idOf(&now) != idOf(&st) {
		return unix.EAGAIN
	}
	return unix.Truncate(selfFD(fd), length)
}

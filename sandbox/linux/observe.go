//go:build linux

package linux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// The observer: a seccomp user-notification filter sends the calls that
// mutate the file system (and connect/bind) to wrun, which records the ones
// the plan's own Landlock rules and mounts will refuse, then lets every call
// continue so that the kernel decides. It never decides anything itself:
// reading the arguments from another process races with that process, which
// is harmless for a report and would be fatal for a check. Read-only opens
// are filtered out in the BPF program and never reach it.

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
	opChmod
	opChown
	opConnect
	opBind
)

// observedCall says where a call's arguments are; -1 means absent.
type observedCall struct {
	nr                                         uint32
	op                                         opKind
	dirfd, path, dirfd2, path2, flags, sockarg int
}

func call(nr uintptr, op opKind, layout string) observedCall {
	c := observedCall{nr: uint32(nr), op: op, dirfd: -1, path: -1, dirfd2: -1, path2: -1, flags: -1, sockarg: -1}
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
		case 'f':
			c.flags = i
		case 's':
			c.sockarg = i
		}
	}
	return c
}

// openWriteMask: an open with none of these flags only reads.
const openWriteMask = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC

const retNotify = unix.SECCOMP_RET_USER_NOTIF

// observeFilter is the part of the filter that sends calls to the
// observer.
func observeFilter(calls []observedCall) []bpf.Instruction {
	var prog []bpf.Instruction
	for _, c := range calls {
		if c.op == opOpen && c.flags >= 0 {
			block := []bpf.Instruction{
				bpf.LoadAbsolute{Off: uint32(offArgs + 8*c.flags), Size: 4},
				bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: openWriteMask, SkipFalse: 1},
				bpf.RetConstant{Val: retNotify},
				bpf.RetConstant{Val: retAllow},
			}
			prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: c.nr, SkipFalse: uint8(len(block))})
			prog = append(prog, block...)
			continue
		}
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: c.nr, SkipFalse: 1}, bpf.RetConstant{Val: retNotify})
	}
	return prog
}

// Kernel structures of the user-notification interface.
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

type seccompNotif struct {
	ID    uint64
	PID   uint32
	Flags uint32
	Data  seccompData
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

const ioctlNotifIDValid = 0x40082102 // SECCOMP_IOCTL_NOTIF_ID_VALID

// observer receives notifications and keeps the denials it predicts.
type observer struct {
	fd    int
	plan  *Plan
	calls map[uint32]observedCall
	// stopR and stopW are a pipe; writing to it stops the observer once no
	// sandboxed process is left (the launching thread may outlive them).
	stopR, stopW int

	mu      sync.Mutex
	idle    *sync.Cond // signalled when inflight drops to 0
	busy    int        // notifications received and not yet recorded
	denials map[string]*sandbox.Denial
	order   []string
	// faults counts notifications the observer failed on (a panic while
	// decoding what the child passed): each was let continue, so the
	// kernel still decided, but its denial may be missing.
	faults int
}

func newObserver(fd int, pl *Plan) (*observer, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("starting the denial observer: %w", err)
	}
	o := &observer{fd: fd, plan: pl, calls: map[uint32]observedCall{},
		stopR: p[0], stopW: p[1], denials: map[string]*sandbox.Denial{}}
	o.idle = sync.NewCond(&o.mu)
	for _, c := range observedCalls() {
		o.calls[c.nr] = c
	}
	return o, nil
}

// run serves notifications until stopped or until no process uses the
// filter any more.
func (o *observer) run() {
	defer unix.Close(o.fd)
	defer unix.Close(o.stopR)
	for {
		fds := []unix.PollFd{{Fd: int32(o.fd), Events: unix.POLLIN}, {Fd: int32(o.stopR), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if fds[0].Revents&unix.POLLIN == 0 {
			return // stopped, or POLLHUP: every user of the filter has exited
		}
		var n seccompNotif
		o.setBusy(1)
		if err := ioctlPtr(o.fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); err != nil {
			o.setBusy(-1)
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOENT) {
				continue // interrupted, or the caller died before we read it
			}
			return
		}
		o.handleSafely(&n)
		o.setBusy(-1)
	}
}

func (o *observer) setBusy(d int) {
	o.mu.Lock()
	o.busy += d
	if o.busy == 0 {
		o.idle.Broadcast()
	}
	o.mu.Unlock()
}

// stop ends the observer and returns its denials and the number of
// notifications it failed on. Call it once every
// sandboxed process has ended: no notification can come any more, so it
// waits only for one being handled (the observer lets a call continue
// before it records it), not for the observer's goroutine to finish.
func (o *observer) stop() ([]sandbox.Denial, int) {
	_, _ = unix.Write(o.stopW, []byte{0})
	unix.Close(o.stopW)
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.busy > 0 {
		o.idle.Wait()
	}
	out := make([]sandbox.Denial, 0, len(o.order))
	for _, k := range o.order {
		out = append(out, *o.denials[k])
	}
	return out, o.faults
}

func ioctlPtr(fd int, req uint, p unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(p))
	if errno != 0 {
		return errno
	}
	return nil
}

func (o *observer) respond(id uint64, errno unix.Errno) {
	r := seccompNotifResp{ID: id}
	if errno == 0 {
		r.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	} else {
		r.Error = -int32(errno)
	}
	_ = ioctlPtr(o.fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&r))
}

// event is one observed call with its arguments read and resolved.
type event struct {
	op          opKind
	path, path2 string
	flags       uint64
	addr        string
	family      int
}

// handleSafely handles one notification; a fault in decoding what the
// child passed (a bug the child found) costs that one report, never the
// observer: the call is let continue, so the kernel decides as always,
// and the fault is counted for the run's warnings.
func (o *observer) handleSafely(n *seccompNotif) {
	defer func() {
		if recover() != nil {
			o.respond(n.ID, 0)
			o.mu.Lock()
			o.faults++
			o.mu.Unlock()
		}
	}()
	o.handle(n)
}

func (o *observer) handle(n *seccompNotif) {
	pid := int(n.PID)
	if uint32(n.Data.Nr) == unix.SYS_SOCKET {
		// The filter refuses this socket family; it asks the observer only
		// so the refusal is reported. The answer is fixed: EPERM.
		prog := programOf(pid)
		o.respond(n.ID, unix.EPERM)
		fam := int(int32(n.Data.Args[0]))
		right := "socket_inet"
		if fam == unix.AF_UNIX {
			right = "socket_unix"
		}
		o.recordAs(pid, prog, "socket", "", familyName(fam), right)
		return
	}
	c, ok := o.calls[uint32(n.Data.Nr)]
	if !ok {
		o.respond(n.ID, 0)
		return
	}
	ev, err := o.read(pid, c, &n.Data)
	// The arguments are only trustworthy if the call is still pending.
	valid := ioctlPtr(o.fd, ioctlNotifIDValid, unsafe.Pointer(&n.ID)) == nil
	if err != nil || !valid {
		o.respond(n.ID, 0)
		return
	}
	// Predict while the call waits: the file system is still as the kernel
	// will find it, and the caller is alive to be named. A caller that is
	// let go first can exit before /proc/PID/cmdline is read.
	op, target, right := o.plan.predict(ev)
	if right == "" {
		o.respond(n.ID, 0)
		return
	}
	prog := programOf(pid)
	o.respond(n.ID, 0)
	o.recordAs(pid, prog, op, target, ev.addr, right)
}

// recordAs records a denial, or counts a repeat of one.
func (o *observer) recordAs(pid int, program, op, path, addr, right string) {
	key := op + "\x00" + path + "\x00" + addr + "\x00" + right
	o.mu.Lock()
	defer o.mu.Unlock()
	if d, ok := o.denials[key]; ok {
		d.Count++
		return
	}
	o.denials[key] = &sandbox.Denial{
		Time: time.Now().UTC().Format(time.RFC3339Nano), PID: pid, Program: program,
		Op: op, Path: path, Addr: addr, Right: right, Exact: true, Count: 1,
	}
	o.order = append(o.order, key)
}

// read gathers a call's arguments from the calling process.
func (o *observer) read(pid int, c observedCall, d *seccompData) (event, error) {
	return decodeCall(c, d.Args, procMemory(pid))
}

// childMemory is where a call's arguments are read from: the calling
// process's memory and its /proc links. Every byte of it is the child's
// and hostile: decodeCall must neither crash nor stall on any of it.
type childMemory interface {
	// read copies len(buf) bytes at addr.
	read(addr uintptr, buf []byte) error
	// readString reads a NUL-terminated string of at most PATH_MAX bytes.
	readString(addr uintptr) (string, error)
	// readLink reads the /proc link of the working directory (fd is
	// AT_FDCWD) or of descriptor fd.
	readLink(fd int) (string, error)
	// view rewrites the paths that name "the calling process".
	view(p string) string
}

// maxSockaddr bounds how much of a socket address is read: a
// sockaddr_storage is 128 bytes, whatever length the caller claims.
const maxSockaddr = 128

// decodeCall turns the raw arguments of call c into an event. The
// arguments and memory come from the child: a length is clamped before it
// sizes anything, and every read is bounded.
func decodeCall(c observedCall, args [6]uint64, mem childMemory) (event, error) {
	ev := event{op: c.op}
	var err error
	readPathArg := func(dirfdArg, pathArg int) (string, error) {
		dirfd := unix.AT_FDCWD
		if dirfdArg >= 0 {
			dirfd = int(int32(args[dirfdArg]))
		}
		return readPath(mem, dirfd, uintptr(args[pathArg]))
	}
	if c.path >= 0 {
		if ev.path, err = readPathArg(c.dirfd, c.path); err != nil {
			return ev, err
		}
	}
	if c.path2 >= 0 {
		if ev.path2, err = readPathArg(c.dirfd2, c.path2); err != nil {
			return ev, err
		}
	}
	if c.flags >= 0 {
		ev.flags = args[c.flags]
		if c.op == opOpen2 {
			// struct open_how starts with the u64 flags.
			var b [8]byte
			if err := mem.read(uintptr(args[c.flags]), b[:]); err != nil {
				return ev, err
			}
			ev.flags = binary.LittleEndian.Uint64(b[:])
		}
	}
	if c.sockarg >= 0 && c.sockarg+1 < len(args) {
		// socklen_t is unsigned 32 bits; anything larger than a
		// sockaddr_storage is read as one.
		n := min(uint64(uint32(args[c.sockarg+1])), maxSockaddr)
		buf := make([]byte, n)
		if err := mem.read(uintptr(args[c.sockarg]), buf); err != nil {
			return ev, err
		}
		ev.family, ev.addr = decodeSockaddr(buf)
	}
	return ev, nil
}

// procMemory reads a live process through process_vm_readv and /proc.
type procMemory int

func (p procMemory) read(addr uintptr, buf []byte) error { return readMem(int(p), addr, buf) }

func (p procMemory) readString(addr uintptr) (string, error) { return readString(int(p), addr) }

func (p procMemory) readLink(fd int) (string, error) {
	if fd == unix.AT_FDCWD {
		return os.Readlink(fmt.Sprintf("/proc/%d/cwd", int(p)))
	}
	return os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", int(p), fd))
}

func (p procMemory) view(path string) string { return childView(int(p), path) }

// readMem copies len(buf) bytes at addr in pid's memory.
func readMem(pid int, addr uintptr, buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	local := []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
	remote := []unix.RemoteIovec{{Base: addr, Len: len(buf)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if err != nil {
		return err
	}
	if n != len(buf) {
		return fmt.Errorf("short read of process %d memory", pid)
	}
	return nil
}

// readString reads a NUL-terminated string of at most PATH_MAX bytes, page
// by page so that a string near the end of a mapping is still read.
func readString(pid int, addr uintptr) (string, error) {
	const page = 4096
	var out []byte
	for len(out) < unix.PathMax {
		n := page - int(addr%page)
		buf := make([]byte, n)
		local := []unix.Iovec{{Base: &buf[0], Len: uint64(n)}}
		remote := []unix.RemoteIovec{{Base: addr, Len: n}}
		got, err := unix.ProcessVMReadv(pid, local, remote, 0)
		if err != nil {
			return "", err
		}
		if got <= 0 {
			return "", fmt.Errorf("no progress reading process %d memory", pid)
		}
		if i := indexByte(buf[:got], 0); i >= 0 {
			return string(append(out, buf[:i]...)), nil
		}
		out = append(out, buf[:got]...)
		addr += uintptr(got)
	}
	return "", errors.New("path longer than PATH_MAX")
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// readPath reads a path argument and makes it absolute against the
// process's working directory or the directory dirfd is open on.
func readPath(mem childMemory, dirfd int, addr uintptr) (string, error) {
	p, err := mem.readString(addr)
	if err != nil {
		return "", err
	}
	if filepath.IsAbs(p) {
		return mem.view(filepath.Clean(p)), nil
	}
	base, err := mem.readLink(dirfd)
	if err != nil {
		return "", err
	}
	return mem.view(filepath.Join(base, p)), nil
}

// childView rewrites the paths that name "the calling process" so that
// they name pid rather than wrun, which resolves them.
func childView(pid int, p string) string {
	self := fmt.Sprintf("/proc/%d", pid)
	for _, pre := range []string{"/proc/self", "/proc/thread-self"} {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return self + p[len(pre):]
		}
	}
	switch {
	case p == "/dev/stdin":
		return self + "/fd/0"
	case p == "/dev/stdout":
		return self + "/fd/1"
	case p == "/dev/stderr":
		return self + "/fd/2"
	case p == "/dev/fd" || strings.HasPrefix(p, "/dev/fd/"):
		return self + "/fd" + p[len("/dev/fd"):]
	}
	return p
}

// magicLink resolves a /proc/PID/fd/N (or task/TID/fd/N) link. ok is false
// when path is not one; target is "" when it names no path (a pipe, a
// socket), which Landlock does not check.
func magicLink(path string) (target string, ok bool) {
	if !strings.HasPrefix(path, "/proc/") || filepath.Base(filepath.Dir(path)) != "fd" {
		return "", false
	}
	t, err := os.Readlink(path)
	if err != nil || !filepath.IsAbs(t) || strings.HasSuffix(t, " (deleted)") {
		return "", true
	}
	return t, true
}

func programOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return "?"
	}
	if i := indexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func familyName(f int) string {
	switch f {
	case unix.AF_INET:
		return "AF_INET"
	case unix.AF_INET6:
		return "AF_INET6"
	case unix.AF_UNIX:
		return "AF_UNIX"
	case unix.AF_NETLINK:
		return "AF_NETLINK"
	case unix.AF_PACKET:
		return "AF_PACKET"
	}
	return fmt.Sprintf("family %d", f)
}

// decodeSockaddr renders a socket address: "127.0.0.1:8080", "[::1]:80",
// "unix:/path" or "unix:@abstract".
func decodeSockaddr(b []byte) (int, string) {
	if len(b) < 2 {
		return -1, ""
	}
	fam := int(binary.LittleEndian.Uint16(b))
	switch {
	case fam == unix.AF_INET && len(b) >= 8:
		port := binary.BigEndian.Uint16(b[2:])
		ip := netip.AddrFrom4([4]byte(b[4:8]))
		return fam, netip.AddrPortFrom(ip, port).String()
	case fam == unix.AF_INET6 && len(b) >= 24:
		port := binary.BigEndian.Uint16(b[2:])
		ip := netip.AddrFrom16([16]byte(b[8:24]))
		return fam, netip.AddrPortFrom(ip, port).String()
	case fam == unix.AF_UNIX:
		p := b[2:]
		if len(p) > 0 && p[0] == 0 {
			return fam, "unix:@" + strings.TrimRight(string(p[1:]), "\x00")
		}
		if i := indexByte(p, 0); i >= 0 {
			p = p[:i]
		}
		return fam, "unix:" + string(p)
	}
	return fam, familyName(fam)
}

// predict says whether the plan's Landlock rules or mounts will refuse the
// call, and if so the operation's name, the path it is refused on and the
// missing right ("protected" for a protected path).
func (pl *Plan) predict(ev event) (op, target, right string) {
	switch ev.op {
	case opConnect, opBind:
		if (ev.family == unix.AF_INET || ev.family == unix.AF_INET6) && !pl.Policy.Network.Allow {
			if ev.op == opConnect {
				return "connect", "", "connect_tcp"
			}
			return "bind", "", "bind_tcp"
		}
		return "", "", ""
	}
	path := ev.path
	if t, ok := magicLink(path); ok {
		if t == "" {
			return "", "", "" // a pipe or socket: no path for Landlock to check
		}
		path = t
	}
	path = resolveParent(path)
	parent := filepath.Dir(path)
	fi, statErr := os.Lstat(path)
	exists := statErr == nil
	if exists && fi.Mode()&os.ModeSymlink != 0 && (ev.op == opOpen || ev.op == opOpen2 || ev.op == opTruncate || ev.op == opChmod) {
		if r, err := filepath.EvalSymlinks(path); err == nil {
			path, parent = r, filepath.Dir(r)
			fi, statErr = os.Stat(r)
			exists = statErr == nil
		}
	}
	isDir := exists && fi.IsDir()
	type requirement struct {
		at, report string // where the right is needed; the path to report
		acc        policy.Access
	}
	var need []requirement
	req := func(at string, a policy.Access) { need = append(need, requirement{at, path, a}) }
	switch ev.op {
	case opOpen, opOpen2, opCreate:
		flags := ev.flags
		if ev.op == opCreate {
			flags = unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC
		}
		op = "write"
		if !exists && flags&unix.O_CREAT != 0 {
			op = "create"
			req(parent, policy.MakeReg)
		}
		if flags&(unix.O_WRONLY|unix.O_RDWR) != 0 {
			req(path, policy.WriteFile)
		}
		if exists && flags&unix.O_TRUNC != 0 {
			req(path, policy.Truncate)
		}
	case opMkdir:
		op = "mkdir"
		req(parent, policy.MakeDir)
	case opMknod:
		op = "mknod"
		req(parent, mknodRight(uint32(ev.flags)))
	case opUnlink:
		op = "unlink"
		if ev.flags&unix.AT_REMOVEDIR != 0 {
			op = "rmdir"
			req(parent, policy.RemoveDir)
		} else {
			req(parent, policy.RemoveFile)
		}
	case opRmdir:
		op = "rmdir"
		req(parent, policy.RemoveDir)
	case opRename, opLink:
		dst := resolveParent(ev.path2)
		dparent := filepath.Dir(dst)
		make := policy.MakeReg
		if isDir {
			make = policy.MakeDir
		} else if exists && fi.Mode()&os.ModeSymlink != 0 {
			make = policy.MakeSym
		}
		if ev.op == opRename {
			op = "rename"
			if isDir {
				req(parent, policy.RemoveDir)
			} else {
				req(parent, policy.RemoveFile)
			}
		} else {
			op = "link"
		}
		need = append(need, requirement{dparent, dst, make})
		if dparent != parent {
			req(parent, policy.Refer)
			need = append(need, requirement{dparent, dst, policy.Refer})
		}
		if pr, ok := pl.protects(dst); ok && !pr.Pin {
			return op, dst, make.Names()[0]
		}
		if ev.op == opRename && pl.pinned(path) {
			return op, path, policy.RemoveDir.Names()[0]
		}
	case opSymlink:
		op = "symlink"
		req(parent, policy.MakeSym)
	case opTruncate:
		op = "truncate"
		req(path, policy.Truncate)
	case opChmod, opChown:
		op = map[opKind]string{opChmod: "chmod", opChown: "chown"}[ev.op]
	}
	// A read-only mount (a protected path) refuses every change beneath
	// it: report the right the operation needed there.
	if pr, ok := pl.protects(path); ok && !pr.Pin {
		switch {
		case ev.op == opChmod || ev.op == opChown:
			return op, path, "change_metadata"
		case len(need) > 0:
			return op, path, need[0].acc.Names()[0]
		}
		return op, path, policy.WriteFile.Names()[0]
	}
	if (ev.op == opRmdir || ev.op == opUnlink) && pl.pinned(path) {
		return op, path, policy.RemoveDir.Names()[0]
	}
	handled := fromLandlock(pl.attr.handledFS)
	for _, n := range need {
		missing := n.acc & handled &^ pl.rightsAt(n.at)
		if missing != 0 {
			return op, n.report, missing.Names()[0]
		}
	}
	return "", "", ""
}

func mknodRight(mode uint32) policy.Access {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return policy.MakeFifo
	case unix.S_IFSOCK:
		return policy.MakeSock
	case unix.S_IFCHR:
		return policy.MakeChar
	case unix.S_IFBLK:
		return policy.MakeBlock
	}
	return policy.MakeReg
}

// resolveParent resolves symbolic links in every component but the last.
func resolveParent(p string) string {
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return p
	}
	return filepath.Join(dir, filepath.Base(p))
}

// rightsAt is what the plan's rules grant at path: the union of every rule
// on path or above it, as Landlock computes it.
func (pl *Plan) rightsAt(path string) policy.Access {
	var a policy.Access
	for _, r := range pl.Rules {
		if policy.Within(path, r.Path) {
			a |= r.Access
		}
	}
	return a
}

// protects returns the read-only protected mount that covers path.
func (pl *Plan) protects(path string) (policy.Protected, bool) {
	for _, m := range pl.Mounts {
		if !m.Pin && policy.Within(path, m.Path) {
			return m, true
		}
	}
	return policy.Protected{}, false
}

// pinned reports whether path is a pinned directory (a mount point that
// cannot be renamed or removed).
func (pl *Plan) pinned(path string) bool {
	for _, m := range pl.Mounts {
		if m.Pin && m.Path == path {
			return true
		}
	}
	return false
}

func fromLandlock(ll uint64) policy.Access {
	var a policy.Access
	for _, m := range accessMap {
		if ll&m.ll != 0 {
			a |= m.p
		}
	}
	return a
}

//go:build linux

package linux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/access"
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
//
// What the plan refuses is the access model's answer (package access), the
// same escalate gives: this file only turns a call into an access.Op (its
// flags, the file system as the kernel will find it) and the plan's
// Landlock specifics into an access.Platform.

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
	model *access.Model
	calls map[uint32]observedCall
	// stopR and stopW are a pipe; writing to it stops the observer once no
	// sandboxed process is left (the launching thread may outlive them).
	stopR, stopW int

	mu   sync.Mutex
	idle *sync.Cond // signalled when inflight drops to 0
	busy int        // notifications received and not yet recorded
	// log keeps the denials, bounded (sandbox.MaxDenials): the child
	// chooses how many it makes.
	log sandbox.DenialLog
	// faults counts notifications the observer failed on (a panic while
	// decoding what the child passed): each was let continue, so the
	// kernel still decided, but its denial may be missing.
	faults int
	// observing: the filter sends the calls to report (Observe); without
	// it the observer only mediates.
	observing bool
	// med performs the mediated socket calls (mediate.go); nil without
	// mediation.
	med *mediator
}

func newObserver(fd int, pl *Plan) (*observer, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("starting the denial observer: %w", err)
	}
	o := &observer{fd: fd, model: pl.accessModel(), calls: map[uint32]observedCall{},
		stopR: p[0], stopW: p[1], observing: pl.seccomp.Observe}
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
		if uint32(n.Data.Nr) == unix.SYS_OPENAT2 {
			o.handleOpenat2(&n)
			o.setBusy(-1)
			continue
		}
		if sc, ok := setidCallOf(uint32(n.Data.Nr), n.Data.Args); ok {
			// Setuid and setgid bits (setid.go): the hands may make a
			// directory's S_ISGID, on a goroutine as a mediated call.
			if o.med != nil && sc.chmod && sc.dirOnly() && o.med.admit() {
				go func() {
					defer o.med.release()
					defer o.setBusy(-1)
					o.handleSetID(&n, sc, true)
				}()
				continue
			}
			o.handleSetID(&n, sc, false)
			o.setBusy(-1)
			continue
		}
		if o.med != nil && isMediated(uint32(n.Data.Nr)) {
			// Served on a goroutine of its own: the call may block. It
			// stays counted busy until it has been answered. The child
			// chooses how many wait at once: beyond a bound (each holds
			// descriptors in wrun) a call fails at once.
			if !o.med.admit() {
				o.answer(n.ID, 0, unix.EAGAIN)
				o.setBusy(-1)
				continue
			}
			go func() {
				defer o.med.release()
				defer o.setBusy(-1)
				o.mediate(&n)
			}()
			continue
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

// stop ends the observer and returns its denials (within the bounds; see
// dropped) and the number of notifications it failed on. Call it once every
// sandboxed process has ended: no notification can come any more, so it
// waits only for one being handled (the observer lets a call continue
// before it records it), not for the observer's goroutine to finish.
func (o *observer) stop() ([]sandbox.Denial, int) {
	_, _ = unix.Write(o.stopW, []byte{0})
	unix.Close(o.stopW)
	if o.med != nil {
		// A process kept in the background may wait in a mediated call:
		// it fails now, and so does every later one (the listener closes).
		o.med.close()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.busy > 0 {
		o.idle.Wait()
	}
	return slices.Clone(o.log.Denials()), o.faults
}

// dropped is how many denials the observer counted beyond its bounds.
func (o *observer) dropped() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.log.Dropped()
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
	name, missing := predict(o.model, ev)
	if len(missing) == 0 {
		o.respond(n.ID, 0)
		return
	}
	prog := programOf(pid)
	o.respond(n.ID, 0)
	for _, m := range missing {
		o.recordAs(pid, prog, name, m.Path, m.Addr, m.Right)
	}
}

// recordAs records a denial, or counts a repeat of one; beyond the bounds
// it only counts it.
func (o *observer) recordAs(pid int, program, op, path, addr, right string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.log.Add(sandbox.Denial{
		Time: time.Now().UTC().Format(time.RFC3339Nano), PID: pid, Program: program,
		Op: op, Path: path, Addr: addr, Right: right, Exact: true, Count: 1,
	})
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
		// A pathname socket's bind makes a file: where, is relative to the
		// caller's working directory.
		if p, ok := strings.CutPrefix(ev.addr, "unix:"); ok && c.op == opBind && ev.family == unix.AF_UNIX && p != "" && p[0] != '@' {
			if ev.path, err = absPath(mem, unix.AT_FDCWD, p); err != nil {
				return ev, err
			}
		}
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
	return absPath(mem, dirfd, p)
}

// absPath makes p, as the calling process names it, absolute against its
// working directory or the directory dirfd is open on.
func absPath(mem childMemory, dirfd int, p string) (string, error) {
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

// accessModel is the access model of the plan: its policy as this kernel
// and these mounts enforce it, with the rules as installed.
func (pl *Plan) accessModel() *access.Model {
	return access.New(pl.Policy, pl.platform())
}

// platform maps what the plan enforces onto the access model's facts: how
// protected paths are held (as in Report), the file system rights the
// ruleset does not handle, TCP rules (Landlock ABI 4), pathname UNIX
// socket confinement (ABI 9) and the carved rules the ruleset is built
// from.
func (pl *Plan) platform() access.Platform {
	pf := access.Platform{
		Protection:   access.ProtectCarved,
		Unhandled:    policy.All &^ fromLandlock(pl.attr.handledFS),
		TCPUnhandled: pl.ABI < 4,
		UnixConfined: pl.ABI >= 9,
		Installed:    pl.Rules,
		MaskHidden:   pl.stage,
	}
	if pl.stage {
		// The stage's own /dev/pts and /dev/shm (pts.go), opened there.
		pf.Installed = append(slices.Clone(pl.Rules), privateDevRules()...)
	}
	if pl.Features.MountNS || pl.Features.UserNS {
		pf.Protection = access.ProtectMounted
	}
	if pl.stage && pl.ABI == 0 {
		// Without Landlock the stage's view enforces the rules: read-only
		// but for the writable paths, the hidden paths covered (the
		// simulated holes stand for the views, Rules are not carved).
		// Device ioctls it does not restrict.
		pf.Unhandled, pf.Installed = policy.IoctlDev, nil
	}
	return pf
}

// predict says what the plan's Landlock rules and mounts will refuse of
// the call: the operation's name and one Missing per path and cause, none
// when the kernel allows it.
func predict(m *access.Model, ev event) (string, []access.Missing) {
	op, name, ok := observedOp(ev)
	if !ok {
		return "", nil
	}
	return name, m.Check(op)
}

// observedOp turns an observed call into the operation the access model
// judges, as the kernel will see it: with symbolic links resolved, the
// open's access mode and flags as rights, and the file system as it is
// while the call waits. The name is what the denial reports. ok is false
// for a call Landlock does not check or that fails before it does: a path
// that names no file (a pipe through /proc/PID/fd), O_PATH, a missing
// file without O_CREAT (ENOENT), an existing one to be created (EEXIST),
// an AF_UNIX connect (decided by where the listener was bound, which the
// observer cannot see; the kernel's audit records report it), a socket of
// another family.
func observedOp(ev event) (op access.Op, name string, ok bool) {
	switch ev.op {
	case opConnect, opBind:
		kind := access.OpConnect
		if ev.op == opBind {
			kind = access.OpBind
		}
		switch {
		case ev.family == unix.AF_INET || ev.family == unix.AF_INET6:
			// TCP as far as the observer can tell: it does not see the
			// socket's type.
			return access.Op{Kind: kind, Addr: ev.addr}, kind, true
		case ev.family == unix.AF_UNIX && ev.op == opBind && ev.path != "":
			// Binding a pathname socket makes a socket file: Landlock
			// checks make_sock on its directory.
			return access.Op{Kind: access.OpMknod, Path: resolveParent(ev.path), Rights: policy.MakeSock}, kind, true
		}
		return access.Op{}, "", false
	}
	path := ev.path
	if t, ok := magicLink(path); ok {
		if t == "" {
			return access.Op{}, "", false // a pipe or socket: no path for Landlock to check
		}
		path = t
	}
	path = resolveParent(path)
	fi, statErr := os.Lstat(path)
	exists := statErr == nil
	if exists && fi.Mode()&os.ModeSymlink != 0 && (ev.op == opOpen || ev.op == opOpen2 || ev.op == opTruncate || ev.op == opChmod) {
		if r, err := filepath.EvalSymlinks(path); err == nil {
			path = r
			fi, statErr = os.Stat(r)
			exists = statErr == nil
		}
	}
	isDir := exists && fi.IsDir()
	switch ev.op {
	case opOpen, opOpen2, opCreate:
		flags := ev.flags
		if ev.op == opCreate {
			flags = unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC
		}
		if flags&unix.O_PATH != 0 {
			return access.Op{}, "", false // opens nothing Landlock checks
		}
		rights := openRights(flags)
		switch {
		case !exists && flags&unix.O_CREAT == 0:
			return access.Op{}, "", false // ENOENT
		case !exists:
			// A new file is not truncated.
			return access.Op{Kind: access.OpCreate, Path: path, Rights: rights &^ policy.Truncate}, access.OpCreate, true
		case flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL:
			return access.Op{}, "", false // EEXIST
		}
		// O_TMPFILE names a directory but opens a new file in it.
		dir := isDir && flags&unix.O_TMPFILE != unix.O_TMPFILE
		return access.Op{Kind: access.OpOpen, Path: path, Rights: rights, Dir: dir}, access.OpOpen, true
	case opMkdir, opMknod, opSymlink:
		if exists {
			return access.Op{}, "", false // EEXIST
		}
		op := access.Op{Kind: access.OpMkdir, Path: path}
		switch ev.op {
		case opMknod:
			op = access.Op{Kind: access.OpMknod, Path: path, Rights: mknodRight(uint32(ev.flags))}
		case opSymlink:
			op = access.Op{Kind: access.OpSymlink, Path: path}
		}
		return op, op.Kind, true
	case opUnlink, opRmdir:
		if !exists {
			return access.Op{}, "", false // ENOENT
		}
		// Landlock checks the right the call asks for, before the kernel
		// finds whether the entry is a directory (EISDIR, ENOTDIR).
		if ev.op == opRmdir || ev.flags&unix.AT_REMOVEDIR != 0 {
			return access.Op{Kind: access.OpRmdir, Path: path}, access.OpRmdir, true
		}
		return access.Op{Kind: access.OpUnlink, Path: path}, access.OpUnlink, true
	case opRename, opLink:
		if !exists {
			return access.Op{}, "", false // ENOENT
		}
		dst := resolveParent(ev.path2)
		_, dstErr := os.Lstat(dst)
		dstExists := dstErr == nil
		kind := access.OpRename
		if ev.op == opLink {
			kind = access.OpLink
		}
		if dstExists && (ev.op == opLink || ev.flags&unix.RENAME_NOREPLACE != 0) {
			return access.Op{}, "", false // EEXIST
		}
		// The moved node's kind decides the make right on the destination.
		return access.Op{Kind: kind, Path: path, Dest: dst, Dir: isDir, Replace: dstExists, Rights: nodeRight(fi.Mode())}, kind, true
	case opTruncate, opChmod, opChown:
		if !exists {
			return access.Op{}, "", false // ENOENT
		}
		kind := access.OpTrunc
		switch ev.op {
		case opChmod:
			kind = access.OpChmod
		case opChown:
			kind = access.OpChown
		}
		return access.Op{Kind: kind, Path: path}, kind, true
	}
	return access.Op{}, "", false
}

// openRights are the rights an open with flags asks Landlock for.
func openRights(flags uint64) policy.Access {
	var a policy.Access
	switch flags & unix.O_ACCMODE {
	case unix.O_RDONLY:
		a = policy.ReadFile
	case unix.O_WRONLY:
		a = policy.WriteFile
	case unix.O_RDWR:
		a = policy.ReadFile | policy.WriteFile
	}
	if flags&unix.O_TRUNC != 0 {
		a |= policy.Truncate
	}
	return a
}

// nodeRight is the right that makes a node of mode's kind (Landlock's
// get_mode_access); 0 for a directory or a regular file, which Op.Dir
// tells apart.
func nodeRight(mode os.FileMode) policy.Access {
	switch {
	case mode&os.ModeSymlink != 0:
		return policy.MakeSym
	case mode&os.ModeNamedPipe != 0:
		return policy.MakeFifo
	case mode&os.ModeSocket != 0:
		return policy.MakeSock
	case mode&os.ModeCharDevice != 0:
		return policy.MakeChar
	case mode&os.ModeDevice != 0:
		return policy.MakeBlock
	}
	return 0
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

// fromLandlock maps Landlock file system bits to the rights they stand for.
func fromLandlock(ll uint64) policy.Access {
	var a policy.Access
	for _, m := range accessMap {
		if ll&m.ll != 0 {
			a |= m.p
		}
	}
	return a
}

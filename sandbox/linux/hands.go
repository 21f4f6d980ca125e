//go:build linux

package linux

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The hands: the process that makes the sandbox's mediated socket calls.
//
// Below Landlock ABI 9 the kernel cannot confine connect() or an
// addressed send to pathname UNIX sockets, and reading a call's address in
// the child's memory and letting the call continue checks nothing: another
// thread can rewrite the address, or put another socket under the
// descriptor number, after the check. So with mediation the seccomp
// filter sends connect, bind, sendto with an address, sendmsg and sendmmsg
// to wrun, which never lets them continue: it takes the child's socket
// (pidfd_getfd: the same open file description, with its type and flags),
// copies the address and the data once, and hands the call to this
// process, which performs it on the socket it was given, with the address
// wrun copied, and returns the result; wrun answers the call with it.
//
// The hands is forked by the stage from a thread restricted with the
// command's ruleset and never under its seccomp filter, and re-executes
// wrun: its Landlock domain has the command's rules (so TCP rules, the
// abstract-socket scope and make_sock apply to its calls exactly as to
// the command's), and it has the command's namespaces and credentials.
// Nothing in the sandbox may read or write its memory or take its
// descriptors. Where its domain scopes no abstract sockets
// (canHandsLater) it starts at wrun's first mediated call, from a thread
// of its own (handsLater): its domain is beside the command's, not the
// same one nor one the command's is nested in, so Landlock keeps the
// command from it (and, from ABI 6, from signalling it). With the
// abstract-socket scope a domain beside the command's could not reach the
// command's own abstract sockets: the hands starts before the command,
// from the launch thread, and the command runs in a layer nested in the
// hands' domain (shieldFromHands). Without Landlock (or the signal scope
// the shield needs) the stage starts it before the command and waits
// until it is undumpable, and the command can only kill it (the processes
// share a uid). A hands that is gone makes every mediated call fail.
//
// A pathname address is checked here, without a gap: the target is opened
// O_PATH as connect would resolve it (from the caller's working directory
// for a relative path, following symbolic links), must be a socket, and
// must be one this sandbox bound (or one --allow-unix names); then the
// call is made on "/proc/self/fd/N" of that descriptor, so the file
// checked is the file connected to. "This sandbox bound" is the kernel's
// answer, not a path's: after a mediated bind the hands asks sock_diag
// which file the socket is bound to, and at a connect it asks again
// whether that socket is still alive and bound to the target (so an inode
// number reused by another socket later does not match).

// handsArg is os.Args[1] of a hands process (os.Args[0] is Stage2Arg0, so
// that the dispatch to the stage's code is unchanged); the paths
// --allow-unix names follow it.
const handsArg = "hands"

// Operations the hands performs.
const (
	handsConnect byte = 1
	handsBind    byte = 2
	handsSend    byte = 3
	// handsChmod sets S_ISGID on a directory (setid.go): the path rides
	// as the data, the mode and flags in Flags.
	handsChmod byte = 4
)

// handsReq is the fixed head of a request; the address, the data and the
// raw control messages (all but SCM_RIGHTS) follow it, in that order. The
// descriptors ride as SCM_RIGHTS: the socket, then the caller's working
// directory (O_PATH) when Cwd is set, then the NFDs descriptors of the
// send's SCM_RIGHTS messages.
type handsReq struct {
	ID      uint64
	Op      uint8
	Cwd     uint8
	NFDs    uint16
	AddrLen uint32
	DataLen uint32
	CtrlLen uint32
	Flags   uint32
	_       uint32
}

// handsResp is the answer: the call's return value and errno; Outside is
// set when the hands refused the address as a socket outside the sandbox,
// and Path (PathLen bytes following) names it.
type handsResp struct {
	ID      uint64
	Ret     int64
	Errno   int32
	Outside uint8
	_       uint8
	PathLen uint16
}

var (
	handsReqSize  = binary.Size(handsReq{})
	handsRespSize = binary.Size(handsResp{})
)

// handsMaxMsg bounds one request on the socket from wrun: a datagram
// larger than what fits is refused with EMSGSIZE, a stream send is
// shortened (a partial write, which stream callers handle).
const handsMaxMsg = 192 << 10

// handsMaxFDs is the kernel's SCM_MAX_FD plus the socket and the working
// directory.
const handsMaxFDs = 255

// Hands is the hands process; Stage2 hands control to it when os.Args[1]
// is handsArg. Descriptor 3 is its socket to wrun, 4 a pipe on which it
// says it is ready (undumpable), or /dev/null when the stage does not wait
// for that (handsLater). It returns never: it exits when wrun closes the
// socket.
func Hands() {
	if err := makeUndumpable(); err != nil {
		os.Exit(125)
	}
	const sock, ready = 3, 4
	if _, err := unix.Write(ready, []byte{1}); err != nil {
		os.Exit(125)
	}
	unix.Close(ready)
	if len(os.Args) < 3 || (os.Args[2] != handsScoped && os.Args[2] != handsRefuseAbstract) {
		os.Exit(125)
	}
	h := &hands{fd: sock, refuseAbstract: os.Args[2] == handsRefuseAbstract, allowed: os.Args[3:], bound: map[unixID]boundSock{}}
	h.serve()
	os.Exit(0)
}

// unixID names a socket file as sock_diag does: the device (the kernel's
// encoding) and the low 32 bits of the inode number.
type unixID struct{ dev, ino uint32 }

// boundSock is a socket this sandbox bound: its sockfs inode and cookie,
// which sock_diag finds it by.
type boundSock struct {
	ino    uint32
	cookie [2]uint32
}

// The hands' first argument: whether something else (Landlock's scope, a
// network namespace) holds abstract UNIX addresses, or the hands refuses
// them.
const (
	handsScoped         = "abstract-scoped"
	handsRefuseAbstract = "abstract-refused"
)

type hands struct {
	fd int
	// refuseAbstract: connecting or sending to an abstract address is
	// refused, since nothing else keeps it inside the sandbox.
	refuseAbstract bool
	allowed        []string
	wmu            sync.Mutex // one reply at a time on fd
	mu             sync.Mutex // guards bound
	bound          map[unixID]boundSock
	// cwdMu serializes binds of relative paths, which change the
	// process's working directory.
	cwdMu sync.Mutex
}

func (h *hands) serve() {
	buf := make([]byte, handsReqSize+maxSockaddr+handsMaxMsg+64<<10)
	oob := make([]byte, unix.CmsgSpace(4*handsMaxFDs))
	for {
		n, oobn, flags, _, err := unix.Recvmsg(h.fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		fds := rightsOf(oob[:oobn])
		var req handsReq
		if n < handsReqSize || binary.Read(bytes.NewReader(buf[:handsReqSize]), binary.NativeEndian, &req) != nil {
			closeAll(fds)
			continue
		}
		body := append([]byte(nil), buf[handsReqSize:n]...)
		if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 || len(fds) < 1 {
			closeAll(fds)
			h.reply(handsResp{ID: req.ID, Ret: -1, Errno: int32(unix.EMSGSIZE)}, "")
			continue
		}
		go h.handle(req, body, fds)
	}
}

func rightsOf(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		if f, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, f...)
		}
	}
	return fds
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

func (h *hands) reply(r handsResp, path string) {
	if len(path) > 4096 {
		path = path[:4096]
	}
	r.PathLen = uint16(len(path))
	var b bytes.Buffer
	_ = binary.Write(&b, binary.NativeEndian, r)
	b.WriteString(path)
	h.wmu.Lock()
	defer h.wmu.Unlock()
	_ = unix.Sendmsg(h.fd, b.Bytes(), nil, nil, 0)
}

// handle performs one request and replies.
func (h *hands) handle(req handsReq, body []byte, fds []int) {
	defer closeAll(fds)
	resp := handsResp{ID: req.ID}
	end := uint64(req.AddrLen) + uint64(req.DataLen) + uint64(req.CtrlLen)
	want := 1 + int(req.Cwd) + int(req.NFDs)
	if end != uint64(len(body)) || req.AddrLen > maxSockaddr || len(fds) != want {
		resp.Ret, resp.Errno = -1, int32(unix.EINVAL)
		h.reply(resp, "")
		return
	}
	addr := body[:req.AddrLen]
	data := body[req.AddrLen : req.AddrLen+req.DataLen]
	ctrl := body[req.AddrLen+req.DataLen:]
	sock, cwd := fds[0], -1
	if req.Cwd != 0 {
		cwd = fds[1]
	}
	passed := fds[1+int(req.Cwd):]
	var ret int
	var errno unix.Errno
	var outside string
	switch req.Op {
	case handsConnect:
		ret, errno, outside = h.connect(sock, cwd, addr)
	case handsBind:
		ret, errno = h.bind(sock, cwd, addr)
	case handsSend:
		ret, errno, outside = h.send(sock, cwd, addr, data, ctrl, passed, int(req.Flags))
	case handsChmod:
		ret, errno, outside = h.chmodDir(sock, data, req.Flags)
	default:
		ret, errno = -1, unix.EINVAL
	}
	resp.Ret, resp.Errno = int64(ret), int32(errno)
	if outside != "" {
		resp.Outside = 1
	}
	h.reply(resp, outside)
}

// unixPath is the path of a pathname AF_UNIX address, as the kernel reads
// it (up to the first NUL, or the address's end); ok is false for other
// families, abstract and unnamed addresses.
func unixPath(addr []byte) (string, bool) {
	if len(addr) <= 2 || binary.NativeEndian.Uint16(addr) != unix.AF_UNIX || addr[2] == 0 {
		return "", false
	}
	p := addr[2:]
	if i := bytes.IndexByte(p, 0); i >= 0 {
		p = p[:i]
	}
	return string(p), true
}

// unscopedAbstract says whether addr is an abstract AF_UNIX address the
// hands must refuse, and names it as "@name" for the denial.
func (h *hands) unscopedAbstract(addr []byte) (string, bool) {
	if !h.refuseAbstract || len(addr) <= 2 || binary.NativeEndian.Uint16(addr) != unix.AF_UNIX || addr[2] != 0 {
		return "", false
	}
	return "@" + strings.ToValidUTF8(string(bytes.TrimRight(addr[3:], "\x00")), "?"), true
}

// procAddr is a pathname address for "/proc/self/fd/N".
func procAddr(fd int) []byte {
	p := "/proc/self/fd/" + strconv.Itoa(fd)
	b := make([]byte, 2+len(p)+1)
	binary.NativeEndian.PutUint16(b, unix.AF_UNIX)
	copy(b[2:], p)
	return b
}

// target opens the socket a pathname address names, as connect would
// find it, and checks that the sandbox may reach it. It returns an O_PATH
// descriptor to connect through, or the errno to answer and, when the
// socket is one outside the sandbox, its path.
func (h *hands) target(cwd int, path string) (int, unix.Errno, string) {
	dir := unix.AT_FDCWD
	if !filepath.IsAbs(path) {
		if cwd < 0 {
			return -1, unix.EINVAL, ""
		}
		dir = cwd
	}
	fd, err := unix.Openat(dir, path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, errnoOf(err), ""
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, errnoOf(err), ""
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		unix.Close(fd)
		return -1, unix.ECONNREFUSED, ""
	}
	if h.ours(st) || h.allowedSocket(st) {
		return fd, 0, ""
	}
	name, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		name = path
	}
	unix.Close(fd)
	return -1, unix.EACCES, name
}

// ours reports whether the socket file st is bound by a socket of this
// sandbox that is still alive.
func (h *hands) ours(st unix.Stat_t) bool {
	id := unixID{dev: kernelDev(st.Dev), ino: uint32(st.Ino)}
	h.mu.Lock()
	b, ok := h.bound[id]
	h.mu.Unlock()
	if !ok {
		return false
	}
	got, _, err := unixDiagVFS(b.ino, b.cookie)
	if err == nil && got == id {
		return true
	}
	h.mu.Lock()
	if h.bound[id] == b {
		delete(h.bound, id)
	}
	h.mu.Unlock()
	return false
}

// allowedSocket reports whether st is the socket one of the --allow-unix
// paths names now. The path is resolved without following any symbolic
// link (wrun resolved those it had when it started): a link the child
// plants at an allowed path it may write, or at a directory above it,
// would otherwise make any socket it points to an allowed one.
func (h *hands) allowedSocket(st unix.Stat_t) bool {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	for _, p := range h.allowed {
		fd, err := unix.Openat2(unix.AT_FDCWD, p, &how)
		if err != nil {
			continue
		}
		var a unix.Stat_t
		err = unix.Fstat(fd, &a)
		unix.Close(fd)
		if err == nil && a.Mode&unix.S_IFMT == unix.S_IFSOCK && a.Dev == st.Dev && a.Ino == st.Ino {
			return true
		}
	}
	return false
}

func (h *hands) connect(sock, cwd int, addr []byte) (int, unix.Errno, string) {
	if name, ok := h.unscopedAbstract(addr); ok {
		return -1, unix.EACCES, name
	}
	if path, ok := unixPath(addr); ok {
		t, errno, outside := h.target(cwd, path)
		if t < 0 {
			return -1, errno, outside
		}
		defer unix.Close(t)
		addr = procAddr(t)
	}
	ret, errno := sockaddrCall(unix.SYS_CONNECT, sock, addr)
	return ret, errno, ""
}

func (h *hands) bind(sock, cwd int, addr []byte) (int, unix.Errno) {
	path, ok := unixPath(addr)
	if !ok {
		return sockaddrCall(unix.SYS_BIND, sock, addr)
	}
	var ret int
	var errno unix.Errno
	if filepath.IsAbs(path) {
		ret, errno = sockaddrCall(unix.SYS_BIND, sock, addr)
	} else {
		// The socket keeps the name it was bound with (getsockname, the
		// peer's getpeername): bind the relative name itself, from the
		// caller's working directory.
		if cwd < 0 {
			return -1, unix.EINVAL
		}
		h.cwdMu.Lock()
		if err := unix.Fchdir(cwd); err != nil {
			h.cwdMu.Unlock()
			return -1, errnoOf(err)
		}
		ret, errno = sockaddrCall(unix.SYS_BIND, sock, addr)
		_ = unix.Chdir("/")
		h.cwdMu.Unlock()
	}
	if errno == 0 {
		h.record(sock)
	}
	return ret, errno
}

// record remembers the file sock is bound to as one of this sandbox's.
func (h *hands) record(sock int) {
	var st unix.Stat_t
	if unix.Fstat(sock, &st) != nil {
		return
	}
	id, cookie, err := unixDiagVFS(uint32(st.Ino), [2]uint32{^uint32(0), ^uint32(0)})
	if err != nil {
		return // not recorded: connecting to it is refused (fails closed)
	}
	h.mu.Lock()
	h.bound[id] = boundSock{ino: uint32(st.Ino), cookie: cookie}
	h.mu.Unlock()
}

func (h *hands) send(sock, cwd int, addr, data, ctrl []byte, passed []int, flags int) (int, unix.Errno, string) {
	if name, ok := h.unscopedAbstract(addr); ok {
		return -1, unix.EACCES, name
	}
	if path, ok := unixPath(addr); ok {
		t, errno, outside := h.target(cwd, path)
		if t < 0 {
			return -1, errno, outside
		}
		defer unix.Close(t)
		addr = procAddr(t)
	}
	var oob []byte
	if len(passed) > 0 {
		oob = unix.UnixRights(passed...)
	}
	oob = append(oob, ctrl...)
	ret, errno := rawSendmsg(sock, addr, data, oob, flags)
	return ret, errno, ""
}

// sockaddrCall is connect or bind with the raw address.
func sockaddrCall(nr uintptr, fd int, addr []byte) (int, unix.Errno) {
	var p unsafe.Pointer
	if len(addr) > 0 {
		p = unsafe.Pointer(&addr[0])
	}
	r, _, e := unix.Syscall(nr, uintptr(fd), uintptr(p), uintptr(len(addr)))
	if e != 0 {
		return -1, e
	}
	return int(r), 0
}

// rawSendmsg is sendmsg with a raw address and control messages.
func rawSendmsg(fd int, addr, data, oob []byte, flags int) (int, unix.Errno) {
	var msg unix.Msghdr
	if len(addr) > 0 {
		msg.Name = &addr[0]
		msg.Namelen = uint32(len(addr))
	}
	var iov unix.Iovec
	if len(data) > 0 {
		iov.Base = &data[0]
		iov.SetLen(len(data))
		msg.Iov = &iov
		msg.SetIovlen(1)
	}
	if len(oob) > 0 {
		msg.Control = &oob[0]
		msg.SetControllen(len(oob))
	}
	r, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), uintptr(flags))
	if e != 0 {
		return -1, e
	}
	return int(r), 0
}

func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return unix.EIO
}

// kernelDev turns a device number as stat reports it into the kernel's
// internal encoding, which sock_diag reports.
func kernelDev(dev uint64) uint32 {
	return unix.Major(dev)<<20 | unix.Minor(dev)&0xfffff
}

// sock_diag for UNIX sockets (linux/unix_diag.h).
const (
	unixDiagVFSAttr = 1   // UNIX_DIAG_VFS
	udiagShowVFS    = 0x2 // UDIAG_SHOW_VFS
)

// unixDiagVFS asks the kernel which file the UNIX socket with sockfs
// inode ino (and cookie, or none: all ones) is bound to. It returns the
// file's identity and the socket's cookie; an error when no such socket
// is alive or it is bound to no file.
func unixDiagVFS(ino uint32, cookie [2]uint32) (unixID, [2]uint32, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return unixID{}, cookie, fmt.Errorf("sock_diag: %w", err)
	}
	defer unix.Close(fd)
	req := make([]byte, unix.NLMSG_HDRLEN+24)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1)
	r := req[unix.NLMSG_HDRLEN:]
	r[0] = unix.AF_UNIX
	ne.PutUint32(r[4:], ^uint32(0)) // every state
	ne.PutUint32(r[8:], ino)
	ne.PutUint32(r[12:], udiagShowVFS)
	ne.PutUint32(r[16:], cookie[0])
	ne.PutUint32(r[20:], cookie[1])
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return unixID{}, cookie, fmt.Errorf("sock_diag: %w", err)
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return unixID{}, cookie, fmt.Errorf("sock_diag: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil || len(msgs) == 0 {
		return unixID{}, cookie, errors.New("sock_diag: bad answer")
	}
	m := msgs[0]
	if m.Header.Type == unix.NLMSG_ERROR {
		if len(m.Data) >= 4 {
			if e := int32(ne.Uint32(m.Data)); e != 0 {
				return unixID{}, cookie, fmt.Errorf("sock_diag: %w", unix.Errno(-e))
			}
		}
		return unixID{}, cookie, errors.New("sock_diag: error answer")
	}
	// struct unix_diag_msg: family, type, state, pad, ino, cookie[2].
	const head = 16
	if len(m.Data) < head || ne.Uint32(m.Data[4:]) != ino {
		return unixID{}, cookie, errors.New("sock_diag: answer for another socket")
	}
	got := [2]uint32{ne.Uint32(m.Data[8:]), ne.Uint32(m.Data[12:])}
	attrs := m.Data[head:]
	for len(attrs) >= 4 {
		l, typ := int(ne.Uint16(attrs)), ne.Uint16(attrs[2:])
		if l < 4 || l > len(attrs) {
			break
		}
		if typ == unixDiagVFSAttr && l >= 12 {
			return unixID{ino: ne.Uint32(attrs[4:]), dev: ne.Uint32(attrs[8:])}, got, nil
		}
		attrs = attrs[min((l+3)&^3, len(attrs)):]
	}
	return unixID{}, got, errors.New("sock_diag: the socket is bound to no file")
}

// handsExeRules let the hands be executed from inside the sandbox's
// domain: wrun's own binary is readable and executable there. That gives
// the command nothing new: wrun run in the sandbox runs sandboxed.
func handsExeRules() []fsRule {
	exe, err := os.Executable()
	if err != nil {
		return nil // the hands then fails to start, and so does the run
	}
	return []fsRule{{Path: exe, Access: llExecute | llReadFile}}
}

// newHandsPair makes the socket between wrun and the hands: wrun's end,
// then the hands'.
func newHandsPair() (wrunEnd, handsEnd int, err error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, -1, fmt.Errorf("starting the socket mediation: %w", err)
	}
	return pair[0], pair[1], nil
}

// execHands forks and executes the hands from the calling thread, which
// must be in a Landlock domain made from the command's ruleset and not
// under its seccomp filter, with sock (the hands' end of newHandsPair) as
// its socket. allowed are the --allow-unix paths. With wait it returns
// once the hands is undumpable (between its exec and its PR_SET_DUMPABLE
// a process sharing its uid could otherwise write its memory through
// /proc/PID/mem), and the caller must start it before the command exists;
// without, at once, which is for a hands in a domain the command cannot
// reach (handsLater, or shieldFromHands before the command starts). Requests wrun sends meanwhile wait in the socket's
// buffer; a hands that dies before it serves closes its end, and wrun
// refuses every mediated call (mediator.read). The caller keeps sock.
func execHands(sock int, allowed []string, refuseAbstract, wait bool) error {
	mode := handsScoped
	if refuseAbstract {
		mode = handsRefuseAbstract
	}
	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("starting the socket mediation: %w", err)
	}
	defer unix.Close(null)
	ready := [2]int{-1, null} // nobody waits: the hands says it to /dev/null
	if wait {
		if err := unix.Pipe2(ready[:], unix.O_CLOEXEC); err != nil {
			return fmt.Errorf("starting the socket mediation: %w", err)
		}
	}
	pid, err := syscall.ForkExec("/proc/self/exe", append([]string{Stage2Arg0, handsArg, mode}, allowed...), &syscall.ProcAttr{
		Env:   []string{},
		Files: []uintptr{uintptr(null), uintptr(null), uintptr(null), uintptr(sock), uintptr(ready[1])},
		// A session of its own: no terminal's signals reach it.
		Sys: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
	})
	if wait {
		unix.Close(ready[1])
	}
	if err != nil {
		if wait {
			unix.Close(ready[0])
		}
		return fmt.Errorf("starting the socket mediation (executing wrun in the sandbox): %w", err)
	}
	if !wait {
		return nil
	}
	var b [1]byte
	n, err := unix.Read(ready[0], b[:])
	for errors.Is(err, unix.EINTR) {
		n, err = unix.Read(ready[0], b[:])
	}
	unix.Close(ready[0])
	if n != 1 {
		_ = unix.Kill(pid, unix.SIGKILL)
		return fmt.Errorf("starting the socket mediation: the hands process ended before it was ready (%v)", err)
	}
	return nil
}

// handsLater is the thread the hands is started from, at wrun's first
// mediated call rather than at every launch: a command that never makes
// one (most: git status, ls, a build) pays no third start of wrun's
// binary. It locks its thread and never unlocks it, restricts it with the
// command's ruleset (rs) and says so on restricted, then waits until wrun
// writes the first request on its end of sock's pair, and executes the
// hands there (execHands without waiting); the thread then stays, the
// hands' parent for its PR_SET_PDEATHSIG. When wrun's end is closed first
// (the run ended, or an enclosing wrun holds the seccomp listener), it
// returns, and the Go runtime discards the restricted thread. It owns
// sock.
//
// The thread's landlock_restrict_self makes a domain of its own, with
// the command's rules but beside the command's (the launch thread makes
// that one): Landlock lets a process reach another's memory or
// descriptors (ptrace access: /proc/PID/mem, pidfd_getfd) only in its own
// domain or in ones nested in it, from ABI 1, and send it signals only so
// from ABI 6 (the signal scope). The command can therefore never reach
// the hands, dumpable or not, while the hands acts under the command's
// rules (TCP ports, the abstract-socket scope, make_sock), so the hands
// may start after the command exists. Only where rs scopes no abstract
// sockets (canHandsLater): the scope would refuse the hands the command's
// own. Elsewhere, and without Landlock, the stage starts the hands before
// the command (Stage2's launch thread).
func handsLater(rs *ruleset, auditLog bool, sock int, allowed []string, refuseAbstract bool, restricted chan<- error) {
	runtime.LockOSThread()
	if err := restrictThread(rs, auditLog); err != nil {
		unix.Close(sock)
		restricted <- fmt.Errorf("restricting the socket mediation: %w", err)
		return
	}
	restricted <- nil
	fds := []unix.PollFd{{Fd: int32(sock), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			unix.Close(sock)
			return // wrun's end is closed: no call will come
		}
		if fds[0].Revents&unix.POLLIN != 0 {
			break
		}
	}
	err := execHands(sock, allowed, refuseAbstract, false)
	unix.Close(sock) // without a hands, wrun then reads the end and refuses
	if err != nil {
		return
	}
	select {}
}

// canHandsLater reports whether the hands may start at the first mediated
// call, in a domain beside the command's (handsLater): under Landlock, and
// only where its domain scopes no abstract UNIX sockets. A domain beside
// the command's is outside it, so the abstract-socket scope would refuse
// the hands every abstract socket the command binds (Landlock lets a
// scoped domain reach only sockets created in it or in a domain nested in
// it), and the command's connects to its own listeners would fail. There
// the hands starts before the command instead, in the domain the
// command's own is nested in (shieldFromHands).
func canHandsLater(r *restriction) bool {
	return r.Landlock && r.Scoped&llScopeAbstractUnix == 0
}

// canShieldHands reports whether shieldFromHands works under r: it needs
// Landlock's signal scope (ABI 6, with its erratum fixed), the one right a
// domain can handle without changing what the command may do.
func canShieldHands(r *restriction) bool {
	return r.Landlock && r.Scoped&llScopeSignal != 0
}

// shieldFromHands puts the calling thread, and with it the command it
// forks next, into a Landlock domain nested in the one it shares with the
// hands (a hands started before the command, where !canHandsLater).
// Landlock lets a process reach another's memory, descriptors or signals
// (ptrace access: /proc/PID/mem, pidfd_getfd; kill) only within its own
// domain or ones nested in it, so the command can never reach the hands,
// dumpable or not, while the hands still acts in the command's domain for
// everything the command's rules decide, its abstract sockets included.
// The new layer scopes signals, which the command's own domain scopes
// already, so the only signals it stops are the command's to the hands
// and to the stage's launch thread. It must also allow REFER everywhere:
// a layer denies moving files between directories (EXDEV) unless it
// handles REFER and grants it, even a layer that handles no file right.
// Stage2 then need not wait for the hands to start.
func shieldFromHands() error {
	rs, err := buildRuleset(rulesetAttr{handledFS: llRefer, scoped: llScopeSignal}, []fsRule{{Path: "/", Access: llRefer}})
	if err != nil {
		return fmt.Errorf("shielding the socket mediation: %w", err)
	}
	defer rs.close()
	if err := restrictSelf(rs, false); err != nil {
		return fmt.Errorf("shielding the socket mediation: %w", err)
	}
	return nil
}

// parseRightsN is parseRights for a message with one or two descriptors.
func parseRightsN(oob []byte) ([]int, error) {
	fds := rightsOf(oob)
	if len(fds) < 1 || len(fds) > 2 {
		closeAll(fds)
		return nil, fmt.Errorf("second stage: bad file descriptor message (%d descriptors)", len(fds))
	}
	for _, fd := range fds {
		unix.CloseOnExec(fd)
	}
	return fds, nil
}

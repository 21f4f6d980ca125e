//go:build linux

package linux

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/access"
)

// The socket calls of the mediation, below Landlock ABI 9.
//
// The kernel cannot confine connect() or an addressed send to pathname
// UNIX sockets there, and reading a call's address and letting the call
// continue checks nothing: another thread can rewrite the address, or
// dup2 another socket onto the descriptor, afterwards. So the filter
// sends wrun connect, bind, sendto with an address, sendmsg and sendmmsg,
// and wrun never lets one continue: it takes the command's socket
// (pidfd_getfd: the same open file, with its type and flags), copies the
// address, the data and the control messages once (descriptors passed
// with SCM_RIGHTS are taken the same way), and a performer (as the
// command: its uid, no capability) makes the call on that socket with
// those copies. Every family goes this way, so a swapped descriptor or
// address cannot matter.
//
// A pathname target is opened O_PATH as connect resolves it (a relative
// path from the caller's working directory, symbolic links followed, no
// magic link), must be a socket this sandbox bound or one --allow-unix
// names, and is connected through /proc/self/fd/N of that descriptor: the
// file checked is the file reached. "This sandbox bound" is the kernel's
// answer: after a bind wrun asks sock_diag which file the socket is bound
// to, and at each connect whether that socket is still alive and bound
// there. An abstract address is reached only when a socket of this
// sandbox holds the name (autobound: binding a chosen abstract name is
// refused, since outside clients look for well-known ones there, as X11
// does); a bind is made by a performer under the command's own Landlock
// rules, so make_sock is decided as the command's own bind would be.

// maxSendData bounds the data of one mediated send: a datagram larger is
// refused with EMSGSIZE, a stream send is shortened (a partial write,
// which stream callers handle).
const maxSendData = 192 << 10

// unixID names a socket file as sock_diag does: the device (the kernel's
// encoding) and the low 32 bits of the inode number.
type unixID struct{ dev, ino uint32 }

// boundSock is a socket this sandbox bound: its sockfs inode and cookie,
// which sock_diag finds it by.
type boundSock struct {
	ino    uint32
	cookie [2]uint32
}

// socketState is what the mediation knows of the sandbox's sockets.
type socketState struct {
	allowed []string
	mu      sync.Mutex
	bound   map[unixID]boundSock
	// abstract are the abstract names the sandbox's sockets hold (by
	// autobind), with the socket.
	abstract map[string]boundSock
}

func newSocketState(allowed []string) *socketState {
	return &socketState{allowed: allowed, bound: map[unixID]boundSock{}, abstract: map[string]boundSock{}}
}

func (st *socketState) close() {}

// sockCall is one socket call being performed.
type sockCall struct {
	c      *notice
	sock   int
	cwd    int
	addr   []byte
	data   []byte
	ctrl   []byte
	passed []int
	flags  int
	creds  bool
	// reported: the call's denial, if any, is recorded (inet.go).
	reported bool
	// take takes one of the caller's descriptors (notice.takeFD; a
	// stand-in in tests).
	take func(int) (int, error)
}

// socketCall handles connect, bind, sendto, sendmsg and sendmmsg.
func (s *supervisor) socketCall(c *notice) {
	args := c.args()
	nr := uint32(c.n.Data.Nr)
	sc := &sockCall{c: c, cwd: -1, take: c.takeFD}
	var err error
	fail := func(err error) {
		errno := errnoOf(err)
		if errors.Is(err, errNotSocket) {
			errno = unix.ENOTSOCK
		}
		c.answer(-1, errno)
	}
	if nr == unix.SYS_SENDMMSG {
		s.sendmmsg(c)
		return
	}
	if sc.sock, err = s.takeSocket(c, int(int32(args[0]))); err != nil {
		fail(err)
		return
	}
	switch nr {
	case unix.SYS_CONNECT, unix.SYS_BIND:
		if sc.addr, err = c.sockaddr(args[1], int64(int32(args[2]))); err != nil {
			fail(err)
			return
		}
	case unix.SYS_SENDTO:
		sc.flags = int(int32(args[3]))
		if sc.addr, err = c.sockaddr(args[4], int64(int32(args[5]))); err != nil {
			fail(err)
			return
		}
		if sc.data, err = c.sendData(sc.sock, []span{{args[1], args[2]}}); err != nil {
			fail(err)
			return
		}
	case unix.SYS_SENDMSG:
		sc.flags = int(int32(args[2]))
		if err := s.msghdr(sc, args[1]); err != nil {
			fail(err)
			return
		}
	}
	var ret int
	var errno unix.Errno
	var outside string
	switch nr {
	case unix.SYS_CONNECT:
		ret, errno, outside = s.connect(sc)
	case unix.SYS_BIND:
		ret, errno = s.bind(sc)
	default:
		ret, errno, outside = s.send(sc)
	}
	c.answer(int64(ret), errno)
	s.reportSocket(c, sc, nr, errno, outside)
}

// reportSocket records a socket call's denial.
func (s *supervisor) reportSocket(c *notice, sc *sockCall, nr uint32, errno unix.Errno, outside string) {
	if sc.reported {
		return
	}
	op := access.OpConnect
	if nr != unix.SYS_CONNECT && nr != unix.SYS_BIND {
		op = "sendto"
	}
	switch {
	case strings.HasPrefix(outside, "@"):
		s.record(c, op, "", "unix:"+outside, access.RightConnectAbstract)
	case strings.HasPrefix(outside, "bind:@"):
		s.record(c, access.OpBind, "", "unix:"+strings.TrimPrefix(outside, "bind:"), access.RightBindAbstract)
	case outside != "":
		s.record(c, op, outside, "unix:"+outside, access.RightConnectUnix)
	case errno == unix.EPERM && sc.creds:
		// The kernel refused the performer's send of the caller's
		// credentials (their pid is not wrun's): the mediation's limit.
		s.record(c, access.OpConnect, "", "SCM_CREDENTIALS", access.RightSendCredentials)
	case (errno == unix.EACCES || errno == unix.EPERM) && (nr == unix.SYS_CONNECT || nr == unix.SYS_BIND):
		// (Only a refusal is a denial: ENOENT, ECONNREFUSED and the like
		// are the kernel's answers, as they would be without wrun.)
		_, addr := decodeSockaddr(sc.addr)
		kind := access.OpConnect
		if nr == unix.SYS_BIND {
			kind = access.OpBind
		}
		op := access.Op{Kind: kind, Addr: addr}
		if p, ok := unixPath(sc.addr); ok && kind == access.OpBind {
			op = access.Op{Kind: access.OpMknod, Path: p, Rights: 0}
			if !strings.HasPrefix(p, "/") {
				return
			}
			op.Rights = mknodRight(unix.S_IFSOCK)
		}
		s.recordMissing(c, kind, s.exact.Check(op))
	}
}

var errNotSocket = errors.New("not a socket")

// takeSocket takes the caller's descriptor fd, which must be a socket.
func (s *supervisor) takeSocket(c *notice, fd int) (int, error) {
	sock, err := c.takeFD(fd)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(sock, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return -1, errNotSocket
	}
	return sock, nil
}

// sockaddr copies a socket address as the kernel does
// (move_addr_to_kernel): a length beyond a sockaddr_storage, or negative,
// is EINVAL; an unreadable address EFAULT.
func (c *notice) sockaddr(ptr uint64, n int64) ([]byte, error) {
	if n < 0 || n > maxSockaddr {
		return nil, unix.EINVAL
	}
	if ptr == 0 || n == 0 {
		return nil, nil
	}
	b := make([]byte, n)
	if err := c.mem.read(ptr, b); err != nil {
		return nil, unix.EFAULT
	}
	return b, nil
}

// span is a range of the caller's memory.
type span struct{ base, n uint64 }

// sendData copies the bytes of a send, at most maxSendData.
func (c *notice) sendData(sock int, iov []span) ([]byte, error) {
	var total uint64
	for _, v := range iov {
		total += v.n
	}
	if total > maxSendData {
		typ, _ := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE)
		if typ != unix.SOCK_STREAM {
			return nil, unix.EMSGSIZE
		}
	}
	var out []byte
	for _, v := range iov {
		n := min(v.n, uint64(maxSendData-len(out)))
		if n == 0 {
			continue
		}
		b := make([]byte, n)
		if err := c.mem.read(v.base, b); err != nil {
			return nil, unix.EFAULT
		}
		out = append(out, b...)
		if len(out) >= maxSendData {
			break
		}
	}
	return out, nil
}

// msghdr reads a struct msghdr at ptr into sc: the address, the data and
// the control messages, with the descriptors of SCM_RIGHTS taken.
func (s *supervisor) msghdr(sc *sockCall, ptr uint64) error {
	c := sc.c
	// struct msghdr on a 64-bit machine: name, namelen (int, padded),
	// iov, iovlen, control, controllen, flags.
	var hb [56]byte
	if err := c.mem.read(ptr, hb[:]); err != nil {
		return unix.EFAULT
	}
	ne := binary.NativeEndian
	name, namelen := ne.Uint64(hb[0:]), int32(ne.Uint32(hb[8:]))
	iovPtr, iovlen := ne.Uint64(hb[16:]), ne.Uint64(hb[24:])
	ctrlPtr, ctrllen := ne.Uint64(hb[32:]), ne.Uint64(hb[40:])
	if namelen < 0 {
		return unix.EINVAL
	}
	var err error
	// The kernel clamps the length to a sockaddr_storage.
	if sc.addr, err = c.sockaddr(name, min(int64(namelen), maxSockaddr)); err != nil {
		return err
	}
	if iovlen > 1024 { // UIO_MAXIOV
		return unix.EMSGSIZE
	}
	if iovlen > 0 {
		raw := make([]byte, iovlen*16) // struct iovec: base, length
		if err := c.mem.read(iovPtr, raw); err != nil {
			return unix.EFAULT
		}
		iov := make([]span, iovlen)
		for i := range iov {
			iov[i] = span{ne.Uint64(raw[16*i:]), ne.Uint64(raw[16*i+8:])}
		}
		if sc.data, err = c.sendData(sc.sock, iov); err != nil {
			return err
		}
	}
	if ctrllen == 0 {
		return nil
	}
	if ctrllen > 64<<10 {
		return unix.ENOBUFS
	}
	ctrl := make([]byte, ctrllen)
	if err := c.mem.read(ctrlPtr, ctrl); err != nil {
		return unix.EFAULT
	}
	return s.control(sc, ctrl)
}

// control splits control messages into the descriptors of SCM_RIGHTS
// (taken from the caller, to pass on) and the rest (passed raw).
func (s *supervisor) control(sc *sockCall, ctrl []byte) error {
	for len(ctrl) >= unix.SizeofCmsghdr {
		var h unix.Cmsghdr
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&h)), unix.SizeofCmsghdr), ctrl)
		if h.Len < unix.SizeofCmsghdr || h.Len > uint64(len(ctrl)) {
			return unix.EINVAL
		}
		body := ctrl[unix.SizeofCmsghdr:h.Len]
		next := min(uint64(unix.CmsgSpace(int(h.Len)-unix.SizeofCmsghdr)), uint64(len(ctrl)))
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_RIGHTS {
			for i := 0; i+4 <= len(body); i += 4 {
				if len(sc.passed) >= 253 { // SCM_MAX_FD
					return unix.EINVAL
				}
				fd, err := sc.take(int(int32(binary.NativeEndian.Uint32(body[i:]))))
				if err != nil {
					return unix.EBADF
				}
				sc.passed = append(sc.passed, fd)
			}
		} else {
			if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_CREDENTIALS {
				sc.creds = true
			}
			sc.ctrl = append(sc.ctrl, ctrl[:next]...)
		}
		ctrl = ctrl[next:]
	}
	return nil
}

// sendmmsg performs each message of the vector as a sendmsg, as the
// kernel does, writing each msg_len back through the memory descriptor
// opened for this call (never by pid); it stops at the first error,
// which it reports only when no message was sent.
func (s *supervisor) sendmmsg(c *notice) {
	args := c.args()
	const sizeofMmsghdr = 64 // struct mmsghdr: a msghdr, then msg_len (padded)
	vec, vlen, flags := args[1], min(uint32(args[2]), 1024), int(int32(args[3]))
	sock, err := s.takeSocket(c, int(int32(args[0])))
	if err != nil {
		if errors.Is(err, errNotSocket) {
			err = unix.ENOTSOCK
		}
		c.answer(-1, errnoOf(err))
		return
	}
	sent := int64(0)
	for i := uint32(0); i < vlen; i++ {
		at := vec + uint64(i)*sizeofMmsghdr
		sc := &sockCall{c: c, sock: sock, cwd: -1, flags: flags, take: c.takeFD}
		kept := len(c.held)
		var ret int
		var errno unix.Errno
		var outside string
		if err := s.msghdr(sc, at); err != nil {
			errno = errnoOf(err)
		} else {
			ret, errno, outside = s.send(sc)
		}
		// This message's descriptors are done with.
		for _, fd := range c.held[kept:] {
			unix.Close(fd)
		}
		c.held = c.held[:kept]
		if errno == 0 {
			var l [4]byte
			binary.NativeEndian.PutUint32(l[:], uint32(ret))
			if c.mem.write(at+56, l[:]) != nil && sent == 0 {
				c.answer(-1, unix.EFAULT)
				return
			}
			sent++
			continue
		}
		if sent > 0 {
			break
		}
		c.answer(-1, errno)
		s.reportSocket(c, sc, unix.SYS_SENDMSG, errno, outside)
		return
	}
	c.answer(sent, 0)
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

// abstractName is the name of an abstract AF_UNIX address ("@name").
func abstractName(addr []byte) (string, bool) {
	if len(addr) <= 2 || binary.NativeEndian.Uint16(addr) != unix.AF_UNIX || addr[2] != 0 {
		return "", false
	}
	return "@" + strings.ToValidUTF8(string(addr[3:]), "?"), true
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
// descriptor (held) to connect through, or the errno to answer and, when
// the socket is one outside the sandbox, its path.
func (s *supervisor) target(sc *sockCall, path string) (int, unix.Errno, string) {
	c := sc.c
	dir := unix.AT_FDCWD
	if !strings.HasPrefix(path, "/") {
		cwd, err := c.start(-1)
		if err != nil {
			return -1, unix.EPERM, ""
		}
		dir = cwd
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(dir, path, &how)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			return -1, unix.EACCES, path
		}
		return -1, errnoOf(err), ""
	}
	c.hold(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return -1, errnoOf(err), ""
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return -1, unix.ECONNREFUSED, ""
	}
	if s.socks.ours(st) || s.socks.allowedSocket(st) {
		return fd, 0, ""
	}
	name, err := fdPath(fd)
	if err != nil {
		name = path
	}
	return -1, unix.EACCES, name
}

// ours reports whether the socket file st is bound by a socket of this
// sandbox that is still alive.
func (st *socketState) ours(f unix.Stat_t) bool {
	id := unixID{dev: kernelDev(f.Dev), ino: uint32(f.Ino)}
	st.mu.Lock()
	b, ok := st.bound[id]
	st.mu.Unlock()
	if !ok {
		return false
	}
	got, _, err := unixDiagVFS(b.ino, b.cookie)
	if err == nil && got == id {
		return true
	}
	st.mu.Lock()
	if st.bound[id] == b {
		delete(st.bound, id)
	}
	st.mu.Unlock()
	return false
}

// allowedSocket reports whether f is the socket one of the --allow-unix
// paths names now. The path is resolved without following any symbolic
// link (wrun resolved those it had when it started): a link the command
// plants at an allowed path it may write, or at a directory above it,
// would otherwise make any socket it points to an allowed one.
func (st *socketState) allowedSocket(f unix.Stat_t) bool {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	st.mu.Lock()
	allowed := slices.Clone(st.allowed)
	st.mu.Unlock()
	for _, p := range allowed {
		fd, err := unix.Openat2(unix.AT_FDCWD, p, &how)
		if err != nil {
			continue
		}
		var a unix.Stat_t
		err = unix.Fstat(fd, &a)
		unix.Close(fd)
		if err == nil && a.Mode&unix.S_IFMT == unix.S_IFSOCK && a.Dev == f.Dev && a.Ino == f.Ino {
			return true
		}
	}
	return false
}

// allow adds path to the sockets outside the sandbox it may reach (an
// --allow-unix approved while the command runs).
func (st *socketState) allow(path string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !slices.Contains(st.allowed, path) {
		st.allowed = append(st.allowed, path)
	}
}

// abstractOurs reports whether name (an abstract "@name") is held by a
// live socket of this sandbox's.
func (st *socketState) abstractOurs(name string) bool {
	st.mu.Lock()
	b, ok := st.abstract[name]
	st.mu.Unlock()
	if !ok {
		return false
	}
	got, _, err := unixDiagName(b.ino, b.cookie)
	if err == nil && got == name {
		return true
	}
	st.mu.Lock()
	if st.abstract[name] == b {
		delete(st.abstract, name)
	}
	st.mu.Unlock()
	return false
}

// unscoped is the check of an abstract address: EACCES and its name
// unless a socket of the sandbox holds it.
func (s *supervisor) unscoped(addr []byte) (string, bool) {
	name, ok := abstractName(addr)
	if !ok || s.pl.Policy.IPC.AbstractUnixOutside || s.socks.abstractOurs(name) {
		return "", false
	}
	return name, true
}

func (s *supervisor) connect(sc *sockCall) (int, unix.Errno, string) {
	if k, ok := s.inetMediated(sc); ok {
		ret, errno := s.inetCall(sc, k, unix.SYS_CONNECT)
		return ret, errno, ""
	}
	if name, refused := s.unscoped(sc.addr); refused {
		return -1, unix.EACCES, name
	}
	addr := sc.addr
	if path, ok := unixPath(addr); ok && !s.pl.Policy.IPC.PathUnixOutside {
		t, errno, outside := s.target(sc, path)
		if t < 0 && errno == unix.EACCES && outside != "" && s.holdSocket(sc.c, outside) {
			t, errno, outside = s.target(sc, path)
		}
		if t < 0 {
			return -1, errno, outside
		}
		addr = procAddr(t)
	}
	var ret int
	var errno unix.Errno
	if !s.perform(sc.c, func() { ret, errno = sockaddrCall(unix.SYS_CONNECT, sc.sock, addr) }) {
		return -1, unix.EPERM, ""
	}
	if name, ok := abstractName(sc.addr); ok && errno == 0 && !s.pl.Policy.IPC.AbstractUnixOutside && !s.socks.abstractOurs(name) {
		// The name changed hands while the call was made: whatever was
		// reached is not the sandbox's. The socket is shut down.
		_ = unix.Shutdown(sc.sock, unix.SHUT_RDWR)
		return -1, unix.EACCES, name
	}
	return ret, errno, ""
}

func (s *supervisor) bind(sc *sockCall) (int, unix.Errno) {
	c := sc.c
	if k, ok := s.inetMediated(sc); ok {
		return s.inetCall(sc, k, unix.SYS_BIND)
	}
	if name, ok := abstractName(sc.addr); ok && !s.pl.Policy.IPC.AbstractUnixOutside {
		// A chosen abstract name can be claimed for clients outside,
		// which look for well-known ones there: refused.
		c.answer(-1, unix.EACCES)
		s.record(c, access.OpBind, "", "unix:"+name, access.RightBindAbstract)
		return -1, unix.EACCES
	}
	var cwd int = -1
	if p, ok := unixPath(sc.addr); ok && !strings.HasPrefix(p, "/") {
		d, err := c.start(-1)
		if err != nil {
			return -1, unix.EPERM
		}
		cwd = d
	}
	var ret int
	var errno unix.Errno
	// Under the command's own rules (make_sock decided as for its own
	// bind), from its working directory for a relative name, which the
	// socket keeps (getsockname).
	c.performed = true
	if err := s.asCmd.do(func() {
		if cwd < 0 {
			ret, errno = sockaddrCall(unix.SYS_BIND, sc.sock, sc.addr)
			return
		}
		if err := s.fs.inDir(cwd, func() error {
			ret, errno = sockaddrCall(unix.SYS_BIND, sc.sock, sc.addr)
			return nil
		}); err != nil {
			ret, errno = -1, errnoOf(err)
		}
	}); err != nil {
		return -1, unix.EPERM
	}
	if errno == 0 {
		s.socks.record(sc.sock)
	}
	return ret, errno
}

// record remembers the file or abstract name sock is bound to as one of
// this sandbox's.
func (st *socketState) record(sock int) {
	var f unix.Stat_t
	if unix.Fstat(sock, &f) != nil {
		return
	}
	if sa, err := unix.Getsockname(sock); err == nil {
		if u, ok := sa.(*unix.SockaddrUnix); ok && strings.HasPrefix(u.Name, "@") {
			_, cookie, err := unixDiagName(uint32(f.Ino), [2]uint32{^uint32(0), ^uint32(0)})
			if err == nil {
				st.mu.Lock()
				st.abstract[u.Name] = boundSock{ino: uint32(f.Ino), cookie: cookie}
				st.mu.Unlock()
			}
			return
		}
	}
	id, cookie, err := unixDiagVFS(uint32(f.Ino), [2]uint32{^uint32(0), ^uint32(0)})
	if err != nil {
		return // not recorded: connecting to it is refused (fails closed)
	}
	st.mu.Lock()
	st.bound[id] = boundSock{ino: uint32(f.Ino), cookie: cookie}
	st.mu.Unlock()
}

func (s *supervisor) send(sc *sockCall) (int, unix.Errno, string) {
	if k, ok := s.inetMediated(sc); ok {
		ret, errno := s.inetCall(sc, k, unix.SYS_SENDMSG)
		return ret, errno, ""
	}
	if name, refused := s.unscoped(sc.addr); refused {
		return -1, unix.EACCES, name
	}
	addr := sc.addr
	if path, ok := unixPath(addr); ok && !s.pl.Policy.IPC.PathUnixOutside {
		t, errno, outside := s.target(sc, path)
		if t < 0 {
			return -1, errno, outside
		}
		addr = procAddr(t)
	}
	var oob []byte
	if len(sc.passed) > 0 {
		oob = unix.UnixRights(sc.passed...)
	}
	oob = append(oob, sc.ctrl...)
	var ret int
	var errno unix.Errno
	if !s.perform(sc.c, func() { ret, errno = rawSendmsg(sc.sock, addr, sc.data, oob, sc.flags) }) {
		return -1, unix.EPERM, ""
	}
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

// kernelDev turns a device number as stat reports it into the kernel's
// internal encoding, which sock_diag reports.
func kernelDev(dev uint64) uint32 {
	return unix.Major(dev)<<20 | unix.Minor(dev)&0xfffff
}

// sock_diag for UNIX sockets (linux/unix_diag.h).
const (
	unixDiagNameAttr = 0   // UNIX_DIAG_NAME
	unixDiagVFSAttr  = 1   // UNIX_DIAG_VFS
	udiagShowName    = 0x1 // UDIAG_SHOW_NAME
	udiagShowVFS     = 0x2 // UDIAG_SHOW_VFS
)

// unixDiag asks the kernel about the UNIX socket with sockfs inode ino
// (and cookie, or none: all ones), for the attributes show asks. It
// returns the socket's cookie and its attributes by type.
func unixDiag(ino uint32, cookie [2]uint32, show uint32) ([2]uint32, map[uint16][]byte, error) {
	// struct unix_diag_req: family, protocol, pad, states, ino, show,
	// cookie[2].
	r := make([]byte, 24)
	ne := binary.NativeEndian
	r[0] = unix.AF_UNIX
	ne.PutUint32(r[4:], ^uint32(0)) // every state
	ne.PutUint32(r[8:], ino)
	ne.PutUint32(r[12:], show)
	ne.PutUint32(r[16:], cookie[0])
	ne.PutUint32(r[20:], cookie[1])
	data, err := sockDiag(r)
	if err != nil {
		return cookie, nil, err
	}
	// struct unix_diag_msg: family, type, state, pad, ino, cookie[2].
	const head = 16
	if len(data) < head || ne.Uint32(data[4:]) != ino {
		return cookie, nil, errors.New("sock_diag: answer for another socket")
	}
	got := [2]uint32{ne.Uint32(data[8:]), ne.Uint32(data[12:])}
	attrs := map[uint16][]byte{}
	rest := data[head:]
	for len(rest) >= 4 {
		l, typ := int(ne.Uint16(rest)), ne.Uint16(rest[2:])
		if l < 4 || l > len(rest) {
			break
		}
		attrs[typ] = rest[4:l]
		rest = rest[min((l+3)&^3, len(rest)):]
	}
	return got, attrs, nil
}

// unixDiagVFS asks which file the socket is bound to.
func unixDiagVFS(ino uint32, cookie [2]uint32) (unixID, [2]uint32, error) {
	got, attrs, err := unixDiag(ino, cookie, udiagShowVFS)
	if err != nil {
		return unixID{}, cookie, err
	}
	v, ok := attrs[unixDiagVFSAttr]
	if !ok || len(v) < 8 {
		return unixID{}, got, errors.New("sock_diag: the socket is bound to no file")
	}
	ne := binary.NativeEndian
	return unixID{ino: ne.Uint32(v[0:]), dev: ne.Uint32(v[4:])}, got, nil
}

// unixDiagName asks which name the socket is bound to ("@name" for an
// abstract one).
func unixDiagName(ino uint32, cookie [2]uint32) (string, [2]uint32, error) {
	got, attrs, err := unixDiag(ino, cookie, udiagShowName)
	if err != nil {
		return "", cookie, err
	}
	v, ok := attrs[unixDiagNameAttr]
	if !ok || len(v) == 0 {
		return "", got, errors.New("sock_diag: the socket has no name")
	}
	if v[0] == 0 {
		return "@" + strings.ToValidUTF8(string(v[1:]), "?"), got, nil
	}
	return string(v), got, nil
}

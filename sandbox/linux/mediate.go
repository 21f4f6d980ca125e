//go:build linux

package linux

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/access"
)

// The mediator is wrun's half of the socket mediation (hands.go has the
// design): it turns a notification of a mediated call into a request to
// the hands process, taking the child's socket and descriptors with
// pidfd_getfd and copying the address and the data once, and answers the
// call with the hands' result. It never lets a mediated call continue.

// mediator talks to the hands process over a SOCK_SEQPACKET socket.
type mediator struct {
	fd       int
	next     atomic.Uint64
	inflight atomic.Int64

	mu      sync.Mutex
	pending map[uint64]chan handsAnswer
	dead    bool
	// unreached counts the calls refused because the hands was gone (or
	// never started): the run's report says so.
	unreached atomic.Int64
	closing   atomic.Bool
}

// lost counts a call refused because the hands cannot be reached, unless
// wrun is ending the mediation itself.
func (m *mediator) lost() {
	if !m.closing.Load() {
		m.unreached.Add(1)
	}
}

// handsAnswer is the hands' result for one call.
type handsAnswer struct {
	ret     int64
	errno   unix.Errno
	outside string // the socket refused as outside the sandbox
}

// maxMediated bounds the mediated calls waiting at once.
const maxMediated = 4096

// admit counts one more mediated call in flight, or reports that the
// bound is reached; release ends one.
func (m *mediator) admit() bool {
	if m.inflight.Add(1) > maxMediated {
		m.inflight.Add(-1)
		return false
	}
	return true
}

func (m *mediator) release() { m.inflight.Add(-1) }

// newMediator serves the hands' answers on fd until it closes.
func newMediator(fd int) *mediator {
	m := &mediator{fd: fd, pending: map[uint64]chan handsAnswer{}}
	// Room for a request with a full datagram (the default limit is
	// lower); as root the limit does not apply.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 4<<20)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20)
	go m.read()
	return m
}

func (m *mediator) read() {
	buf := make([]byte, handsRespSize+4096)
	for {
		n, _, err := unix.Recvfrom(m.fd, buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			break
		}
		var r handsResp
		if n < handsRespSize || binary.Read(bytes.NewReader(buf[:handsRespSize]), binary.NativeEndian, &r) != nil {
			continue
		}
		a := handsAnswer{ret: r.Ret, errno: unix.Errno(r.Errno)}
		if r.Outside != 0 {
			a.outside = string(buf[handsRespSize:min(n, handsRespSize+int(r.PathLen))])
			if a.outside == "" {
				a.outside = "?"
			}
		}
		m.mu.Lock()
		ch := m.pending[r.ID]
		delete(m.pending, r.ID)
		m.mu.Unlock()
		if ch != nil {
			ch <- a
		}
	}
	// The hands is gone (the child killed it, or the sandbox ended):
	// every call waiting, and every call to come, fails.
	m.mu.Lock()
	m.dead = true
	for id, ch := range m.pending {
		m.lost()
		ch <- handsAnswer{ret: -1, errno: unix.EPERM}
		delete(m.pending, id)
	}
	m.mu.Unlock()
}

// close ends the mediation: the calls waiting fail, and the hands exits
// when its socket closes (shut down first: that wakes the reader).
func (m *mediator) close() {
	m.closing.Store(true)
	_ = unix.Shutdown(m.fd, unix.SHUT_RDWR)
	m.mu.Lock()
	for !m.dead {
		m.mu.Unlock()
		time.Sleep(time.Millisecond)
		m.mu.Lock()
	}
	m.mu.Unlock()
	unix.Close(m.fd)
}

// request is one call for the hands.
type request struct {
	op         byte
	sock, cwd  int
	addr, data []byte
	ctrl       []byte
	passed     []int
	flags      int
}

// call sends r to the hands and waits for its answer.
func (m *mediator) call(r request) handsAnswer {
	id := m.next.Add(1)
	ch := make(chan handsAnswer, 1)
	m.mu.Lock()
	if m.dead {
		m.mu.Unlock()
		m.lost()
		return handsAnswer{ret: -1, errno: unix.EPERM}
	}
	m.pending[id] = ch
	m.mu.Unlock()
	hdr := handsReq{ID: id, Op: r.op, AddrLen: uint32(len(r.addr)), DataLen: uint32(len(r.data)),
		CtrlLen: uint32(len(r.ctrl)), Flags: uint32(r.flags), NFDs: uint16(len(r.passed))}
	fds := []int{r.sock}
	if r.cwd >= 0 {
		hdr.Cwd = 1
		fds = append(fds, r.cwd)
	}
	fds = append(fds, r.passed...)
	var b bytes.Buffer
	_ = binary.Write(&b, binary.NativeEndian, hdr)
	b.Write(r.addr)
	b.Write(r.data)
	b.Write(r.ctrl)
	var err error
	for {
		err = unix.Sendmsg(m.fd, b.Bytes(), unix.UnixRights(fds...), nil, 0)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		// The reader may have failed the call already, when it saw the
		// hands' end meanwhile: then it has counted it too.
		m.mu.Lock()
		_, mine := m.pending[id]
		delete(m.pending, id)
		m.mu.Unlock()
		errno := unix.EPERM
		if errors.Is(err, unix.EMSGSIZE) || errors.Is(err, unix.ENOBUFS) {
			errno = unix.EMSGSIZE
		} else if mine {
			m.lost()
		}
		return handsAnswer{ret: -1, errno: errno}
	}
	return <-ch
}

// mediation is one mediated call being served: the notification, the
// caller's pidfd and the descriptors taken from it.
type mediation struct {
	o     *observer
	n     *seccompNotif
	pid   int
	pidfd int
	mem   procMemory
	taken []int
	// creds: a message carried SCM_CREDENTIALS, which the kernel accepts
	// only with the sender's own pid: the hands cannot send the caller's.
	creds bool
}

// errnoError is a call's answer decided before the hands sees it.
type errnoError unix.Errno

func (e errnoError) Error() string { return unix.Errno(e).Error() }

// take copies descriptor fd of the caller into wrun.
func (c *mediation) take(fd int) (int, error) {
	got, err := unix.PidfdGetfd(c.pidfd, fd, 0)
	if err != nil {
		return -1, errnoError(unix.EBADF)
	}
	c.taken = append(c.taken, got)
	return got, nil
}

// valid reports whether the call still waits (so the pid names its
// caller, and what was opened through it is the caller's).
func (c *mediation) valid() bool {
	return ioctlPtr(c.o.fd, ioctlNotifIDValid, unsafe.Pointer(&c.n.ID)) == nil
}

// mediate serves one mediated call and answers it. It runs on a
// goroutine of its own (a call may block: a connect, a datagram to a
// full queue); the observer counts it busy until it has answered.
func (o *observer) mediate(n *seccompNotif) {
	c := &mediation{o: o, n: n, pid: int(n.PID), pidfd: -1, mem: procMemory(n.PID)}
	defer func() {
		for _, fd := range c.taken {
			unix.Close(fd)
		}
		if c.pidfd >= 0 {
			unix.Close(c.pidfd)
		}
	}()
	var ret int64
	var errno unix.Errno
	var outside string
	var err error
	func() {
		// A fault decoding what the child passed fails the call.
		defer func() {
			if recover() != nil {
				err = errnoError(unix.EPERM)
			}
		}()
		ret, errno, outside, err = c.serve()
	}()
	if err != nil {
		var e errnoError
		if !errors.As(err, &e) {
			e = errnoError(unix.EPERM)
		}
		ret, errno = -1, unix.Errno(e)
	}
	var prog string
	var predicted []access.Missing
	var name string
	if outside != "" {
		prog = programOf(c.pid)
	} else if errno != 0 && o.observing {
		// What the plan's rules refused (a TCP connect, a bind where the
		// sandbox may not make a socket), for the report only: read
		// again, while the call still waits.
		if call, ok := o.calls[uint32(n.Data.Nr)]; ok {
			if ev, err := o.read(c.pid, call, &n.Data); err == nil {
				name, predicted = predict(o.model, ev)
				prog = programOf(c.pid)
			}
		}
	}
	o.answer(n.ID, ret, errno)
	for _, m := range predicted {
		o.recordAs(c.pid, prog, name, m.Path, m.Addr, m.Right)
	}
	if outside != "" {
		op := "connect"
		if nr := uint32(n.Data.Nr); nr != unix.SYS_CONNECT {
			op = "sendto"
		}
		o.recordAs(c.pid, prog, op, outside, "unix:"+outside, "connect_unix")
	}
	if errno == unix.EPERM && c.creds && outside == "" {
		// The kernel refused the hands' send of the caller's credentials
		// (their pid is not the hands'): the mediation's limit, reported.
		o.recordAs(c.pid, programOf(c.pid), access.OpConnect, "", "SCM_CREDENTIALS", access.RightSendCredentials)
	}
}

// answer answers a notification with a return value or an errno.
func (o *observer) answer(id uint64, ret int64, errno unix.Errno) {
	r := seccompNotifResp{ID: id, Val: ret}
	if errno != 0 {
		r.Val, r.Error = 0, -int32(errno)
	}
	_ = ioctlPtr(o.fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&r))
}

// serve decodes the call, takes what it names and has the hands perform
// it.
func (c *mediation) serve() (int64, unix.Errno, string, error) {
	pidfd, err := unix.PidfdOpen(c.pid, unix.PIDFD_THREAD)
	if err != nil {
		return 0, 0, "", errnoError(unix.EPERM)
	}
	c.pidfd = pidfd
	if !c.valid() {
		return 0, 0, "", errnoError(unix.EINTR)
	}
	args := c.n.Data.Args
	fd := int(int32(args[0]))
	r := request{cwd: -1}
	switch uint32(c.n.Data.Nr) {
	case unix.SYS_CONNECT, unix.SYS_BIND:
		r.op = handsConnect
		if uint32(c.n.Data.Nr) == unix.SYS_BIND {
			r.op = handsBind
		}
		if r.addr, err = c.sockaddr(args[1], int64(int32(args[2]))); err != nil {
			return 0, 0, "", err
		}
	case unix.SYS_SENDTO:
		r.op, r.flags = handsSend, int(int32(args[3]))
		if r.addr, err = c.sockaddr(args[4], int64(int32(args[5]))); err != nil {
			return 0, 0, "", err
		}
		if r.sock, err = c.take(fd); err != nil {
			return 0, 0, "", err
		}
		if r.data, err = c.data(r.sock, []span{{args[1], args[2]}}); err != nil {
			return 0, 0, "", err
		}
		return c.run(r)
	case unix.SYS_SENDMSG:
		r.op = handsSend
		if r.sock, err = c.take(fd); err != nil {
			return 0, 0, "", err
		}
		if err := c.msghdr(&r, uintptr(args[1])); err != nil {
			return 0, 0, "", err
		}
		r.flags = int(int32(args[2]))
		return c.run(r)
	case unix.SYS_SENDMMSG:
		return c.sendmmsg(fd, uintptr(args[1]), uint32(args[2]), int(int32(args[3])))
	default:
		return 0, 0, "", errnoError(unix.ENOSYS)
	}
	if r.sock, err = c.take(fd); err != nil {
		return 0, 0, "", err
	}
	return c.run(r)
}

// run completes r (the socket's type checked, the working directory
// taken for a relative path) and has the hands perform it.
func (c *mediation) run(r request) (int64, unix.Errno, string, error) {
	var st unix.Stat_t
	if err := unix.Fstat(r.sock, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return 0, 0, "", errnoError(unix.ENOTSOCK)
	}
	if p, ok := unixPath(r.addr); ok && p[0] != '/' {
		cwd, err := unix.Open(fmt.Sprintf("/proc/%d/cwd", c.pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, 0, "", errnoError(unix.EPERM)
		}
		c.taken = append(c.taken, cwd)
		r.cwd = cwd
	}
	if !c.valid() {
		return 0, 0, "", errnoError(unix.EINTR)
	}
	a := c.o.med.call(r)
	return a.ret, a.errno, a.outside, nil
}

// sockaddr copies a socket address as the kernel does
// (move_addr_to_kernel): a length beyond a sockaddr_storage, or negative,
// is EINVAL; an unreadable address EFAULT.
func (c *mediation) sockaddr(ptr uint64, n int64) ([]byte, error) {
	if n < 0 || n > maxSockaddr {
		return nil, errnoError(unix.EINVAL)
	}
	if ptr == 0 || n == 0 {
		return nil, nil
	}
	b := make([]byte, n)
	if err := c.mem.read(uintptr(ptr), b); err != nil {
		return nil, errnoError(unix.EFAULT)
	}
	return b, nil
}

// data copies the bytes of a send, at most what one request to the
// hands carries: a datagram larger than that is refused (EMSGSIZE), a
// stream send is shortened.
func (c *mediation) data(sock int, iov []span) ([]byte, error) {
	var total uint64
	for _, v := range iov {
		total += v.n
	}
	if total > handsMaxMsg {
		typ, _ := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE)
		if typ != unix.SOCK_STREAM {
			return nil, errnoError(unix.EMSGSIZE)
		}
	}
	var out []byte
	for _, v := range iov {
		n := min(v.n, uint64(handsMaxMsg-len(out)))
		if n == 0 {
			continue
		}
		b := make([]byte, n)
		if err := c.mem.read(uintptr(v.base), b); err != nil {
			return nil, errnoError(unix.EFAULT)
		}
		out = append(out, b...)
		if len(out) >= handsMaxMsg {
			break
		}
	}
	return out, nil
}

// span is a range of the caller's memory.
type span struct{ base, n uint64 }

// msghdr reads a struct msghdr at ptr into r: the address, the data and
// the control messages, with the descriptors of SCM_RIGHTS taken.
func (c *mediation) msghdr(r *request, ptr uintptr) error {
	// struct msghdr on a 64-bit machine: name, namelen (int, padded),
	// iov, iovlen, control, controllen, flags.
	var hb [56]byte
	if err := c.mem.read(ptr, hb[:]); err != nil {
		return errnoError(unix.EFAULT)
	}
	ne := binary.NativeEndian
	name, namelen := ne.Uint64(hb[0:]), int32(ne.Uint32(hb[8:]))
	iovPtr, iovlen := ne.Uint64(hb[16:]), ne.Uint64(hb[24:])
	ctrlPtr, ctrllen := ne.Uint64(hb[32:]), ne.Uint64(hb[40:])
	if namelen < 0 {
		return errnoError(unix.EINVAL)
	}
	var err error
	// The kernel clamps the length to a sockaddr_storage.
	if r.addr, err = c.sockaddr(name, min(int64(namelen), maxSockaddr)); err != nil {
		return err
	}
	if iovlen > 1024 { // UIO_MAXIOV
		return errnoError(unix.EMSGSIZE)
	}
	if iovlen > 0 {
		raw := make([]byte, iovlen*16) // struct iovec: base, length
		if err := c.mem.read(uintptr(iovPtr), raw); err != nil {
			return errnoError(unix.EFAULT)
		}
		iov := make([]span, iovlen)
		for i := range iov {
			iov[i] = span{ne.Uint64(raw[16*i:]), ne.Uint64(raw[16*i+8:])}
		}
		if r.data, err = c.data(r.sock, iov); err != nil {
			return err
		}
	}
	if ctrllen == 0 {
		return nil
	}
	if ctrllen > 64<<10 {
		return errnoError(unix.ENOBUFS)
	}
	ctrl := make([]byte, ctrllen)
	if err := c.mem.read(uintptr(ctrlPtr), ctrl); err != nil {
		return errnoError(unix.EFAULT)
	}
	return c.control(r, ctrl)
}

// control splits control messages into the descriptors of SCM_RIGHTS
// (taken from the caller, to pass on) and the rest (passed raw).
func (c *mediation) control(r *request, ctrl []byte) error {
	for len(ctrl) >= unix.SizeofCmsghdr {
		var h unix.Cmsghdr
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&h)), unix.SizeofCmsghdr), ctrl)
		if h.Len < unix.SizeofCmsghdr || h.Len > uint64(len(ctrl)) {
			return errnoError(unix.EINVAL)
		}
		body := ctrl[unix.SizeofCmsghdr:h.Len]
		next := min(uint64(unix.CmsgSpace(int(h.Len)-unix.SizeofCmsghdr)), uint64(len(ctrl)))
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_RIGHTS {
			for i := 0; i+4 <= len(body); i += 4 {
				if len(r.passed) >= 253 { // SCM_MAX_FD
					return errnoError(unix.EINVAL)
				}
				fd, err := c.take(int(int32(binary.NativeEndian.Uint32(body[i:]))))
				if err != nil {
					return err
				}
				r.passed = append(r.passed, fd)
			}
		} else {
			if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_CREDENTIALS {
				c.creds = true
			}
			r.ctrl = append(r.ctrl, ctrl[:next]...)
		}
		ctrl = ctrl[next:]
	}
	return nil
}

// sendmmsg performs each message of the vector as a sendmsg, as the
// kernel does, writing each msg_len back; it stops at the first error,
// which it reports only when no message was sent.
func (c *mediation) sendmmsg(fd int, vec uintptr, vlen uint32, flags int) (int64, unix.Errno, string, error) {
	const sizeofMmsghdr = 64 // struct mmsghdr: a msghdr, then msg_len (padded)
	vlen = min(vlen, 1024)   // UIO_MAXIOV
	sock, err := c.take(fd)
	if err != nil {
		return 0, 0, "", err
	}
	sent := int64(0)
	for i := uint32(0); i < vlen; i++ {
		r := request{op: handsSend, sock: sock, cwd: -1, flags: flags}
		at := vec + uintptr(i)*sizeofMmsghdr
		kept := len(c.taken)
		ret, errno, outside, err := func() (int64, unix.Errno, string, error) {
			if err := c.msghdr(&r, at); err != nil {
				return 0, 0, "", err
			}
			return c.run(r)
		}()
		// This message's descriptors (passed on, the working directory)
		// are done with; the socket stays for the next.
		for _, fd := range c.taken[kept:] {
			unix.Close(fd)
		}
		c.taken = c.taken[:kept]
		if err == nil && errno == 0 {
			var l [4]byte
			binary.NativeEndian.PutUint32(l[:], uint32(ret))
			if writeMem(c.pid, at+56, l[:]) != nil && sent == 0 {
				return 0, 0, "", errnoError(unix.EFAULT)
			}
			sent++
			continue
		}
		if sent > 0 {
			return sent, 0, outside, nil
		}
		if err != nil {
			return 0, 0, "", err
		}
		return ret, errno, outside, nil
	}
	return sent, 0, "", nil
}

// writeMem copies buf to addr in pid's memory.
func writeMem(pid int, addr uintptr, buf []byte) error {
	local := []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
	remote := []unix.RemoteIovec{{Base: addr, Len: len(buf)}}
	n, err := unix.ProcessVMWritev(pid, local, remote, 0)
	if err != nil {
		return err
	}
	if n != len(buf) {
		return io.ErrShortWrite
	}
	return nil
}

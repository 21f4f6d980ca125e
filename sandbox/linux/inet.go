//go:build linux

package linux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/sandbox"
)

// IP sockets under network=loopback and network=hosts.
//
// Landlock's TCP rules name ports, not addresses, and none covers UDP
// before ABI 10, so they cannot say "loopback only". The filter sends wrun
// every connect, bind, listen and addressed send (sockets.go takes the
// socket and copies the address once), and for an IP socket wrun:
//
//   - binds only to a loopback address (127.0.0.0/8, ::1; IPv4-mapped
//     IPv6 addresses as IPv4). listen() on an unbound socket and the first
//     send on an unbound datagram socket would bind it to every address:
//     wrun binds it to the loopback address of its family first.
//   - connects and sends only to a loopback address, and there only to a
//     socket this sandbox bound, to an address an --allow-host entry
//     names, or (network=hosts) to wrun's proxy. "This sandbox bound" is
//     the kernel's answer: wrun records the cookie (SO_COOKIE, unique for
//     the boot) of each socket it bound for the command, and before a
//     connect asks sock_diag which socket would receive at that address
//     (the listener for TCP, the bound socket for UDP). After a TCP
//     connect it asks again: a socket that changed hands in between (the
//     sandbox's listener closed, another process bound the port) is shut
//     down before the command sees it connected.
//   - makes the call itself, on the command's socket, with an address it
//     encodes from what it checked (never the bytes the command wrote, so
//     a field the kernel reads that wrun did not cannot matter).
//
// A connect to a loopback port nobody listens on gets ECONNREFUSED, as it
// would without wrun; a datagram to one nobody bound is dropped (UDP may
// lose it) and its send succeeds.

// maxInetSocks bounds the sockets a run's mediation binds: beyond it a
// bind fails with ENOBUFS.
const maxInetSocks = 1 << 18

// inetState is what the mediation knows of the sandbox's IP sockets.
type inetState struct {
	mu sync.Mutex
	// ours are the cookies of the sockets wrun bound for the command.
	ours map[uint64]struct{}
}

func newInetState() *inetState { return &inetState{ours: map[uint64]struct{}{}} }

// add records sock as one of the sandbox's.
func (st *inetState) add(sock int) error {
	cookie, err := socketCookie(sock)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.ours) >= maxInetSocks {
		return unix.ENOBUFS
	}
	st.ours[cookie] = struct{}{}
	return nil
}

func (st *inetState) has(cookie uint64) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	_, ok := st.ours[cookie]
	return ok
}

// socketCookie is the socket's cookie (SO_COOKIE, Linux 4.12).
func socketCookie(sock int) (uint64, error) {
	var v uint64
	l := uint32(8)
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(sock), unix.SOL_SOCKET, unix.SO_COOKIE, uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return 0, e
	}
	return v, nil
}

// inetSock is what wrun reads of an IP socket it took.
type inetSock struct {
	domain, typ, proto int
}

// inetOf reports whether sock is an IP socket, and what kind.
func inetOf(sock int) (inetSock, bool) {
	d, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil || d != unix.AF_INET && d != unix.AF_INET6 {
		return inetSock{}, false
	}
	t, _ := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE)
	p, _ := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	return inetSock{domain: d, typ: t, proto: p}, true
}

// udp reports whether the socket is a UDP one (datagrams, UDP or
// UDP-Lite's protocol number 0 default).
func (k inetSock) udp() bool { return k.typ == unix.SOCK_DGRAM && k.proto == unix.IPPROTO_UDP }

// tcp reports whether the socket is a plain TCP one.
func (k inetSock) tcp() bool { return k.typ == unix.SOCK_STREAM && k.proto == unix.IPPROTO_TCP }

// icmp reports whether the socket is an unprivileged ping socket.
func (k inetSock) icmp() bool {
	return k.typ == unix.SOCK_DGRAM && (k.proto == unix.IPPROTO_ICMP || k.proto == unix.IPPROTO_ICMPV6)
}

// peerKind is what an address names for a call on an IP socket.
type peerKind int

const (
	peerNone    peerKind = iota // no address: the call uses the socket's own peer, or dissolves it
	peerAddr                    // an address, checked
	peerInvalid                 // one the kernel refuses: answered with errno
)

// inetAddr reads addr as the kernel reads it for a call on a socket of
// domain (call: SYS_CONNECT, SYS_BIND or a send): an AF_INET socket takes
// AF_INET and, except to connect, AF_UNSPEC as IPv4 (AF_UNSPEC with
// INADDR_ANY binds to every address); an AF_INET6 socket takes AF_INET6,
// and AF_INET to connect or send (as an IPv4-mapped address). AF_UNSPEC
// to connect dissolves the association; AF_UNSPEC to send on an IPv6
// socket names no address.
func inetAddr(domain int, call uintptr, addr []byte) (peerKind, netip.AddrPort, unix.Errno) {
	if len(addr) == 0 {
		if call == unix.SYS_BIND || call == unix.SYS_CONNECT {
			return peerInvalid, netip.AddrPort{}, unix.EINVAL
		}
		return peerNone, netip.AddrPort{}, 0
	}
	if len(addr) < 2 {
		return peerInvalid, netip.AddrPort{}, unix.EINVAL
	}
	fam := int(binary.NativeEndian.Uint16(addr))
	v4 := func() (peerKind, netip.AddrPort, unix.Errno) {
		if len(addr) < unix.SizeofSockaddrInet4 {
			return peerInvalid, netip.AddrPort{}, unix.EINVAL
		}
		ip := netip.AddrFrom4([4]byte(addr[4:8]))
		return peerAddr, netip.AddrPortFrom(ip, binary.BigEndian.Uint16(addr[2:])), 0
	}
	switch {
	case fam == unix.AF_UNSPEC && call == unix.SYS_CONNECT:
		return peerNone, netip.AddrPort{}, 0
	case domain == unix.AF_INET && (fam == unix.AF_INET || fam == unix.AF_UNSPEC):
		return v4()
	case domain == unix.AF_INET6 && fam == unix.AF_INET6:
		if len(addr) < unix.SizeofSockaddrInet6-4 { // SIN6_LEN_RFC2133
			return peerInvalid, netip.AddrPort{}, unix.EINVAL
		}
		ip := netip.AddrFrom16([16]byte(addr[8:24])).Unmap()
		return peerAddr, netip.AddrPortFrom(ip, binary.BigEndian.Uint16(addr[2:])), 0
	case domain == unix.AF_INET6 && fam == unix.AF_INET && call != unix.SYS_BIND:
		return v4()
	case domain == unix.AF_INET6 && fam == unix.AF_UNSPEC && call != unix.SYS_BIND:
		return peerNone, netip.AddrPort{}, 0
	}
	return peerInvalid, netip.AddrPort{}, unix.EAFNOSUPPORT
}

// encodeInet is the address wrun passes the kernel for a: of the socket's
// own family (an IPv4 address on an IPv6 socket IPv4-mapped).
func encodeInet(domain int, a netip.AddrPort) []byte {
	if domain == unix.AF_INET {
		b := make([]byte, unix.SizeofSockaddrInet4)
		binary.NativeEndian.PutUint16(b, unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], a.Port())
		ip := a.Addr().As4()
		copy(b[4:], ip[:])
		return b
	}
	b := make([]byte, unix.SizeofSockaddrInet6)
	binary.NativeEndian.PutUint16(b, unix.AF_INET6)
	binary.BigEndian.PutUint16(b[2:], a.Port())
	ip := a.Addr().As16()
	copy(b[8:], ip[:])
	return b
}

// inetName is an address as a denial names it: "127.0.0.1:5432",
// "[::1]:53", UDP ones prefixed "udp:".
func inetName(k inetSock, a netip.AddrPort) string {
	if k.udp() || k.icmp() {
		return "udp:" + a.String()
	}
	return a.String()
}

// loopbackOf is the loopback address of a socket's family.
func loopbackOf(domain int) netip.Addr {
	if domain == unix.AF_INET6 {
		return netip.IPv6Loopback()
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}

// wildcardLoopback is the loopback address a bind to every address
// (0.0.0.0, ::, ::ffff:0.0.0.0) is made to instead: 127.0.0.1 for an
// IPv4 socket; for an IPv6 one, ::1 when it is IPv6-only, else IPv4's
// loopback as ::ffff:127.0.0.1, which is what clients of a dual-stack
// ":0" listener dial most (127.0.0.1:PORT, localhost, the listener's own
// address, which Go then shows as 127.0.0.1:PORT).
func wildcardLoopback(sock, domain int) netip.Addr {
	v4 := netip.AddrFrom4([4]byte{127, 0, 0, 1})
	if domain != unix.AF_INET6 {
		return v4
	}
	if only, err := unix.GetsockoptInt(sock, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY); err != nil || only != 0 {
		return netip.IPv6Loopback()
	}
	return netip.AddrFrom16(v4.As16())
}

// inetMediated reports whether sc's socket is an IP one whose calls wrun
// decides (network=loopback and hosts), and what kind.
func (s *supervisor) inetMediated(sc *sockCall) (inetSock, bool) {
	if !s.pl.NetMediated {
		return inetSock{}, false
	}
	return inetOf(sc.sock)
}

// inetCall performs connect, bind or an addressed send (nr) on the IP
// socket sc.sock of kind k, under network=loopback or hosts.
func (s *supervisor) inetCall(sc *sockCall, k inetSock, nr uintptr) (int, unix.Errno) {
	sc.reported = true
	kind, a, errno := inetAddr(k.domain, nr, sc.addr)
	if kind == peerInvalid {
		return -1, errno
	}
	if !k.tcp() && !k.udp() && !k.icmp() {
		// SCTP, MPTCP and the rest: sock_diag is not asked about them.
		s.recordInet(sc, nr, k, a, kind)
		return -1, unix.EACCES
	}
	if kind == peerAddr {
		a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	}
	switch {
	case nr == unix.SYS_BIND:
		if a.Addr().IsUnspecified() {
			// Every address is loopback here: a test server's ":0" works
			// and is reachable from the sandbox only.
			a = netip.AddrPortFrom(wildcardLoopback(sc.sock, k.domain), a.Port())
		}
		if !a.Addr().IsLoopback() {
			s.recordInet(sc, nr, k, a, kind)
			return -1, unix.EACCES
		}
		return s.inetBind(sc, encodeInet(k.domain, a))
	case kind == peerNone:
		return s.inetPerform(sc, nr, sc.addr)
	}
	if px := s.proxy(); px != nil && k.tcp() && nr == unix.SYS_CONNECT && a == px.Addr() {
		return s.proxyConnect(sc, k, px)
	}
	ok, nobody := s.inetReaches(k, a)
	if !ok {
		if nobody {
			if nr == unix.SYS_CONNECT || !k.udp() {
				return -1, unix.ECONNREFUSED
			}
			return len(sc.data), 0 // a datagram nobody receives: lost
		}
		s.recordInet(sc, nr, k, a, kind)
		return -1, unix.EACCES
	}
	if nr != unix.SYS_CONNECT && (k.udp() || k.icmp()) {
		// The first send on an unbound datagram socket binds it to every
		// address: bind it to loopback first.
		if ret, errno := s.bindUnbound(sc, k); errno != 0 {
			return ret, errno
		}
	}
	ret, errno := s.inetPerform(sc, nr, encodeInet(k.domain, a))
	if errno != 0 && errno != unix.EINPROGRESS || nr != unix.SYS_CONNECT || !k.tcp() {
		return ret, errno
	}
	if ok, _ := s.inetReaches(k, a); !ok {
		// What answered is no longer the sandbox's own.
		_ = unix.Shutdown(sc.sock, unix.SHUT_RDWR)
		s.recordInet(sc, nr, k, a, kind)
		return -1, unix.EACCES
	}
	return ret, errno
}

// proxy is wrun's proxy under network=hosts, or nil.
func (s *supervisor) proxy() sandbox.Proxy {
	if !s.pl.Policy.Network.Proxy {
		return nil
	}
	return s.pl.Options.Proxy
}

// proxyConnect connects the command's TCP socket to wrun's proxy: bound to
// loopback first (if it is not), so that its own address is known and
// told to the proxy before the connect, which is then the only one from
// that address the proxy serves.
func (s *supervisor) proxyConnect(sc *sockCall, k inetSock, px sandbox.Proxy) (int, unix.Errno) {
	sa, err := unix.Getsockname(sc.sock)
	if err != nil {
		return -1, errnoOf(err)
	}
	if port(sa) == 0 {
		// The proxy's own address family: an IPv6 socket binds the
		// IPv4-mapped loopback address.
		from := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 0)
		if ret, errno := s.inetBind(sc, encodeInet(k.domain, from)); errno != 0 {
			return ret, errno
		}
		if sa, err = unix.Getsockname(sc.sock); err != nil {
			return -1, errnoOf(err)
		}
	}
	var local netip.AddrPort
	switch v := sa.(type) {
	case *unix.SockaddrInet4:
		local = netip.AddrPortFrom(netip.AddrFrom4(v.Addr), uint16(v.Port))
	case *unix.SockaddrInet6:
		local = netip.AddrPortFrom(netip.AddrFrom16(v.Addr).Unmap(), uint16(v.Port))
	default:
		return -1, unix.EAFNOSUPPORT
	}
	px.Expect(local)
	ret, errno := s.inetPerform(sc, unix.SYS_CONNECT, encodeInet(k.domain, px.Addr()))
	if errno != 0 && errno != unix.EINPROGRESS {
		px.Forget(local)
	}
	return ret, errno
}

// inetReaches reports whether the command may reach a (loopback, an
// --allow-host address, or a socket of the sandbox's: see above), and
// when not whether nothing is there at all.
func (s *supervisor) inetReaches(k inetSock, a netip.AddrPort) (ok, nobody bool) {
	if !a.Addr().IsLoopback() {
		return false, false
	}
	for _, h := range s.pl.Policy.Network.Hosts {
		if h.MatchesAddr(a.Addr(), int(a.Port())) {
			return true, false
		}
	}
	if k.icmp() {
		return true, false // the kernel itself answers a ping on loopback
	}
	proto := unix.IPPROTO_TCP
	if k.udp() {
		proto = unix.IPPROTO_UDP
	}
	cookie, err := inetDiagReceiver(proto, a)
	if err != nil {
		return false, errors.Is(err, unix.ENOENT)
	}
	return s.inet.has(cookie), false
}

// inetPerform makes call nr on the command's socket with addr, on a
// performer.
func (s *supervisor) inetPerform(sc *sockCall, nr uintptr, addr []byte) (int, unix.Errno) {
	var ret int
	var errno unix.Errno
	if !s.perform(sc.c, func() {
		if nr == unix.SYS_CONNECT {
			ret, errno = sockaddrCall(unix.SYS_CONNECT, sc.sock, addr)
			return
		}
		ret, errno = rawSendmsg(sc.sock, addr, sc.data, append(unixRightsOf(sc.passed), sc.ctrl...), sc.flags)
	}) {
		return -1, unix.EPERM
	}
	return ret, errno
}

func unixRightsOf(fds []int) []byte {
	if len(fds) == 0 {
		return nil
	}
	return unix.UnixRights(fds...)
}

// inetBind binds the command's socket to addr (a loopback address) and
// records it as the sandbox's.
//
// It binds without the options that share a port with a socket already
// there, so that a port held outside the sandbox is EADDRINUSE:
// SO_REUSEPORT (it joins a host listener's group, so that the kernel
// hands the command some of the connections the host's clients make, and
// sock_diag, asked from no source, may name the command's member while a
// real connect reaches the host's; the filter refuses setting it, this
// clears one the socket came with) and SO_REUSEADDR on a datagram socket
// (the newest socket at a shared UDP address receives its datagrams).
// Both are cleared on the command's socket for good.
func (s *supervisor) inetBind(sc *sockCall, addr []byte) (int, unix.Errno) {
	if err := unix.SetsockoptInt(sc.sock, unix.SOL_SOCKET, unix.SO_REUSEPORT, 0); err != nil {
		return -1, errnoOf(err)
	}
	if t, err := unix.GetsockoptInt(sc.sock, unix.SOL_SOCKET, unix.SO_TYPE); err != nil {
		return -1, errnoOf(err)
	} else if t == unix.SOCK_DGRAM {
		if err := unix.SetsockoptInt(sc.sock, unix.SOL_SOCKET, unix.SO_REUSEADDR, 0); err != nil {
			return -1, errnoOf(err)
		}
	}
	var ret int
	var errno unix.Errno
	if !s.perform(sc.c, func() { ret, errno = sockaddrCall(unix.SYS_BIND, sc.sock, addr) }) {
		return -1, unix.EPERM
	}
	if errno == 0 {
		if err := s.inet.add(sc.sock); err != nil {
			// Not recorded, so nothing of the sandbox's could reach it;
			// the bind is reported failed (the socket stays bound).
			return -1, errnoOf(err)
		}
	}
	return ret, errno
}

// bindUnbound binds an unbound IP socket to its family's loopback address
// (port 0: the kernel picks one), so that a listen or a first datagram
// does not bind it to every address.
func (s *supervisor) bindUnbound(sc *sockCall, k inetSock) (int, unix.Errno) {
	sa, err := unix.Getsockname(sc.sock)
	if err != nil {
		return -1, errnoOf(err)
	}
	if port(sa) != 0 {
		return 0, 0
	}
	return s.inetBind(sc, encodeInet(k.domain, netip.AddrPortFrom(loopbackOf(k.domain), 0)))
}

// port is an IP socket address's port (0 for another family).
func port(sa unix.Sockaddr) int {
	switch v := sa.(type) {
	case *unix.SockaddrInet4:
		return v.Port
	case *unix.SockaddrInet6:
		return v.Port
	}
	return 0
}

// listenCall performs listen: an unbound IP socket is bound to loopback
// first. Other sockets listen as they are.
func (s *supervisor) listenCall(c *notice) {
	args := c.args()
	sock, err := s.takeSocket(c, int(int32(args[0])))
	if err != nil {
		if errors.Is(err, errNotSocket) {
			err = unix.ENOTSOCK
		}
		c.answer(-1, errnoOf(err))
		return
	}
	sc := &sockCall{c: c, sock: sock, cwd: -1, take: c.takeFD}
	if k, ok := inetOf(sock); ok {
		if s.narrower(c) {
			c.answer(-1, unix.EPERM) // binds are refused to a narrower sandbox
			return
		}
		if ret, errno := s.bindUnbound(sc, k); errno != 0 {
			c.answer(int64(ret), errno)
			return
		}
	}
	var errno unix.Errno
	if !s.perform(c, func() { _, _, errno = unix.Syscall(unix.SYS_LISTEN, uintptr(sock), uintptr(int32(args[1])), 0) }) {
		return
	}
	c.answer(0, errno)
}

// recordInet records a refused call on an IP socket, naming the address
// and port.
func (s *supervisor) recordInet(sc *sockCall, nr uintptr, k inetSock, a netip.AddrPort, kind peerKind) {
	op, right := access.OpConnect, access.RightConnectTCP
	switch {
	case nr == unix.SYS_BIND && k.tcp():
		op, right = access.OpBind, access.RightBindTCP
	case nr == unix.SYS_BIND:
		op, right = access.OpBind, access.RightBindUDP
	case !k.tcp():
		right = access.RightConnectUDP
	}
	name := inetName(k, a)
	if kind != peerAddr {
		name = familyName(k.domain)
	}
	if !k.tcp() && !k.udp() && !k.icmp() {
		name = fmt.Sprintf("%s (protocol %d)", name, k.proto)
	}
	s.record(sc.c, op, "", name, right)
}

// inetDiagReceiver asks sock_diag which socket would receive at a: for
// TCP the listener a connect to a would reach, for UDP the socket a
// datagram to a would be delivered to. It returns its cookie, or ENOENT
// when there is none.
func inetDiagReceiver(proto int, a netip.AddrPort) (uint64, error) {
	// struct inet_diag_req_v2: family, protocol, ext, pad, states, then
	// struct inet_diag_sockid: sport, dport (big endian), src[4], dst[4]
	// (32-bit words), if, cookie[2].
	r := make([]byte, 56)
	ne := binary.NativeEndian
	addr := a.Addr().Unmap()
	r[0] = unix.AF_INET
	ip := addr.AsSlice()
	if addr.Is6() {
		r[0] = unix.AF_INET6
	}
	r[1] = byte(proto)
	ne.PutUint32(r[4:], ^uint32(0))
	id := r[8:]
	// TCP looks the socket up as the local end (src) of a connection
	// from nowhere; UDP as the destination (dst) of a datagram.
	if proto == unix.IPPROTO_TCP {
		binary.BigEndian.PutUint16(id[0:], a.Port())
		copy(id[4:], ip)
	} else {
		binary.BigEndian.PutUint16(id[2:], a.Port())
		copy(id[20:], ip)
	}
	ne.PutUint32(id[40:], ^uint32(0)) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], ^uint32(0))
	data, err := sockDiag(r)
	if err != nil {
		return 0, err
	}
	// struct inet_diag_msg: family, state, timer, retrans, then the
	// sockid (its cookie at 40), ...
	if len(data) < 4+48 {
		return 0, errors.New("sock_diag: short answer")
	}
	lo, hi := ne.Uint32(data[4+40:]), ne.Uint32(data[4+44:])
	return uint64(hi)<<32 | uint64(lo), nil
}

package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// doInet performs the IP socket operations of network=loopback's tests;
// ok is false for an op it does not know. Each uses raw system calls, so
// that what the kernel (or wrun) answers is what the probe reports.
func doInet(op string, args []string) (ok bool, err error) {
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch op {
	case "loop-self":
		// A TCP server on 127.0.0.1:0 and a client of it, one byte across.
		return true, selfTCP(unix.AF_INET, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}, unix.AF_INET)
	case "loop-self6":
		return true, selfTCP(unix.AF_INET6, &unix.SockaddrInet6{Addr: [16]byte{15: 1}}, unix.AF_INET6)
	case "loop-mapped":
		// An IPv6 server bound to ::ffff:127.0.0.1, reached by an IPv4
		// client.
		return true, selfTCP(unix.AF_INET6, &unix.SockaddrInet6{Addr: [16]byte{10: 0xff, 11: 0xff, 12: 127, 15: 1}}, unix.AF_INET)
	case "listen-unbound":
		// listen() on an unbound socket: it must end up on loopback.
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			return true, err
		}
		defer unix.Close(fd)
		if err := unix.Listen(fd, 1); err != nil {
			return true, err
		}
		return true, onLoopback(fd)
	case "udp-self":
		// A UDP socket on 127.0.0.1:0 and an unbound one sending to it:
		// the datagram arrives, and the sender is bound to loopback.
		rx, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if err != nil {
			return true, err
		}
		defer unix.Close(rx)
		if err := unix.Bind(rx, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			return true, err
		}
		sa, _ := unix.Getsockname(rx)
		tx, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if err != nil {
			return true, err
		}
		defer unix.Close(tx)
		if err := unix.Sendto(tx, []byte("x"), 0, sa); err != nil {
			return true, err
		}
		b := make([]byte, 4)
		_ = unix.SetsockoptTimeval(rx, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 5})
		if _, _, err := unix.Recvfrom(rx, b, 0); err != nil {
			return true, err
		}
		return true, onLoopback(tx)
	case "bind":
		// bind a TCP socket to HOST:PORT arg(0) (IPv6 in brackets).
		a, err := netip.ParseAddrPort(arg(0))
		if err != nil {
			return true, err
		}
		fam, sa := sockaddrOf(a)
		fd, err := unix.Socket(fam, unix.SOCK_STREAM, 0)
		if err != nil {
			return true, err
		}
		defer unix.Close(fd)
		return true, unix.Bind(fd, sa)
	case "bind-loopback":
		// bind a TCP socket to HOST:PORT arg(0) and report whether it
		// ended up on loopback.
		a, err := netip.ParseAddrPort(arg(0))
		if err != nil {
			return true, err
		}
		fam, sa := sockaddrOf(a)
		fd, err := unix.Socket(fam, unix.SOCK_STREAM, 0)
		if err != nil {
			return true, err
		}
		defer unix.Close(fd)
		if err := unix.Bind(fd, sa); err != nil {
			return true, err
		}
		return true, onLoopback(fd)
	case "listen-any":
		// A Go test server on ":0" (every address, dual stack): it must
		// be on loopback, and its clients reach it by its own address,
		// 127.0.0.1 and localhost.
		return true, listenAny()
	case "bind-unspec":
		// bind an IPv4 socket with family AF_UNSPEC and INADDR_ANY, which
		// the kernel takes as every address.
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			return true, err
		}
		defer unix.Close(fd)
		var raw [16]byte
		binary.NativeEndian.PutUint16(raw[:], unix.AF_UNSPEC)
		_, _, e := unix.Syscall(unix.SYS_BIND, uintptr(fd), uintptr(unsafe.Pointer(&raw[0])), 16)
		if e != 0 {
			return true, e
		}
		return true, nil
	case "tcp-raw":
		// connect an IP socket of the address's own family to HOST:PORT
		// arg(0); "tcp6-mapped" connects an IPv6 socket to the IPv4
		// address as ::ffff:a.b.c.d.
		a, err := netip.ParseAddrPort(arg(0))
		if err != nil {
			return true, err
		}
		return true, connectTo(a, false)
	case "tcp6-mapped":
		a, err := netip.ParseAddrPort(arg(0))
		if err != nil {
			return true, err
		}
		return true, connectTo(a, true)
	case "reuseport-tcp", "reuseport-udp":
		// Join the SO_REUSEPORT group of a listener at HOST:PORT arg(0)
		// with sockets of the probe's own, then connect (send) there
		// many times: the kernel spreads connections over the group by a
		// hash of the source address. reuseport-tcp succeeds when a
		// connection reads "H" (the test's listener writes it; the
		// probe's own never accept); reuseport-udp when its datagrams
		// were sent (the test counts what its socket got).
		a, err := netip.ParseAddrPort(arg(0))
		if err != nil {
			return true, err
		}
		return true, reuseportJoin(a, op == "reuseport-udp")
	case "udp-connect-send", "udp-sendmmsg", "udp6-mapped", "tcp-fastopen", "raw-udp", "raw-udp-connect":
		// Datagrams (or a TCP fast-open SYN with data) to the IPv4
		// HOST:PORT arg(0) by other calls than the plain sendto of "udp":
		// connect then write; sendmmsg whose first message goes to the
		// probe's own socket and the second to arg(0); an IPv6 socket to
		// the IPv4-mapped address; sendto(MSG_FASTOPEN); a raw socket
		// (CAP_NET_RAW) carrying a UDP header of its own, by sendto or
		// connect then write.
		a, err := netip.ParseAddrPort(arg(0))
		if err != nil {
			return true, err
		}
		return true, otherSends(op, a)
	case "reuseaddr-udp-recv":
		// Bind a UDP socket with SO_REUSEADDR to HOST:PORT arg(0), where
		// the test's own socket (also SO_REUSEADDR) is, and wait (5s)
		// for a datagram meant for it.
		a, err := netip.ParseAddrPort(arg(0))
		if err != nil {
			return true, err
		}
		fam, sa := sockaddrOf(a)
		fd, err := unix.Socket(fam, unix.SOCK_DGRAM, 0)
		if err != nil {
			return true, err
		}
		defer unix.Close(fd)
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return true, err
		}
		if err := unix.Bind(fd, sa); err != nil {
			return true, fmt.Errorf("bind: %w", err)
		}
		_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 5})
		b := make([]byte, 16)
		_, _, err = unix.Recvfrom(fd, b, 0)
		return true, err
	case "reuseport-late":
		// A TCP listener on 127.0.0.1:0 that sets SO_REUSEPORT after its
		// bind; it prints its port and waits (5s) for a connection,
		// answered "S": a host service starting later on that port with
		// SO_REUSEPORT would share its connections with it.
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
		if err != nil {
			return true, err
		}
		defer unix.Close(fd)
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			return true, err
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			return true, err
		}
		if err := unix.Listen(fd, 128); err != nil {
			return true, err
		}
		sa, _ := unix.Getsockname(fd)
		fmt.Println(sa.(*unix.SockaddrInet4).Port)
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(p, 5000); err != nil || n == 0 {
			return true, fmt.Errorf("no connection came (%v)", err)
		}
		s, _, err := unix.Accept(fd)
		if err != nil {
			return true, err
		}
		_, err = unix.Write(s, []byte("S"))
		unix.Close(s)
		return true, err
	case "reuseport-accept":
		// Join the SO_REUSEPORT group of a listener at HOST:PORT arg(0)
		// with 4 listeners and wait (5s) for a connection on any: one
		// accepted is answered "S" and the probe succeeds.
		a, err := netip.ParseAddrPort(arg(0))
		if err != nil {
			return true, err
		}
		return true, reuseportAccept(a)
	}
	return false, nil
}

func reuseportJoin(a netip.AddrPort, udp bool) error {
	fam, sa := sockaddrOf(a)
	typ := unix.SOCK_STREAM
	if udp {
		typ = unix.SOCK_DGRAM
	}
	var last error
	for round := 0; round < 8; round++ {
		// One more socket in the group each round.
		g, err := unix.Socket(fam, typ, 0)
		if err != nil {
			return err
		}
		defer unix.Close(g)
		if err := unix.SetsockoptInt(g, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			return err
		}
		if err := unix.Bind(g, sa); err != nil {
			return fmt.Errorf("bind: %w", err)
		}
		if !udp {
			if err := unix.Listen(g, 128); err != nil {
				return err
			}
		}
		sent := 0
		for i := 0; i < 20; i++ {
			c, err := unix.Socket(fam, typ, 0)
			if err != nil {
				return err
			}
			if udp {
				err = unix.Sendto(c, []byte("x"), 0, sa)
				unix.Close(c)
				if err != nil {
					last = err
					break
				}
				sent++
				continue
			}
			if err := unix.Connect(c, sa); err != nil {
				unix.Close(c)
				last = err
				break
			}
			_ = unix.SetsockoptTimeval(c, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 100000})
			b := make([]byte, 1)
			n, _ := unix.Read(c, b)
			unix.Close(c)
			if n == 1 && b[0] == 'H' {
				return nil
			}
		}
		if udp && sent == 20 {
			return nil
		}
	}
	if last == nil {
		last = fmt.Errorf("never reached the listener at %s", a)
	}
	return last
}

func sockaddrOf(a netip.AddrPort) (int, unix.Sockaddr) {
	if a.Addr().Is4() {
		return unix.AF_INET, &unix.SockaddrInet4{Addr: a.Addr().As4(), Port: int(a.Port())}
	}
	return unix.AF_INET6, &unix.SockaddrInet6{Addr: a.Addr().As16(), Port: int(a.Port())}
}

func connectTo(a netip.AddrPort, mapped bool) error {
	fam, sa := sockaddrOf(a)
	if mapped {
		fam, sa = unix.AF_INET6, &unix.SockaddrInet6{Addr: netip.AddrFrom16(a.Addr().As16()).As16(), Port: int(a.Port())}
	}
	fd, err := unix.Socket(fam, unix.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, sa)
}

// selfTCP listens on an address of family fam and connects a client of
// family cfam to it, sending one byte.
func selfTCP(fam int, at unix.Sockaddr, cfam int) error {
	l, err := unix.Socket(fam, unix.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(l)
	if err := unix.Bind(l, at); err != nil {
		return err
	}
	if err := unix.Listen(l, 1); err != nil {
		return err
	}
	sa, err := unix.Getsockname(l)
	if err != nil {
		return err
	}
	if v, ok := sa.(*unix.SockaddrInet6); ok && cfam == unix.AF_INET {
		sa = &unix.SockaddrInet4{Addr: [4]byte(v.Addr[12:]), Port: v.Port}
	}
	c, err := unix.Socket(cfam, unix.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(c)
	if err := unix.Connect(c, sa); err != nil {
		return err
	}
	s, _, err := unix.Accept(l)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	if _, err := unix.Write(c, []byte("x")); err != nil {
		return err
	}
	b := make([]byte, 1)
	if _, err := unix.Read(s, b); err != nil {
		return err
	}
	return nil
}

// onLoopback reports an error unless fd is bound to a loopback address.
func listenAny() error {
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("x"))
			c.Close()
		}
	}()
	addr := ln.Addr().(*net.TCPAddr)
	if !addr.IP.IsLoopback() {
		return fmt.Errorf("listening on %s, not loopback", addr)
	}
	port := strconv.Itoa(addr.Port)
	for _, dst := range []string{addr.String(), "127.0.0.1:" + port, "localhost:" + port} {
		c, err := net.DialTimeout("tcp", dst, 5*time.Second)
		if err != nil {
			return fmt.Errorf("dialling %s: %w", dst, err)
		}
		b := make([]byte, 1)
		_, err = c.Read(b)
		c.Close()
		if err != nil {
			return fmt.Errorf("reading from %s: %w", dst, err)
		}
	}
	return nil
}

func onLoopback(fd int) error {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return err
	}
	var a netip.Addr
	switch v := sa.(type) {
	case *unix.SockaddrInet4:
		a = netip.AddrFrom4(v.Addr)
	case *unix.SockaddrInet6:
		a = netip.AddrFrom16(v.Addr).Unmap()
	}
	if !a.IsLoopback() {
		return fmt.Errorf("bound to %s, not loopback", a)
	}
	return nil
}

func reuseportAccept(a netip.AddrPort) error {
	fam, sa := sockaddrOf(a)
	var fds []unix.PollFd
	for i := 0; i < 4; i++ {
		g, err := unix.Socket(fam, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
		if err != nil {
			return err
		}
		defer unix.Close(g)
		if err := unix.SetsockoptInt(g, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			return err
		}
		if err := unix.Bind(g, sa); err != nil {
			return fmt.Errorf("bind: %w", err)
		}
		if err := unix.Listen(g, 128); err != nil {
			return err
		}
		fds = append(fds, unix.PollFd{Fd: int32(g), Events: unix.POLLIN})
	}
	n, err := unix.Poll(fds, 5000)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("no connection came")
	}
	for _, p := range fds {
		if p.Revents&unix.POLLIN != 0 {
			s, _, err := unix.Accept(int(p.Fd))
			if err != nil {
				return err
			}
			_, err = unix.Write(s, []byte("S"))
			unix.Close(s)
			return err
		}
	}
	return fmt.Errorf("poll: nothing readable")
}

func otherSends(op string, a netip.AddrPort) error {
	_, sa := sockaddrOf(a)
	switch op {
	case "udp-connect-send":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := unix.Connect(fd, sa); err != nil {
			return err
		}
		_, err = unix.Write(fd, []byte("x"))
		return err
	case "udp-sendmmsg":
		own, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if err != nil {
			return err
		}
		defer unix.Close(own)
		if err := unix.Bind(own, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			return err
		}
		osa, _ := unix.Getsockname(own)
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		names := [2]unix.RawSockaddrInet4{
			{Family: unix.AF_INET, Addr: [4]byte{127, 0, 0, 1}},
			{Family: unix.AF_INET, Addr: a.Addr().As4()},
		}
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&names[0].Port))[:], uint16(osa.(*unix.SockaddrInet4).Port))
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&names[1].Port))[:], a.Port())
		data := []byte("x")
		iov := unix.Iovec{Base: &data[0]}
		iov.SetLen(1)
		type mmsghdr struct {
			hdr unix.Msghdr
			n   uint32
			_   [4]byte
		}
		var msgs [2]mmsghdr
		for i := range msgs {
			msgs[i].hdr.Name = (*byte)(unsafe.Pointer(&names[i]))
			msgs[i].hdr.Namelen = unix.SizeofSockaddrInet4
			msgs[i].hdr.Iov = &iov
			msgs[i].hdr.SetIovlen(1)
		}
		r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), 2, 0, 0, 0)
		if e != 0 {
			return e
		}
		if r != 2 {
			return fmt.Errorf("sendmmsg sent %d of 2", r)
		}
		return nil
	case "udp6-mapped":
		fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Sendto(fd, []byte("x"), 0, &unix.SockaddrInet6{Addr: netip.AddrFrom16(a.Addr().As16()).As16(), Port: int(a.Port())})
	case "tcp-fastopen":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Sendto(fd, []byte("x"), unix.MSG_FASTOPEN, sa)
	case "raw-udp", "raw-udp-connect":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_UDP)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		pkt := make([]byte, 9)
		binary.BigEndian.PutUint16(pkt[0:], 9999)
		binary.BigEndian.PutUint16(pkt[2:], a.Port())
		binary.BigEndian.PutUint16(pkt[4:], 9)
		pkt[8] = 'x'
		if op == "raw-udp" {
			return unix.Sendto(fd, pkt, 0, &unix.SockaddrInet4{Addr: a.Addr().As4()})
		}
		if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: a.Addr().As4()}); err != nil {
			return err
		}
		_, err = unix.Write(fd, pkt)
		return err
	}
	return fmt.Errorf("unknown op %s", op)
}

package main

import (
	"encoding/binary"
	"fmt"
	"net/netip"
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
	}
	return false, nil
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

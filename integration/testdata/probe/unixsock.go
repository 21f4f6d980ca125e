package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// doUnix performs the UNIX-socket operations; ok is false for an op it
// does not know.
func doUnix(op string, args []string) (ok bool, err error) {
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	msg := []byte("probe\n")
	sendDgram := func(fd int, path string, useMsg bool) error {
		sa := &unix.SockaddrUnix{Name: path}
		if useMsg {
			return unix.Sendmsg(fd, msg, nil, sa, 0)
		}
		return unix.Sendto(fd, msg, 0, sa)
	}
	switch op {
	case "unix-seqpacket":
		// connect a SOCK_SEQPACKET socket to the path arg(0).
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return true, err
		}
		defer unix.Close(fd)
		return true, unix.Connect(fd, &unix.SockaddrUnix{Name: arg(0)})
	case "unixgram-sendto", "unixgram-sendmsg":
		// one datagram from an unbound AF_UNIX datagram socket to arg(0).
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return true, err
		}
		defer unix.Close(fd)
		return true, sendDgram(fd, arg(0), op == "unixgram-sendmsg")
	case "dgram-pair-sendto", "dgram-pair-sendmsg", "dgram-pair-connect":
		// one datagram to arg(0) from one end of a datagram socketpair.
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return true, err
		}
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		if op == "dgram-pair-connect" {
			if err := unix.Connect(fds[0], &unix.SockaddrUnix{Name: arg(0)}); err != nil {
				return true, err
			}
			_, err := unix.Write(fds[0], msg)
			return true, err
		}
		return true, sendDgram(fds[0], arg(0), op == "dgram-pair-sendmsg")
	case "unix-self":
		return true, unixSelf(arg(0))
	case "abstract-self":
		return true, abstractSelf(arg(0))
	case "abstract-auto":
		return true, abstractAuto()
	case "unix-peercred":
		return true, unixPeercred(arg(0))
	case "unix-bench":
		n, _ := strconv.Atoi(arg(1))
		return true, unixBench(arg(0), n)
	case "unix-race":
		n, _ := strconv.Atoi(arg(3))
		return true, unixRace(arg(0), arg(1), arg(2), n)
	}
	return false, nil
}

// abstractSelf listens on the abstract UNIX address "@"+name and talks
// to it, then binds a datagram socket at "@"+name+"-dgram" and sends it
// one datagram from an unbound socket: the sandbox's own abstract sockets,
// which its scope must leave reachable.
func abstractSelf(name string) error {
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		return fmt.Errorf("listen: %w", unwrap(err))
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		b := make([]byte, 16)
		n, _ := c.Read(b)
		c.Write(b[:n])
		c.Close()
	}()
	c, err := net.Dial("unix", "@"+name)
	if err != nil {
		return fmt.Errorf("dial: %w", unwrap(err))
	}
	c.Write([]byte("ping"))
	b := make([]byte, 16)
	n, err := c.Read(b)
	c.Close()
	if err != nil || string(b[:n]) != "ping" {
		return fmt.Errorf("echo: %q %v", b[:n], err)
	}
	srv, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: "@" + name + "-dgram", Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("listen unixgram: %w", unwrap(err))
	}
	defer srv.Close()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Sendto(fd, []byte("one"), 0, &unix.SockaddrUnix{Name: "@" + name + "-dgram"}); err != nil {
		return fmt.Errorf("sendto: %w", err)
	}
	srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, _, err := srv.ReadFrom(b); err != nil || string(b[:n]) != "one" {
		return fmt.Errorf("datagram: %q %v", b[:n], err)
	}
	return nil
}

// abstractAuto binds a stream socket to an abstract name the kernel
// picks (autobind: an empty address), listens, and connects to it by that
// name: the sandbox's own abstract socket, reachable from inside.
func abstractAuto() error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrUnix{}); err != nil {
		return fmt.Errorf("autobind: %w", err)
	}
	if err := unix.Listen(fd, 1); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return err
	}
	name := sa.(*unix.SockaddrUnix).Name
	if !strings.HasPrefix(name, "@") {
		return fmt.Errorf("autobind gave %q, not an abstract name", name)
	}
	c, err := net.Dial("unix", name)
	if err != nil {
		return fmt.Errorf("dial %s: %w", name, unwrap(err))
	}
	return c.Close()
}

// unixSelf listens on UNIX sockets of each type in dir and talks to each
// through the Go net package, as a test suite does; then once more with a
// path relative to the working directory, and a datagram socket that
// sends to a bound one with sendto.
func unixSelf(dir string) error {
	for _, typ := range []string{"unix", "unixpacket"} {
		path := filepath.Join(dir, typ+".sock")
		ln, err := net.Listen(typ, path)
		if err != nil {
			return fmt.Errorf("listen %s: %w", typ, unwrap(err))
		}
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b := make([]byte, 16)
			n, _ := c.Read(b)
			c.Write(b[:n])
			c.Close()
		}()
		c, err := net.Dial(typ, path)
		if err != nil {
			ln.Close()
			return fmt.Errorf("dial %s: %w", typ, unwrap(err))
		}
		c.Write([]byte("ping"))
		b := make([]byte, 16)
		n, err := c.Read(b)
		c.Close()
		ln.Close()
		if err != nil || string(b[:n]) != "ping" {
			return fmt.Errorf("%s echo: %q %v", typ, b[:n], err)
		}
	}
	// Datagrams: a bound server, a connected client and an unbound sendto.
	path := filepath.Join(dir, "dgram.sock")
	srv, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("listen unixgram: %w", unwrap(err))
	}
	defer srv.Close()
	c, err := net.Dial("unixgram", path)
	if err != nil {
		return fmt.Errorf("dial unixgram: %w", unwrap(err))
	}
	c.Write([]byte("one"))
	c.Close()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := unix.Sendto(fd, []byte("two"), 0, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return fmt.Errorf("sendto: %w", err)
	}
	if err := unix.Sendmsg(fd, []byte("three"), nil, &unix.SockaddrUnix{Name: path}, 0); err != nil {
		unix.Close(fd)
		return fmt.Errorf("sendmsg: %w", err)
	}
	unix.Close(fd)
	var got []string
	for i := 0; i < 3; i++ {
		b := make([]byte, 16)
		n, _, err := srv.ReadFrom(b)
		if err != nil {
			return err
		}
		got = append(got, string(b[:n]))
	}
	if fmt.Sprint(got) != "[one two three]" {
		return fmt.Errorf("datagrams: %v", got)
	}
	// A relative path, against the working directory.
	if err := os.Chdir(dir); err != nil {
		return err
	}
	ln, err := net.Listen("unix", "rel.sock")
	if err != nil {
		return fmt.Errorf("listen relative: %w", unwrap(err))
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	rc, err := net.Dial("unix", "rel.sock")
	if err != nil {
		return fmt.Errorf("dial relative: %w", unwrap(err))
	}
	rc.Close()
	return nil
}

// unixPeercred listens in dir, connects, and checks on both ends that
// the peer's uid (SO_PEERCRED) is the probe's own; it prints both pids.
func unixPeercred(dir string) error {
	path := filepath.Join(dir, "cred.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		return unwrap(err)
	}
	defer ln.Close()
	type res struct {
		cred *unix.Ucred
		err  error
	}
	rc := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			rc <- res{err: err}
			return
		}
		defer c.Close()
		raw, _ := c.(*net.UnixConn).SyscallConn()
		var cred *unix.Ucred
		var cerr error
		raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
		rc <- res{cred, cerr}
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		return unwrap(err)
	}
	defer c.Close()
	raw, _ := c.(*net.UnixConn).SyscallConn()
	var client *unix.Ucred
	raw.Control(func(fd uintptr) { client, _ = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	r := <-rc
	if r.err != nil {
		return r.err
	}
	fmt.Printf("server sees pid %d uid %d; client sees pid %d uid %d; own pid %d uid %d\n",
		r.cred.Pid, r.cred.Uid, client.Pid, client.Uid, os.Getpid(), os.Getuid())
	if int(r.cred.Uid) != os.Getuid() || int(client.Uid) != os.Getuid() {
		return fmt.Errorf("peer uid differs: server sees %d, client sees %d, own %d", r.cred.Uid, client.Uid, os.Getuid())
	}
	return nil
}

// raceAddr is the address the connecting threads pass and the flipping
// thread rewrites: it lives in memory both share, outside the Go heap.
var raceAddr [2][unsafe.Sizeof(unix.RawSockaddrUnix{})]byte

// unixRace tries, n times each, to reach the outside stream listener
// outStream and datagram socket outDgram by racing a check: one thread
// connects (and sends) with an address that names a socket of its own
// in dir while another rewrites it to name the outside one, and a third
// swaps the descriptor the call names (dup2) between sockets. It prints
// how many calls succeeded; the test checks on the outside listeners
// that nothing arrived.
func unixRace(outStream, outDgram, dir string, n int) error {
	own := filepath.Join(dir, "own.sock")
	ln, err := net.Listen("unix", own)
	if err != nil {
		return unwrap(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ownD := filepath.Join(dir, "own-dgram.sock")
	dsrv, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: ownD, Net: "unixgram"})
	if err != nil {
		return unwrap(err)
	}
	defer dsrv.Close()
	go func() {
		b := make([]byte, 64)
		for {
			if _, _, err := dsrv.ReadFrom(b); err != nil {
				return
			}
		}
	}()
	fill := func(i int, path string) {
		var sa [unsafe.Sizeof(unix.RawSockaddrUnix{})]byte
		*(*uint16)(unsafe.Pointer(&sa[0])) = unix.AF_UNIX
		copy(sa[2:], path)
		raceAddr[i] = sa
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	// The flipper rewrites the path bytes in place, back and forth.
	flip := func(i int, a, b string) {
		defer wg.Done()
		pa := append([]byte(a), make([]byte, 108-len(a))...)
		pb := append([]byte(b), make([]byte, 108-len(b))...)
		for k := 0; !stop.Load(); k++ {
			p := pa
			if k%2 == 1 {
				p = pb
			}
			copy(raceAddr[i][2:], p)
		}
	}
	fill(0, own)
	fill(1, ownD)
	// The swapper points descriptor slot at fresh sockets of either type.
	slot, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	swap := func() {
		defer wg.Done()
		for k := 0; !stop.Load(); k++ {
			typ := unix.SOCK_STREAM
			if k%2 == 1 {
				typ = unix.SOCK_DGRAM
			}
			fd, err := unix.Socket(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				continue
			}
			unix.Dup3(fd, slot, unix.O_CLOEXEC)
			unix.Close(fd)
		}
	}
	wg.Add(3)
	go flip(0, own, outStream)
	go flip(1, ownD, outDgram)
	go swap()
	var ok, denied int
	for k := 0; k < n; k++ {
		// A connect on a fresh socket, with the flipping address.
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		_, _, e := syscall.Syscall(syscall.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&raceAddr[0][0])), uintptr(len(raceAddr[0])))
		count(e, &ok, &denied)
		unix.Close(fd)
		// A datagram on a fresh socket, with the flipping address.
		fd, err = unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		_, _, e = syscall.Syscall6(syscall.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&msgRace[0])), uintptr(len(msgRace)), 0,
			uintptr(unsafe.Pointer(&raceAddr[1][0])), uintptr(len(raceAddr[1])))
		count(e, &ok, &denied)
		unix.Close(fd)
		// The swapped slot: connect it to our own socket, then send a
		// datagram to ours; the slot may be either type at any moment.
		_, _, e = syscall.Syscall(syscall.SYS_CONNECT, uintptr(slot), uintptr(unsafe.Pointer(&raceAddr[0][0])), uintptr(len(raceAddr[0])))
		count(e, &ok, &denied)
		_, _, e = syscall.Syscall6(syscall.SYS_SENDTO, uintptr(slot), uintptr(unsafe.Pointer(&msgRace[0])), uintptr(len(msgRace)), 0,
			uintptr(unsafe.Pointer(&raceAddr[1][0])), uintptr(len(raceAddr[1])))
		count(e, &ok, &denied)
	}
	stop.Store(true)
	wg.Wait()
	fmt.Printf("race: %d calls succeeded, %d failed\n", ok, denied)
	return nil
}

var msgRace = bytes.Repeat([]byte("r"), 8)

func count(e syscall.Errno, ok, denied *int) {
	if e == 0 {
		*ok++
	} else {
		*denied++
	}
}

// unixBench times n connects (socket, connect, close) to a stream socket
// it listens on in dir, and n datagrams sent with sendto to one it bound,
// and prints the time each took on average. It only measures: what a
// sandbox adds is read by running it bare and under wrun.
func unixBench(dir string, n int) error {
	path := filepath.Join(dir, "bench.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		return unwrap(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	sa := &unix.SockaddrUnix{Name: path}
	start := time.Now()
	for i := 0; i < n; i++ {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		if err := unix.Connect(fd, sa); err != nil {
			unix.Close(fd)
			return err
		}
		unix.Close(fd)
	}
	conn := time.Since(start) / time.Duration(n)
	dpath := filepath.Join(dir, "bench-dgram.sock")
	srv, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: dpath, Net: "unixgram"})
	if err != nil {
		return unwrap(err)
	}
	defer srv.Close()
	go func() {
		b := make([]byte, 64)
		for {
			if _, _, err := srv.ReadFrom(b); err != nil {
				return
			}
		}
	}()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	dsa := &unix.SockaddrUnix{Name: dpath}
	start = time.Now()
	for i := 0; i < n; i++ {
		if err := unix.Sendto(fd, []byte("bench"), 0, dsa); err != nil {
			return err
		}
	}
	send := time.Since(start) / time.Duration(n)
	fmt.Printf("connect %.1f us, sendto %.1f us (%d each)\n", float64(conn.Nanoseconds())/1e3, float64(send.Nanoseconds())/1e3, n)
	return nil
}

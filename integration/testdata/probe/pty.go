package main

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// ptyRoundTrip opens a pseudo-terminal pair as a pty library does (open
// /dev/ptmx, read its number, unlock it, open /dev/pts/N) and sends a line
// each way through it.
func ptyRoundTrip() error {
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /dev/ptmx: %w", err)
	}
	defer unix.Close(m)
	n, err := unix.IoctlGetInt(m, unix.TIOCGPTN)
	if err != nil {
		return fmt.Errorf("ptsname (TIOCGPTN): %w", err)
	}
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		return fmt.Errorf("unlockpt (TIOCSPTLCK): %w", err)
	}
	name := "/dev/pts/" + strconv.Itoa(n)
	s, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	defer unix.Close(s)
	if _, err := unix.Write(m, []byte("ping\n")); err != nil {
		return fmt.Errorf("writing the master: %w", err)
	}
	if err := readUntil(s, "ping"); err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	if _, err := unix.Write(s, []byte("pong\n")); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := readUntil(m, "pong"); err != nil {
		return fmt.Errorf("reading the master: %w", err)
	}
	return nil
}

// readUntil reads fd until want has arrived, for up to ten seconds.
func readUntil(fd int, want string) error {
	var got []byte
	deadline := time.Now().Add(10 * time.Second)
	for !bytes.Contains(got, []byte(want)) {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("got %q, want %q", got, want)
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, int(left/time.Millisecond)+1); err != nil && err != unix.EINTR {
			return err
		}
		if pfd[0].Revents&unix.POLLIN == 0 {
			continue
		}
		buf := make([]byte, 256)
		k, err := unix.Read(fd, buf)
		if err != nil {
			return err
		}
		got = append(got, buf[:k]...)
	}
	return nil
}

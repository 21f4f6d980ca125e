//go:build linux

package linux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Reading the kernel's Landlock audit records.
//
// With Landlock ABI 7 the kernel can write an audit record for every access
// it refuses, naming the domain, the missing rights and the object. wrun
// reads them from the audit multicast group (CAP_AUDIT_READ, the group
// auditd's readers use, so wrun never takes auditd's place) and uses them to
// confirm the observer's predictions and to report what the observer does
// not watch: reads, executions, signals. Records exist only while auditing
// is on (auditctl -e 1); wrun never switches it on, and asks Landlock to log
// its child's denials (LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON) only when it
// is going to read them, so a run adds nothing to a system's audit log that
// wrun does not consume.

const (
	auditGet          = 1000 // AUDIT_GET
	auditNlgrpReadlog = 1    // AUDIT_NLGRP_READLOG

	// How long wrun listens for late records once the command has ended.
	// Measured: every record had arrived when the command was reaped, on
	// an idle and on a loaded machine (40 of 40 runs each); this is margin.
	auditQuiet = 200 * time.Microsecond
)

// ProbeAudit asks the kernel whether auditing is on and whether wrun may
// read its records. It changes nothing.
func ProbeAudit() AuditStatus {
	enabled, err := auditEnabled()
	if err != nil {
		return AuditStatus{Detail: err.Error()}
	}
	if !enabled {
		return AuditStatus{Detail: "auditing is off (auditctl -e 1 turns it on)"}
	}
	fd, err := auditSubscribe()
	if err != nil {
		return AuditStatus{Detail: err.Error()}
	}
	unix.Close(fd)
	return AuditStatus{Readable: true, Detail: "auditing is on and its records are readable (CAP_AUDIT_READ)"}
}

// auditEnabled asks the kernel for its audit status (AUDIT_GET, which needs
// CAP_AUDIT_CONTROL in the initial namespaces).
func auditEnabled() (bool, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return false, fmt.Errorf("audit netlink socket: %w", err)
	}
	defer unix.Close(fd)
	req := make([]byte, unix.NLMSG_HDRLEN)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], auditGet)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(req[8:], 1)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return false, fmt.Errorf("asking for the audit status: %w", err)
	}
	tv := unix.NsecToTimeval(int64(time.Second))
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return false, fmt.Errorf("reading the audit status: %w", err)
	}
	if n < unix.NLMSG_HDRLEN+8 {
		return false, errors.New("reading the audit status: short reply")
	}
	switch binary.NativeEndian.Uint16(buf[4:]) {
	case unix.NLMSG_ERROR:
		errno := unix.Errno(-int32(binary.NativeEndian.Uint32(buf[unix.NLMSG_HDRLEN:])))
		return false, fmt.Errorf("reading the audit status: %w", errno)
	case auditGet:
		// struct audit_status: mask, then enabled.
		return binary.NativeEndian.Uint32(buf[unix.NLMSG_HDRLEN+4:]) != 0, nil
	}
	return false, errors.New("reading the audit status: unexpected reply")
}

// auditSubscribe joins the audit log multicast group.
func auditSubscribe() (int, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_AUDIT)
	if err != nil {
		return -1, fmt.Errorf("audit netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1 << (auditNlgrpReadlog - 1)}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("joining the audit log group (needs CAP_AUDIT_READ): %w", err)
	}
	// Room for bursts; a root process may go beyond rmem_max.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 4<<20)
	return fd, nil
}

// auditReader collects Landlock records while the sandbox runs. A
// goroutine reads them as they come, so a long run cannot overflow the
// socket; finish stops it and reads the last ones itself.
type auditReader struct {
	fd           int
	stopR, stopW int
	done         chan struct{}

	mu   sync.Mutex
	log  auditLog
	lost bool
	buf  []byte
}

// openAudit starts reading audit records, or returns nil when they cannot
// be read here (auditing off, no CAP_AUDIT_READ): the run then goes on
// with the observer alone.
func openAudit() *auditReader {
	if enabled, err := auditEnabled(); err != nil || !enabled {
		return nil
	}
	fd, err := auditSubscribe()
	if err != nil {
		return nil
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		unix.Close(fd)
		return nil
	}
	a := &auditReader{fd: fd, stopR: p[0], stopW: p[1], done: make(chan struct{}),
		log: newAuditLog(), buf: make([]byte, 1<<16)}
	go a.run()
	return a
}

func (a *auditReader) run() {
	defer close(a.done)
	defer unix.Close(a.stopR)
	for {
		fds := []unix.PollFd{{Fd: int32(a.fd), Events: unix.POLLIN}, {Fd: int32(a.stopR), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		a.drain()
	}
}

// drain reads every record waiting on the socket.
func (a *auditReader) drain() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		n, _, err := unix.Recvfrom(a.fd, a.buf, 0)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ENOBUFS):
			a.lost = true
			continue
		case err != nil:
			return // EAGAIN: all read
		}
		for _, m := range splitNetlink(a.buf[:n]) {
			a.log.add(m.typ, m.text)
		}
	}
}

// finish stops reading and returns the denials of the domain created by
// the process restrictor (its pid as the audit records give it).
func (a *auditReader) finish(restrictor int) (denials []auditDenial, lost bool) {
	_, _ = unix.Write(a.stopW, []byte{0})
	unix.Close(a.stopW)
	<-a.done
	defer unix.Close(a.fd)
	// Every record of the run was queued in the kernel before the command
	// was reaped; the kernel's audit thread delivers them soon after. Read
	// until none has come for auditQuiet (ppoll: poll's milliseconds would
	// make every run wait one). The domain's deallocation record, with the
	// kernel's total, comes 40-70 ms later (it waits for RCU): it is used
	// when it is there, not waited for.
	quiet := unix.NsecToTimespec(int64(auditQuiet))
	for restrictor > 0 {
		a.drain()
		fds := []unix.PollFd{{Fd: int32(a.fd), Events: unix.POLLIN}}
		n, err := unix.Ppoll(fds, &quiet, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			break
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.log.flush()
	return a.log.denialsOf(restrictor), a.lost || a.log.incomplete(restrictor)
}

// netlinkMsg is one audit record as received.
type netlinkMsg struct {
	typ  int
	text string
}

// splitNetlink cuts a datagram into its netlink messages.
func splitNetlink(b []byte) []netlinkMsg {
	var out []netlinkMsg
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(binary.NativeEndian.Uint32(b[0:]))
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			break
		}
		typ := int(binary.NativeEndian.Uint16(b[4:]))
		text := b[unix.NLMSG_HDRLEN:l]
		for len(text) > 0 && text[len(text)-1] == 0 {
			text = text[:len(text)-1]
		}
		out = append(out, netlinkMsg{typ, string(text)})
		al := (l + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
		if al > len(b) {
			break
		}
		b = b[al:]
	}
	return out
}

//go:build linux

package linux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/sys/unix"
)

// The command's memory, as wrun reads a notified call's arguments.
//
// Every byte of it is the command's and hostile: nothing read may crash
// or stall wrun, every length is bounded before it sizes anything, and a
// value read is wrun's copy, used as it was read (what the command writes
// there afterwards changes nothing wrun does). The memory is reached
// through a descriptor of /proc/TID/mem opened when the notification is
// received and checked once against it (SECCOMP_IOCTL_NOTIF_ID_VALID, as
// seccomp_unotify(2) describes): the descriptor names that process's
// memory for good, so a thread that dies and a pid that is reused later
// cannot send a read or a write elsewhere.

// childMemory is where a call's arguments are read from, and the byte
// counts of sendmmsg written back to.
type childMemory interface {
	// read copies len(buf) bytes at addr.
	read(addr uint64, buf []byte) error
	// readString reads a NUL-terminated string of at most max bytes
	// (PATH_MAX for paths).
	readString(addr uint64, max int) (string, error)
	// write copies buf to addr.
	write(addr uint64, buf []byte) error
}

// memFile is a process's memory through an open /proc/TID/mem.
type memFile struct{ fd int }

func (m memFile) read(addr uint64, buf []byte) error {
	for len(buf) > 0 {
		if addr > 1<<63 {
			return unix.EFAULT
		}
		n, err := unix.Pread(m.fd, buf, int64(addr))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			return unix.EFAULT
		}
		buf = buf[n:]
		addr += uint64(n)
	}
	return nil
}

// readString reads page by page, so that a string ending just before an
// unmapped page is still read.
func (m memFile) readString(addr uint64, max int) (string, error) {
	const page = 4096
	var out []byte
	for len(out) < max {
		n := min(page-int(addr%page), max-len(out))
		buf := make([]byte, n)
		if err := m.read(addr, buf); err != nil {
			return "", err
		}
		if i := indexByte(buf, 0); i >= 0 {
			return string(append(out, buf[:i]...)), nil
		}
		out = append(out, buf...)
		addr += uint64(n)
	}
	return "", unix.ENAMETOOLONG
}

// write copies buf to addr (the byte counts sendmmsg reports).
func (m memFile) write(addr uint64, buf []byte) error {
	for len(buf) > 0 {
		n, err := unix.Pwrite(m.fd, buf, int64(addr))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			return unix.EFAULT
		}
		buf = buf[n:]
		addr += uint64(n)
	}
	return nil
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// maxSockaddr bounds how much of a socket address is read: a
// sockaddr_storage is 128 bytes, whatever length the caller claims.
const maxSockaddr = 128

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
			return fam, "unix:@" + strings.ToValidUTF8(strings.TrimRight(string(p[1:]), "\x00"), "?")
		}
		if i := indexByte(p, 0); i >= 0 {
			p = p[:i]
		}
		return fam, "unix:" + string(p)
	}
	return fam, familyName(fam)
}

//go:build linux

package linux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// sockDiag sends one SOCK_DIAG_BY_FAMILY request whose body (the
// family's request struct: inet_diag_req_v2, unix_diag_req) is req, and
// returns the body of the kernel's first answer. An error answer comes
// back as its errno (ENOENT: no such socket).
func sockDiag(req []byte) ([]byte, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	defer unix.Close(fd)
	msg := make([]byte, unix.NLMSG_HDRLEN+len(req))
	ne := binary.NativeEndian
	ne.PutUint32(msg[0:], uint32(len(msg)))
	ne.PutUint16(msg[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(msg[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(msg[8:], 1)
	copy(msg[unix.NLMSG_HDRLEN:], req)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil || len(msgs) == 0 {
		return nil, errors.New("sock_diag: bad answer")
	}
	m := msgs[0]
	if m.Header.Type == unix.NLMSG_ERROR {
		if len(m.Data) >= 4 {
			if e := int32(ne.Uint32(m.Data)); e != 0 {
				return nil, fmt.Errorf("sock_diag: %w", unix.Errno(-e))
			}
		}
		return nil, errors.New("sock_diag: error answer")
	}
	return m.Data, nil
}

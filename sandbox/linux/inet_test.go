//go:build linux

package linux

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/grant"
)

// TestInetAddr: addresses are read as the kernel reads them for each
// call and socket family, including the forms it accepts that do not
// carry the socket's own family (AF_UNSPEC binding every address on an
// IPv4 socket, an IPv4 address on an IPv6 socket), and re-encoded in the
// socket's family.
func TestInetAddr(t *testing.T) {
	v4 := func(fam uint16, ip [4]byte, port uint16) []byte {
		b := make([]byte, 16)
		binary.NativeEndian.PutUint16(b, fam)
		binary.BigEndian.PutUint16(b[2:], port)
		copy(b[4:], ip[:])
		return b
	}
	v6 := func(ip netip.Addr, port uint16) []byte {
		b := make([]byte, 28)
		binary.NativeEndian.PutUint16(b, unix.AF_INET6)
		binary.BigEndian.PutUint16(b[2:], port)
		a := ip.As16()
		copy(b[8:], a[:])
		return b
	}
	lo := [4]byte{127, 0, 0, 1}
	tests := []struct {
		name   string
		domain int
		call   uintptr
		addr   []byte
		kind   peerKind
		want   string
		errno  unix.Errno
	}{
		{"v4 connect", unix.AF_INET, unix.SYS_CONNECT, v4(unix.AF_INET, lo, 80), peerAddr, "127.0.0.1:80", 0},
		{"v4 unspec connect dissolves", unix.AF_INET, unix.SYS_CONNECT, v4(unix.AF_UNSPEC, [4]byte{}, 0), peerNone, "", 0},
		{"v4 unspec bind is every address", unix.AF_INET, unix.SYS_BIND, v4(unix.AF_UNSPEC, [4]byte{}, 0), peerAddr, "0.0.0.0:0", 0},
		{"v4 unspec send is an address", unix.AF_INET, unix.SYS_SENDMSG, v4(unix.AF_UNSPEC, [4]byte{10, 0, 0, 1}, 53), peerAddr, "10.0.0.1:53", 0},
		{"v4 short", unix.AF_INET, unix.SYS_CONNECT, v4(unix.AF_INET, lo, 80)[:8], peerInvalid, "", unix.EINVAL},
		{"v4 socket, v6 address", unix.AF_INET, unix.SYS_CONNECT, v6(netip.IPv6Loopback(), 80), peerInvalid, "", unix.EAFNOSUPPORT},
		{"v6 connect", unix.AF_INET6, unix.SYS_CONNECT, v6(netip.IPv6Loopback(), 80), peerAddr, "[::1]:80", 0},
		{"v6 mapped is v4", unix.AF_INET6, unix.SYS_CONNECT, v6(netip.MustParseAddr("::ffff:127.0.0.1"), 80), peerAddr, "127.0.0.1:80", 0},
		{"v6 socket, v4 address to send", unix.AF_INET6, unix.SYS_SENDMSG, v4(unix.AF_INET, lo, 53), peerAddr, "127.0.0.1:53", 0},
		{"v6 socket, v4 address to bind", unix.AF_INET6, unix.SYS_BIND, v4(unix.AF_INET, lo, 53), peerInvalid, "", unix.EAFNOSUPPORT},
		{"v6 unspec send names none", unix.AF_INET6, unix.SYS_SENDMSG, v4(unix.AF_UNSPEC, lo, 53), peerNone, "", 0},
		{"v6 short", unix.AF_INET6, unix.SYS_CONNECT, v6(netip.IPv6Loopback(), 80)[:20], peerInvalid, "", unix.EINVAL},
		{"no address to send", unix.AF_INET, unix.SYS_SENDMSG, nil, peerNone, "", 0},
		{"no address to bind", unix.AF_INET, unix.SYS_BIND, nil, peerInvalid, "", unix.EINVAL},
	}
	for _, tc := range tests {
		kind, a, errno := inetAddr(tc.domain, tc.call, tc.addr)
		if kind != tc.kind || errno != tc.errno || kind == peerAddr && a.String() != tc.want {
			t.Errorf("%s: %v %v %v, want %v %s %v", tc.name, kind, a, errno, tc.kind, tc.want, tc.errno)
			continue
		}
		if kind != peerAddr {
			continue
		}
		back := encodeInet(tc.domain, a)
		if k2, a2, _ := inetAddr(tc.domain, tc.call, back); k2 != peerAddr || a2 != a {
			t.Errorf("%s: re-encoded %v reads back as %v %v", tc.name, a, k2, a2)
		}
		if fam := int(binary.NativeEndian.Uint16(back)); fam != tc.domain {
			t.Errorf("%s: re-encoded in family %d, want the socket's %d", tc.name, fam, tc.domain)
		}
	}
}

// TestLoopbackMatrix: network=loopback and hosts are held by the
// mediation where it can take the command's sockets, and refused where
// it cannot; network=off and on do not ask for it.
func TestLoopbackMatrix(t *testing.T) {
	full := Features{Seccomp: true, UserNotif: true, AddFD: true, AddFDSend: true, WaitKillable: true,
		PidfdThread: true, PidfdGetfd: true, ProcMem: true, LandlockABI: 7, LandlockErrata: ^uint64(0)}
	noGetfd := full
	noGetfd.PidfdGetfd = false
	nested := full
	nested.Nested, nested.Outer = true, OuterWrun
	for _, n := range []grant.Network{grant.NetworkOff, grant.NetworkLoopback, grant.NetworkHosts, grant.NetworkOn} {
		g := grant.Grant{Files: grant.FilesRead, Shell: grant.ShellVerify, Network: n}
		for _, tc := range []struct {
			name string
			f    Features
			held bool
		}{{"full", full, true}, {"no pidfd_getfd", noGetfd, false}, {"nested", nested, false}} {
			var cell *Hold
			for _, h := range Holds(tc.f, g, Need{}) {
				if h.Key == "network.loopback" {
					cell = &h
				}
			}
			asks := n == grant.NetworkLoopback || n == grant.NetworkHosts
			if (cell != nil) != asks {
				t.Errorf("network=%s on %s: network.loopback asked %v", n, tc.name, cell != nil)
				continue
			}
			if n == grant.NetworkHosts {
				// The proxy holds where the connects that reach it are
				// wrun's: exactly where network=loopback is held.
				refused := slices.ContainsFunc(Refusals(tc.f, g, Need{}), func(h Hold) bool { return h.Key == "network.hosts" })
				if refused == tc.held {
					t.Errorf("network=hosts on %s: refused %v, want %v", tc.name, refused, !tc.held)
				}
			}
			if cell != nil && cell.Held() != tc.held {
				t.Errorf("network=%s on %s: held %v, want %v (%+v)", n, tc.name, cell.Held(), tc.held, cell.Cell)
			}
		}
	}
}

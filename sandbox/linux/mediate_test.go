//go:build linux

package linux

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/policy"
)

// With mediation every call that names an address goes to wrun; sendto
// goes only with a non-NULL address (either word of the pointer set);
// without mediation none of them is sent (unless observed). AF_UNIX
// sockets and datagram socketpairs are allowed under mediation.
func TestSeccompMediation(t *testing.T) {
	const hi = 1 << 32
	med := seccompSpec{Mediate: true, DenyInet: true}
	cases := []struct {
		name string
		d    seccompData
		want uint32
	}{
		{"connect", data(unix.SYS_CONNECT, 3, 0x1000, 110), retNotify},
		{"bind", data(unix.SYS_BIND, 3, 0x1000, 110), retNotify},
		{"sendmsg", data(unix.SYS_SENDMSG, 3, 0x1000, 0), retNotify},
		{"sendmmsg", data(unix.SYS_SENDMMSG, 3, 0x1000, 2, 0), retNotify},
		{"sendto with an address", data(unix.SYS_SENDTO, 3, 0x1000, 5, 0, 0x2000, 110), retNotify},
		{"sendto with an address above 4 GiB", data(unix.SYS_SENDTO, 3, 0x1000, 5, 0, hi, 110), retNotify},
		{"sendto without an address", data(unix.SYS_SENDTO, 3, 0x1000, 5, 0, 0, 0), retAllow},
		{"write", data(unix.SYS_WRITE, 3, 0x1000, 5), retAllow},
		{"socket(AF_UNIX)", data(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM, 0), retAllow},
		{"socket(AF_INET) still refused", data(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0), retEPERM},
		{"socketpair(AF_UNIX, SOCK_DGRAM)", data(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_DGRAM, 0), retAllow},
	}
	for _, c := range cases {
		if got := runFilter(t, med, c.d); got != c.want {
			t.Errorf("mediated: %s: %s, want %s", c.name, verdict(got), verdict(c.want))
		}
		if got := runFilter(t, seccompSpec{DenyInet: true}, c.d); got == retNotify {
			t.Errorf("not mediated: %s goes to wrun", c.name)
		}
	}
}

// The plan mediates below ABI 9 where the stage runs and user
// notification exists, and refuses AF_UNIX otherwise.
func TestPlanUnixMechanism(t *testing.T) {
	cases := []struct {
		name string
		f    Features
		want UnixMechanism
	}{
		{"root, ABI 7", Features{LandlockABI: 7, Seccomp: true, UserNotif: true, MountNS: true}, UnixMediated},
		{"user namespace, ABI 7", Features{LandlockABI: 7, Seccomp: true, UserNotif: true, UserNS: true}, UnixMediated},
		{"no namespaces", Features{LandlockABI: 7, Seccomp: true, UserNotif: true}, UnixRefused},
		{"no user notification", Features{LandlockABI: 7, Seccomp: true, MountNS: true}, UnixRefused},
	}
	for _, c := range cases {
		pl := &Plan{Policy: &policy.Policy{}, stage: c.f.MountNS || c.f.UserNS}
		pl.planUnix(c.f, c.f.landlock().rights())
		if pl.Unix != c.want || pl.seccomp.Mediate != (c.want == UnixMediated) || pl.seccomp.DenyUnix != (c.want == UnixRefused) {
			t.Errorf("%s: %s (mediate %v, deny %v), want %s", c.name, pl.Unix, pl.seccomp.Mediate, pl.seccomp.DenyUnix, c.want)
		}
	}
}

func TestUnixPath(t *testing.T) {
	addr := func(fam uint16, path string) []byte {
		b := []byte{byte(fam), byte(fam >> 8)}
		return append(b, path...)
	}
	cases := []struct {
		addr []byte
		want string
		ok   bool
	}{
		{addr(unix.AF_UNIX, "/run/x.sock\x00"), "/run/x.sock", true},
		{addr(unix.AF_UNIX, "rel.sock"), "rel.sock", true},    // no NUL: up to the length
		{addr(unix.AF_UNIX, "a\x00garbage"), "a", true},       // up to the first NUL
		{addr(unix.AF_UNIX, "\x00abstract"), "", false},       // abstract
		{addr(unix.AF_UNIX, ""), "", false},                   // unnamed (autobind)
		{addr(unix.AF_INET, "/looks/like/a/path"), "", false}, // another family
		{[]byte{1}, "", false},                                // short
	}
	for _, c := range cases {
		got, ok := unixPath(c.addr)
		if got != c.want || ok != c.ok {
			t.Errorf("unixPath(%q) = %q, %v; want %q, %v", c.addr, got, ok, c.want, c.ok)
		}
	}
}

// sock_diag names the file a socket is bound to as stat names it, and
// knows no socket once it is closed.
func TestUnixDiagVFS(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := ln.(*net.UnixListener).SyscallConn()
	var sockIno uint64
	raw.Control(func(fd uintptr) {
		var st unix.Stat_t
		if unix.Fstat(int(fd), &st) == nil {
			sockIno = st.Ino
		}
	})
	id, cookie, err := unixDiagVFS(uint32(sockIno), [2]uint32{^uint32(0), ^uint32(0)})
	if err != nil {
		t.Skipf("sock_diag for UNIX sockets unavailable: %v", err)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if id != (unixID{dev: kernelDev(st.Dev), ino: uint32(st.Ino)}) {
		t.Errorf("sock_diag says %+v, stat says dev %d ino %d", id, st.Dev, st.Ino)
	}
	if again, _, err := unixDiagVFS(uint32(sockIno), cookie); err != nil || again != id {
		t.Errorf("by cookie: %+v, %v", again, err)
	}
	ln.Close()
	os.Remove(path)
	if _, _, err := unixDiagVFS(uint32(sockIno), cookie); err == nil {
		t.Error("a closed socket is still found")
	}
}

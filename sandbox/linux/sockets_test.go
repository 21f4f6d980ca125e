//go:build linux

package linux

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

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

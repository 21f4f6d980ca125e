//go:build linux

package linux

import (
	"encoding/binary"
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeMemory is a command's memory made of fuzz input: every address
// reads from data (wrapping), strings end at the first NUL or fail past
// their bound, writes land nowhere.
type fakeMemory struct {
	data []byte
}

func (m fakeMemory) read(addr uint64, buf []byte) error {
	if len(m.data) == 0 {
		return errors.New("unmapped")
	}
	for i := range buf {
		buf[i] = m.data[(int(addr%uint64(len(m.data)))+i)%len(m.data)]
	}
	return nil
}

func (m fakeMemory) readString(addr uint64, max int) (string, error) {
	if len(m.data) == 0 {
		return "", errors.New("unmapped")
	}
	var out []byte
	for i := int(addr % uint64(len(m.data))); len(out) < max; i = (i + 1) % len(m.data) {
		if m.data[i] == 0 {
			return string(out), nil
		}
		out = append(out, m.data[i])
	}
	return "", unix.ENAMETOOLONG
}

func (m fakeMemory) write(uint64, []byte) error { return nil }

// decodeMsg runs the mediation's msghdr decoder on fuzz memory: the
// descriptors of SCM_RIGHTS are "taken" as numbers, never opened.
func decodeMsg(data []byte, addr uint64) (*sockCall, error) {
	c := &notice{mem: fakeMemory{data: data}}
	taken := 0
	sc := &sockCall{c: c, sock: -1, cwd: -1, take: func(fd int) (int, error) {
		taken++
		if taken > 300 {
			return -1, unix.EBADF
		}
		return 1000 + taken, nil
	}}
	return sc, (&supervisor{}).msghdr(sc, addr)
}

// TestMsghdrHostileLengths: the lengths a command passes (a name length
// of -1, a huge iovec count, a control length beyond 64 KiB) never size a
// buffer beyond the mediation's bounds, and never crash it.
func TestMsghdrHostileLengths(t *testing.T) {
	hdr := func(namelen int32, iovlen, ctrllen uint64) []byte {
		b := make([]byte, 56)
		ne := binary.NativeEndian
		ne.PutUint64(b[0:], 64)
		ne.PutUint32(b[8:], uint32(namelen))
		ne.PutUint64(b[16:], 64)
		ne.PutUint64(b[24:], iovlen)
		ne.PutUint64(b[32:], 64)
		ne.PutUint64(b[40:], ctrllen)
		return append(b, make([]byte, 256)...)
	}
	for _, tt := range []struct {
		name    string
		mem     []byte
		wantErr error
	}{
		{"negative name length", hdr(-1, 0, 0), unix.EINVAL},
		{"name beyond a sockaddr_storage", hdr(1<<20, 0, 0), nil},
		{"too many iovecs", hdr(0, 1<<40, 0), unix.EMSGSIZE},
		{"control beyond 64 KiB", hdr(0, 0, 1<<20), unix.ENOBUFS},
		{"a control header longer than its buffer", hdr(0, 0, 32), nil},
	} {
		sc, err := decodeMsg(tt.mem, 0)
		if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.wantErr)
		}
		if len(sc.addr) > maxSockaddr || len(sc.data) > maxSendData || len(sc.ctrl) > 64<<10 || len(sc.passed) > 253 {
			t.Errorf("%s: decoded beyond the bounds: addr %d, data %d, ctrl %d, fds %d", tt.name, len(sc.addr), len(sc.data), len(sc.ctrl), len(sc.passed))
		}
	}
}

// FuzzMsghdr: no memory contents make the decoding of a sendmsg's
// message (name, iovecs, control messages with SCM_RIGHTS) panic or
// exceed its bounds.
func FuzzMsghdr(f *testing.F) {
	f.Add([]byte{}, uint64(0))
	f.Add(make([]byte, 64), uint64(0))
	m := make([]byte, 128)
	binary.NativeEndian.PutUint64(m[32:], 64)
	binary.NativeEndian.PutUint64(m[40:], 20)
	binary.NativeEndian.PutUint64(m[64:], 20)
	binary.NativeEndian.PutUint32(m[72:], unix.SOL_SOCKET)
	binary.NativeEndian.PutUint32(m[76:], unix.SCM_RIGHTS)
	f.Add(m, uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, addr uint64) {
		sc, _ := decodeMsg(data, addr)
		if len(sc.addr) > maxSockaddr || len(sc.data) > maxSendData || len(sc.ctrl) > 64<<10 || len(sc.passed) > 253 {
			t.Fatalf("decoded beyond the bounds: addr %d, data %d, ctrl %d, fds %d", len(sc.addr), len(sc.data), len(sc.ctrl), len(sc.passed))
		}
	})
}

// FuzzDecodeSockaddr: any bytes decode without a panic.
func FuzzDecodeSockaddr(f *testing.F) {
	f.Add([]byte{2, 0, 0x1f, 0x90, 127, 0, 0, 1})
	f.Add([]byte{10, 0})
	f.Add([]byte{1, 0, 0, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeSockaddr(b)
		unixPath(b)
		abstractName(b)
	})
}

// FuzzProcFDPath: a path names one of the caller's own descriptors only
// in the forms the kernel gives that meaning.
func FuzzProcFDPath(f *testing.F) {
	for _, s := range []string{"/proc/self/fd/3", "/dev/fd/10", "/dev/stdout", "/proc/42/fd/1", "/proc/self/fd/03", "/proc/self/fd/-1", "/proc/self/fd/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := procFDPath(s, 42, 40)
		if ok && n < 0 {
			t.Fatalf("%q: descriptor %d", s, n)
		}
	})
}

func TestProcFile(t *testing.T) {
	for _, c := range []struct {
		path string
		want string
	}{
		{"/proc/self/oom_score_adj", "/proc/42/oom_score_adj"},
		{"/proc/thread-self/comm", "/proc/42/task/43/comm"},
		{"/proc/self/attr/current", "/proc/42/attr/current"},
		{"/proc/self/fd/1", ""},
		{"/proc/self/cwd/x", ""},
		{"/proc/self/root/etc/passwd", ""},
		{"/proc/self/exe", ""},
		{"/proc/self/task/43/comm", ""},
		{"/proc/self/../1/environ", ""},
		{"/proc/self/x/../../1/mem", ""},
		{"/proc/42/oom_score_adj", ""},
		{"/dev/stdout", ""},
	} {
		got, ok := procFile(c.path, 42, 43)
		if ok != (c.want != "") || got != c.want {
			t.Errorf("procFile(%q) = %q, %v; want %q", c.path, got, ok, c.want)
		}
	}
}

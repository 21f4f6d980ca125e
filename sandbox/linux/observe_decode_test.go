//go:build linux

package linux

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeMemory is a child's memory made of fuzz input: every address reads
// from data (wrapping), strings end at the first NUL or fail past
// PATH_MAX, and links name a fixed directory or fail.
type fakeMemory struct {
	data []byte
}

func (m fakeMemory) read(addr uintptr, buf []byte) error {
	if len(m.data) == 0 {
		return errors.New("unmapped")
	}
	for i := range buf {
		buf[i] = m.data[(int(addr%uintptr(len(m.data)))+i)%len(m.data)]
	}
	return nil
}

func (m fakeMemory) readString(addr uintptr) (string, error) {
	if len(m.data) == 0 {
		return "", errors.New("unmapped")
	}
	var out []byte
	for i := int(addr % uintptr(len(m.data))); len(out) < unix.PathMax; i = (i + 1) % len(m.data) {
		if m.data[i] == 0 {
			return string(out), nil
		}
		out = append(out, m.data[i])
	}
	return "", errors.New("path longer than PATH_MAX")
}

func (m fakeMemory) readLink(fd int) (string, error) {
	if fd%2 == 0 {
		return "", errors.New("no such descriptor")
	}
	return "/work/ws", nil
}

func (m fakeMemory) view(p string) string { return childView(4242, p) }

// TestDecodeCallHostileLengths: the lengths a child passes in registers
// (a socklen_t of -1 as a 64-bit value, huge, zero) never size a buffer
// beyond a sockaddr_storage, and never crash the observer.
func TestDecodeCallHostileLengths(t *testing.T) {
	sa := make([]byte, 16)
	binary.LittleEndian.PutUint16(sa, unix.AF_INET)
	mem := fakeMemory{data: sa}
	for _, c := range observedCalls() {
		if c.sockarg < 0 {
			continue
		}
		for _, n := range []uint64{^uint64(0), 1 << 63, 1 << 32, 0xffffffff, 0x80000000, 129, 128, 16, 1, 0} {
			var args [6]uint64
			args[c.sockarg+1] = n
			if _, err := decodeCall(c, args, mem); err != nil {
				t.Errorf("call %d with length %#x: %v", c.nr, n, err)
			}
		}
	}
}

// FuzzDecodeCall: no register contents and no memory contents make the
// decoding of any observed call panic, and decoded paths are absolute and
// bounded.
func FuzzDecodeCall(f *testing.F) {
	f.Add(uint8(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), []byte("/etc/passwd\x00"))
	f.Add(uint8(1), uint64(0xffffffffffffff9c), uint64(0), uint64(^uint64(0)), uint64(0), uint64(0), uint64(0), []byte("rel/path\x00"))
	f.Add(uint8(25), uint64(3), uint64(0), uint64(^uint64(0)), uint64(0), uint64(0), uint64(0), []byte{1, 0, '/', 't', 0})
	f.Add(uint8(2), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), []byte{})
	calls := observedCalls()
	f.Fuzz(func(t *testing.T, which uint8, a0, a1, a2, a3, a4, a5 uint64, data []byte) {
		c := calls[int(which)%len(calls)]
		ev, err := decodeCall(c, [6]uint64{a0, a1, a2, a3, a4, a5}, fakeMemory{data: data})
		if err != nil {
			return
		}
		for _, p := range []string{ev.path, ev.path2} {
			if p != "" && !strings.HasPrefix(p, "/") {
				t.Fatalf("call %d decoded a relative path %q", c.nr, p)
			}
			if len(p) > 2*unix.PathMax {
				t.Fatalf("call %d decoded a path of %d bytes", c.nr, len(p))
			}
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
	})
}

//go:build linux

package policy

import (
	"encoding/binary"
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The search for private files runs at every launch, on the order of two
// thousand entries as root: it reads directories with getdents64 and
// stats entries with fstatat on the directory's descriptor, without
// os.File (whose open of a directory adds fcntl and poller calls, about a
// third of the search's time).

// rawDir is a directory open for the search.
type rawDir struct{ fd int }

// listDir opens path and reads its entries into ents (reused), with buf
// as the getdents64 buffer.
func listDir(path string, buf []byte, ents []scanEntry) (scanDir, []scanEntry, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	ents = ents[:0]
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			if len(ents) == 0 {
				unix.Close(fd)
				return nil, nil, err
			}
			break // what was read is searched
		}
		if n <= 0 {
			break
		}
		ents = parseDirents(buf[:n], ents)
	}
	return rawDir{fd}, ents, nil
}

// parseDirents appends the entries of a getdents64 buffer, "." and ".."
// left out.
func parseDirents(b []byte, ents []scanEntry) []scanEntry {
	const nameOff = int(unsafe.Offsetof(unix.Dirent{}.Name))
	for len(b) >= nameOff {
		// The record's fields read from the bytes, not through a *Dirent:
		// the last record is shorter than the struct, and a pointer to it
		// would reach past the buffer (checkptr says so under -race).
		rl := int(binary.NativeEndian.Uint16(b[unsafe.Offsetof(unix.Dirent{}.Reclen):]))
		typ := b[unsafe.Offsetof(unix.Dirent{}.Type)]
		if rl < nameOff || rl > len(b) {
			break // malformed: the kernel never writes this
		}
		name := b[nameOff:rl]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		b = b[rl:]
		if len(name) == 0 || string(name) == "." || string(name) == ".." {
			continue
		}
		k := kindUnknown
		switch typ {
		case unix.DT_DIR:
			k = kindDir
		case unix.DT_REG:
			k = kindRegular
		case unix.DT_LNK:
			k = kindSymlink
		case unix.DT_UNKNOWN:
		default:
			k = kindOther
		}
		ents = append(ents, scanEntry{name: string(name), kind: k})
	}
	return ents
}

func (d rawDir) stat(name string) (fileStat, bool) { return statAt(d.fd, name) }

func (d rawDir) close() { unix.Close(d.fd) }

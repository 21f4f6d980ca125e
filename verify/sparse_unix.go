//go:build unix

package verify

import (
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// sparse reports whether the regular file f (of fi) has holes: regions
// that take no disk space and read as zeros. git never writes one (it
// writes packs and loose objects from start to end), while a child can
// make a file of any size at no cost that wrun would copy with a real
// block for every byte. The kernel says where the first hole is
// (SEEK_HOLE, at the end for a file without one); where it cannot, a file
// of at least a MiB taking less than half its size on disk counts as
// sparse. f is left at its start.
func sparse(f *os.File, fi os.FileInfo) bool {
	size := fi.Size()
	if size == 0 {
		return false
	}
	defer f.Seek(0, io.SeekStart)
	if hole, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_HOLE); err == nil && hole < size {
		return true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && size >= 1<<20 && int64(st.Blocks)*512 < size/2
}

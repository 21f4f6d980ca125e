//go:build unix

package policy

import (
	"os"

	"golang.org/x/sys/unix"
)

// fileStat is what the search for private files needs of one file.
type fileStat struct {
	perm     os.FileMode
	uid, gid int
	size     int64
}

// statAt stats name in the open directory dir without following a final
// symbolic link (relative to the directory: one path component to look up).
func statAt(dir *os.File, name string) (fileStat, bool) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fileStat{}, false
	}
	return fileStat{perm: os.FileMode(st.Mode & 0o777), uid: int(st.Uid), gid: int(st.Gid), size: st.Size}, true
}

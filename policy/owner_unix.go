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
	kind     entryKind
}

// statAt stats name in the open directory dirfd without following a final
// symbolic link (relative to the directory: one path component to look up).
func statAt(dirfd int, name string) (fileStat, bool) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fileStat{}, false
	}
	return fromStat(&st), true
}

// fromStat is what the search needs of st.
func fromStat(st *unix.Stat_t) fileStat {
	k := kindOther
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		k = kindDir
	case unix.S_IFREG:
		k = kindRegular
	case unix.S_IFLNK:
		k = kindSymlink
	}
	return fileStat{perm: os.FileMode(st.Mode & 0o777), uid: int(st.Uid), gid: int(st.Gid), size: int64(st.Size), kind: k}
}

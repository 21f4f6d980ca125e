//go:build unix && !linux

package verify

import "golang.org/x/sys/unix"

// chmodDirAt sets the mode of the directory name in dirfd, following no
// link.
func chmodDirAt(dirfd int, name string, mode uint32) error {
	return unix.Fchmodat(dirfd, name, mode, unix.AT_SYMLINK_NOFOLLOW)
}

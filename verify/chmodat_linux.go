package verify

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// chmodDirAt sets the mode of the directory name in dirfd, following no
// link: through a descriptor of the directory itself (O_PATH, which needs
// no permission on it), named by its /proc/self/fd entry.
func chmodDirAt(dirfd int, name string, mode uint32) error {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode)
}

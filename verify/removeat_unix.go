//go:build unix

package verify

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The guard removes, restores and moves aside paths in trees a sandboxed
// command could write, and it runs unsandboxed, possibly while processes
// of another run still write those trees. Checking that a parent is not
// a link and then acting by name races with a child that swaps the parent
// for a link in between: wrun would remove whatever the link names. So
// every act is made relative to a descriptor of the parent, reached from
// "/" without following any link, and never follows a link below it.

// openDirNoFollow opens dir (absolute) as a directory, following no
// symbolic link in any component; a link on the way fails with ELOOP or
// ENOTDIR.
func openDirNoFollow(dir string) (int, error) {
	if !filepath.IsAbs(dir) {
		return -1, fmt.Errorf("%s is not absolute", dir)
	}
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(strings.Trim(filepath.Clean(dir), "/"), "/") {
		if c == "" {
			continue
		}
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// removeAllAt removes name in the directory dirfd and, if it is a
// directory, everything beneath it, following no link; a missing name is
// not an error.
func removeAllAt(dirfd int, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.Unlinkat(dirfd, name, 0)
	}
	// A directory its owner (the child) made unreadable or unwritable is
	// opened up first: it goes anyway.
	if st.Mode&0o700 != 0o700 {
		if err := chmodDirAt(dirfd, name, 0o700); err != nil {
			return err
		}
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	names, err := readDirNames(fd)
	if err == nil {
		for _, n := range names {
			if err = removeAllAt(fd, n); err != nil {
				break
			}
		}
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

// readDirNames lists the directory open on fd (without . and ..).
func readDirNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "dir")
	defer f.Close()
	return f.Readdirnames(-1)
}

// oNoFollow opens a file only if its last component is not a link.
const oNoFollow = unix.O_NOFOLLOW

// mkdirNoFollow makes the directory path (mode 0755 less the umask), its
// parent reached without following links; it fails if path exists.
func mkdirNoFollow(path string) error {
	dfd, err := openDirNoFollow(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	return unix.Mkdirat(dfd, filepath.Base(path), 0o755)
}

// removeNoFollow removes path (and what is beneath it), its parent reached
// without following links. A parent that is no longer a plain directory
// path (a link was planted on the way) is left alone: removed reports
// false with no error.
func removeNoFollow(path string) (removed bool, err error) {
	dfd, err := openDirNoFollow(filepath.Dir(path))
	if err != nil {
		return false, nil
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if unix.Fstatat(dfd, filepath.Base(path), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false, nil
	}
	return true, removeAllAt(dfd, filepath.Base(path))
}

// restoreLinkNoFollow makes path a symbolic link to target again, its
// parent reached without following links; ok is false when the parent is
// no longer a plain directory path.
func restoreLinkNoFollow(path, target string) (ok bool, err error) {
	dfd, err := openDirNoFollow(filepath.Dir(path))
	if err != nil {
		return false, nil
	}
	defer unix.Close(dfd)
	base := filepath.Base(path)
	if err := removeAllAt(dfd, base); err != nil {
		return true, err
	}
	return true, unix.Symlinkat(target, dfd, base)
}

// renameNoFollow renames path to path+suffix in its parent, reached
// without following links; ok is false when the parent is no longer a
// plain directory path.
func renameNoFollow(path, suffix string) (ok bool, err error) {
	dfd, err := openDirNoFollow(filepath.Dir(path))
	if err != nil {
		return false, nil
	}
	defer unix.Close(dfd)
	base := filepath.Base(path)
	return true, unix.Renameat(dfd, base, dfd, base+suffix)
}

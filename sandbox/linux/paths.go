//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/policy"
)

// What wrun makes before the run and removes after it, on paths reached
// from a trusted directory without following a symbolic link.

// create makes a path the plan needs before the child starts: a missing
// directory (with its parents) or an empty file. Beneath the workspace it
// never follows a symbolic link.
func create(c creation) error {
	if c.Beneath == "" || c.Path == c.Beneath {
		if c.Dir {
			return os.MkdirAll(c.Path, 0o755)
		}
		f, err := os.OpenFile(c.Path, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	}
	rel, err := filepath.Rel(c.Beneath, c.Path)
	if err != nil {
		return err
	}
	parent, base := filepath.Split(rel)
	if parent != "" {
		if err := create(creation{Path: filepath.Join(c.Beneath, parent), Dir: true, Beneath: c.Beneath}); err != nil {
			return err
		}
	}
	dfd, err := openBeneath(c.Beneath, filepath.Clean("./"+parent), unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return fmt.Errorf("creating %s: %w", c.Path, err)
	}
	defer unix.Close(dfd)
	if c.Dir {
		err = unix.Mkdirat(dfd, base, 0o755)
	} else {
		var fd int
		fd, err = unix.Openat(dfd, base, unix.O_CREAT|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err == nil {
			unix.Close(fd)
		}
	}
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("creating %s: %w", c.Path, err)
	}
	return nil
}

// sweep removes a path that must not exist, if the child created it. The
// parent is reached without following symbolic links.
func sweep(pr policy.Protected) (bool, error) {
	within := pr.Within
	if within == "" {
		within = "/"
	}
	rel, err := filepath.Rel(within, filepath.Dir(pr.Path))
	if err != nil {
		return false, err
	}
	dfd, err := openBeneath(within, rel, unix.O_PATH|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("checking %s: %w", pr.Path, err)
	}
	defer unix.Close(dfd)
	base := filepath.Base(pr.Path)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("checking %s: %w", pr.Path, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		// A directory the child made: remove it with its contents, from
		// the real path now that nothing of the command can write.
		return true, os.RemoveAll(pr.Path)
	}
	return true, unix.Unlinkat(dfd, base, 0)
}

//go:build unix

package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// The private temp dir (TMPDIR) of a run is private and empty when the run
// starts, and is removed after it; but its path is stable for a workspace,
// because tools key caches on it: the go command records the environment a
// test reads (TMPDIR, through t.TempDir) in the key of its result, so a
// path that changed on every run meant `go test` was never `(cached)`.
//
// So a run takes a slot: $TMPDIR/wrun-UID/KEY-N, where KEY names the
// workspace and N is the first of tempSlots slots whose lock (KEY-N.lock
// beside it, flock) is free. The lock is held for the run, so concurrent
// runs of one workspace never share a temp dir; the slot is emptied when
// taken and when given back. Everything is done relative to a descriptor
// of wrun-UID, a directory of this user with mode 0700 reached without
// following links, and removal follows no link and opens up directories
// the child locked (mode 000): whatever a child left, the next run starts
// empty.

// tempSlots bounds the concurrent runs of one workspace with a stable temp
// dir; more get a temp dir of their own, as before.
const tempSlots = 8

// TempDir is a run's private temp dir, held until Close.
type TempDir struct {
	// Path is the directory, absolute.
	Path string
	// Stable is set when Path is a workspace's slot (the same for the
	// next run), clear for a temp dir of this run only.
	Stable bool
	dirfd  int      // the parent of Path (-1 for a temp dir of this run only)
	lock   *os.File // the slot's lock
}

// OpenTempDir takes the first free slot of workspace workdir, empty; when
// none can be had (all busy, or the per-user directory is not safe) it
// makes a temp dir of this run only, under a name of its own.
func OpenTempDir(workdir string) (*TempDir, error) {
	if t, err := openSlot(workdir); err == nil && t != nil {
		return t, nil
	}
	dir, err := os.MkdirTemp("", "wrun-")
	if err != nil {
		return nil, err
	}
	return &TempDir{Path: dir, dirfd: -1}, nil
}

// openSlot takes a slot, or returns nil (with an error saying why not).
func openSlot(workdir string) (*TempDir, error) {
	uid := os.Getuid()
	base := filepath.Join(os.TempDir(), tempRootPrefix+strconv.Itoa(uid))
	if !filepath.IsAbs(base) {
		return nil, fmt.Errorf("%s is not absolute", base)
	}
	if err := os.Mkdir(base, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	dfd, err := openDirNoFollow(base)
	if err != nil {
		return nil, err
	}
	// The kernel's word on what was opened: this user's, no one else's.
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil || int(st.Uid) != uid || st.Mode&0o077 != 0 {
		unix.Close(dfd)
		return nil, fmt.Errorf("%s is not a directory of this user with mode 0700", base)
	}
	sum := sha256.Sum256([]byte(workdir))
	key := hex.EncodeToString(sum[:8])
	for n := range tempSlots {
		name := key + "-" + strconv.Itoa(n)
		lfd, err := unix.Openat(dfd, name+".lock", unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			continue
		}
		lock := os.NewFile(uintptr(lfd), filepath.Join(base, name+".lock"))
		if unix.Flock(lfd, unix.LOCK_EX|unix.LOCK_NB) != nil || !stillNamed(dfd, name+".lock", lfd) {
			// A run of this workspace holds it, or the run that held it
			// removed it as we opened it (the name is another file now).
			lock.Close()
			continue
		}
		t := &TempDir{Path: filepath.Join(base, name), Stable: true, dirfd: dfd, lock: lock}
		if err := removeAllAt(dfd, name); err != nil {
			t.release()
			return nil, fmt.Errorf("emptying %s: %w", t.Path, err)
		}
		if err := unix.Mkdirat(dfd, name, 0o700); err != nil {
			t.release()
			return nil, err
		}
		return t, nil
	}
	unix.Close(dfd)
	return nil, errors.New("every temp dir slot of the workspace is in use")
}

// Close removes the temp dir (what the child left in it, following no
// link) and gives the slot back.
func (t *TempDir) Close() error {
	if t == nil {
		return nil
	}
	var err error
	if t.dirfd < 0 {
		dfd, oerr := openDirNoFollow(filepath.Dir(t.Path))
		if oerr != nil {
			return fmt.Errorf("removing %s: %w", t.Path, oerr)
		}
		err = removeAllAt(dfd, filepath.Base(t.Path))
		unix.Close(dfd)
	} else {
		err = removeAllAt(t.dirfd, filepath.Base(t.Path))
		if err == nil {
			// The lock file goes too, while locked: a run that opened it
			// before sees it is no longer named (stillNamed).
			unix.Unlinkat(t.dirfd, filepath.Base(t.Path)+".lock", 0)
		}
		t.release()
	}
	if err != nil {
		return fmt.Errorf("removing %s: %w", t.Path, err)
	}
	return nil
}

// Keep gives the slot back without removing the temp dir (background
// processes may still use it); the next run of the workspace empties it.
func (t *TempDir) Keep() {
	if t != nil && t.dirfd >= 0 {
		t.release()
	}
}

func (t *TempDir) release() {
	if t.lock != nil {
		t.lock.Close()
		t.lock = nil
	}
	if t.dirfd >= 0 {
		unix.Close(t.dirfd)
		t.dirfd = -1
	}
}

// stillNamed reports whether name in dirfd is the file open on fd.
func stillNamed(dirfd int, name string, fd int) bool {
	var a, b unix.Stat_t
	if unix.Fstat(fd, &a) != nil || unix.Fstatat(dirfd, name, &b, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

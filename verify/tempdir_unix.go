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
	"strings"

	"golang.org/x/sys/unix"
)

// The private temp dir (TMPDIR) of a run is private and empty when the run
// starts, and is emptied after it; its path is stable for a workspace,
// because tools key caches on it: the go command records the environment a
// test reads (TMPDIR, through t.TempDir) in the key of its result, so a
// path that changed on every run meant `go test` was never `(cached)`.
//
// So a run takes a slot: $TMPDIR/wrun-UID/KEY-N, where KEY names the
// workspace and N is the first of tempSlots slots whose lock (KEY-N.lock
// beside it, flock) is free. The lock is held for the run, so concurrent
// runs of one workspace never share a temp dir; the slot is emptied when
// taken and when given back (the directory and its lock file stay, so a
// run makes no directory: see emptyIfSafe for when it is made anew).
// Everything is done relative to a descriptor
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
		// The slot directory the last run left, emptied, is used again
		// when it is still a plain directory of this user's, mode 0700,
		// no extended attribute (a default ACL) set: the run then makes
		// and removes no directory (an ext4 mkdir and rmdir are the
		// larger part of this step). Otherwise it is made anew.
		if err := emptyIfSafe(dfd, name, uid); err == nil {
			return t, nil
		}
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

// Close empties the temp dir (removes what the child left in it,
// following no link) and gives the slot back; a temp dir of this run
// only is removed.
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
		// The slot stays, empty, with its lock file, for the workspace's
		// next run (which checks it again). What the child made the
		// directory itself (another mode, an attribute) the next run
		// finds and makes it anew.
		err = emptyAt(t.dirfd, filepath.Base(t.Path))
		t.release()
	}
	if err != nil {
		return fmt.Errorf("removing %s: %w", t.Path, err)
	}
	return nil
}

// emptyIfSafe empties the directory name in dirfd when it is one wrun
// made for uid and nothing changed it into something else: a directory
// (reached without following a link) owned by uid, mode 0700 exactly (no
// setgid, sticky or other bit, no access ACL, whose mask shows in the
// group bits) and no extended attribute but a security module's label (no
// default ACL that would hand what the next child makes to others). An
// error means it is not, or it could not be emptied: make it anew.
func emptyIfSafe(dirfd int, name string, uid int) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != uid || st.Mode&0o7777 != 0o700 {
		return fmt.Errorf("%s is not a directory of this user with mode 0700", name)
	}
	if err := onlySecurityXattrs(fd); err != nil {
		return err
	}
	return emptyFd(fd)
}

// emptyAt removes everything in the directory name of dirfd, following no
// link, and leaves the directory.
func emptyAt(dirfd int, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&0o700 != 0o700 {
		// Not a directory wrun can list (the child locked it, or it is
		// gone): removed whole, as before; the next run makes it.
		return removeAllAt(dirfd, name)
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return emptyFd(fd)
}

// emptyFd removes every entry of the directory open on fd, following no
// link.
func emptyFd(fd int) error {
	names, err := readDirNames(fd)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := removeAllAt(fd, n); err != nil {
			return err
		}
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

// onlySecurityXattrs fails when the file open on fd has an extended
// attribute other than a security module's label (security.*), or when
// they cannot be listed.
func onlySecurityXattrs(fd int) error {
	var buf [256]byte
	n, err := unix.Flistxattr(fd, buf[:])
	if errors.Is(err, unix.ENOTSUP) {
		return nil // the file system has none
	}
	if err != nil {
		return err // ERANGE included: more than a label
	}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		if name != "" && !strings.HasPrefix(name, "security.") {
			return fmt.Errorf("extended attribute %s", name)
		}
	}
	return nil
}

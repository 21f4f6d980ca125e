package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// outFile is a file wrun writes once the command has run (the escalation
// request), when everything the child could write is hostile: it may have
// replaced the file with a link to ~/.bashrc, or the directory with a link
// elsewhere. The directory is resolved and opened once, before the child
// starts; the file is then never opened by name, only created afresh
// beside it and renamed over it (a rename replaces a link, it does not
// follow it).
type outFile struct {
	path string   // as given, for messages
	dir  *os.File // the resolved directory, held open
	name string
}

// openOutFile prepares path to be written after the run: it resolves
// the directory, opens it (refusing a link swapped in between), checks
// that a file can be created in it, and removes a file left at path by an
// earlier run, so that a stale request never outlives a run that was
// denied nothing. Call it before the child starts.
//
// untrusted is a directory a sandboxed command may have written (the
// workspace): a symbolic link there, on the way to the file, may be one a
// child planted in an earlier run, so it is refused rather than followed.
// Links elsewhere on the way (a home directory on another disk) are the
// user's own and followed.
func openOutFile(path, untrusted string) (*outFile, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(abs)
	if name == "/" || name == "." || name == ".." {
		return nil, errors.New("not a file name")
	}
	dir, err := resolveTrusted(filepath.Dir(abs), untrusted)
	if err != nil {
		return nil, fmt.Errorf("its directory: %w", err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening its directory %s: %w", dir, err)
	}
	f := &outFile{path: path, dir: os.NewFile(uintptr(fd), dir), name: name}
	var st unix.Stat_t
	switch err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case errors.Is(err, unix.ENOENT):
	case err != nil:
		f.close()
		return nil, err
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		f.close()
		return nil, errors.New("it is a directory")
	default:
		if err := unix.Unlinkat(fd, name, 0); err != nil {
			f.close()
			return nil, fmt.Errorf("removing the request of an earlier run: %w", err)
		}
	}
	tmp, tfd, err := f.create()
	if err != nil {
		f.close()
		return nil, fmt.Errorf("cannot create a file in %s: %w", dir, err)
	}
	unix.Close(tfd)
	_ = unix.Unlinkat(fd, tmp, 0)
	return f, nil
}

// resolveTrusted resolves dir like filepath.EvalSymlinks, one component at
// a time, but refuses to follow a symbolic link that lies in untrusted (a
// tree a sandboxed command may write), however that tree was reached.
func resolveTrusted(dir, untrusted string) (string, error) {
	var bad string
	if untrusted != "" {
		if u, err := filepath.EvalSymlinks(untrusted); err == nil {
			bad = u
		}
	}
	within := func(p string) bool {
		return bad != "" && (p == bad || strings.HasPrefix(p, bad+"/") || bad == "/")
	}
	cur := "/"
	rest := strings.Split(strings.TrimPrefix(filepath.Clean(dir), "/"), "/")
	for hops := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		if c == "" || c == "." {
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if within(cur) {
			return "", fmt.Errorf("%s is a symbolic link inside %s, where a sandboxed command could have planted it; name the directory it leads to instead", next, bad)
		}
		if hops++; hops > 40 {
			return "", errors.New("too many symbolic links")
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(strings.TrimPrefix(target, "/"), "/"), rest...)
	}
	return cur, nil
}

// create makes a new, empty temp file in the directory.
func (f *outFile) create() (string, int, error) {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + f.name + ".wrun-" + hex.EncodeToString(rnd[:])
	fd, err := unix.Openat(int(f.dir.Fd()), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	return tmp, fd, err
}

// write replaces the file with b: a temp file in the directory, written
// and synced, renamed over whatever is at the name now.
func (f *outFile) write(b []byte) error {
	tmp, fd, err := f.create()
	if err != nil {
		return err
	}
	dfd := int(f.dir.Fd())
	fail := func(err error) error {
		unix.Close(fd)
		_ = unix.Unlinkat(dfd, tmp, 0)
		return err
	}
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err != nil {
			return fail(err)
		}
		b = b[n:]
	}
	if err := unix.Fsync(fd); err != nil {
		return fail(err)
	}
	if err := unix.Close(fd); err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return err
	}
	if err := unix.Renameat(dfd, tmp, dfd, f.name); err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return err
	}
	_ = unix.Fsync(dfd)
	return nil
}

func (f *outFile) close() {
	if f != nil && f.dir != nil {
		f.dir.Close()
	}
}

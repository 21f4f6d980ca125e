package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

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
func openOutFile(path string) (*outFile, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(abs)
	if name == "/" || name == "." || name == ".." {
		return nil, errors.New("not a file name")
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
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

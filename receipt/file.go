package receipt

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// MaxLine bounds one receipt line; a bigger one is written without the
// request's alternatives (the denials stay).
const MaxLine = 1 << 20

// EnsureDir makes dir (and its parents) for the receipts and the roster:
// the last component is made 0700 and must belong to this user.
func EnsureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("making %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s: not a directory of this user's", dir)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("making %s private: %w", dir, err)
		}
	}
	return nil
}

// Append appends r to the receipts file at path as one line, in one
// write to a descriptor opened O_APPEND, so that concurrent runs never
// tear or interleave lines. When the file has reached maxBytes it is
// first renamed to path.1 (replacing an older one), under a lock so that
// two runs do not rotate twice; a run still holding the old file appends
// its whole line there. Nothing is fsynced.
func Append(path string, maxBytes int64, r *Receipt) error {
	line, err := r.Line()
	if err != nil {
		return fmt.Errorf("encoding the receipt: %w", err)
	}
	if len(line) > MaxLine && r.Request != nil {
		c := *r
		req := *r.Request
		req.Denials = nil
		c.Request = &req
		c.Notes = append(append([]string(nil), c.Notes...), "the request's denials and alternatives were left out of this receipt: it would exceed "+fmt.Sprint(MaxLine)+" bytes")
		if line, err = c.Line(); err != nil {
			return fmt.Errorf("encoding the receipt: %w", err)
		}
	}
	if err := EnsureDir(filepath.Dir(path)); err != nil {
		return err
	}
	f, err := openAppend(path)
	if err != nil {
		return err
	}
	if maxBytes > 0 {
		if fi, err := f.Stat(); err == nil && fi.Size() > 0 && fi.Size()+int64(len(line)) > maxBytes {
			if err := rotate(path, fi, maxBytes); err != nil {
				f.Close()
				return err
			}
			f.Close()
			if f, err = openAppend(path); err != nil {
				return err
			}
		}
	}
	n, err := f.Write(line)
	cerr := f.Close()
	switch {
	case err != nil:
		return fmt.Errorf("appending to %s: %w", path, err)
	case n != len(line):
		return fmt.Errorf("appending to %s: short write (%d of %d bytes)", path, n, len(line))
	case cerr != nil:
		return fmt.Errorf("closing %s: %w", path, cerr)
	}
	return nil
}

// openAppend opens the receipts file for appending, creating it 0600; a
// symbolic link in its place is refused, and a file any other user may
// read or write is made private.
func openAppend(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return nil, fmt.Errorf("making %s private: %w", path, err)
		}
	}
	return f, nil
}

// rotate renames path to path.1 if it is still the file fi describes and
// still at least maxBytes, holding an exclusive lock on path.lock.
func rotate(path string, fi os.FileInfo, maxBytes int64) error {
	lk, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("rotating %s: %w", path, err)
	}
	defer lk.Close()
	if err := unix.Flock(int(lk.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("rotating %s: %w", path, err)
	}
	now, err := os.Lstat(path)
	if err != nil || !os.SameFile(now, fi) {
		return nil // another run rotated it
	}
	if now.Size() < maxBytes/2 {
		return nil
	}
	if err := os.Rename(path, path+".1"); err != nil {
		return fmt.Errorf("rotating %s: %w", path, err)
	}
	return nil
}

// Read reads the receipts of the file at path and of its rotated
// predecessor (path.1), oldest first. Lines that are not receipts are
// skipped and counted.
func Read(path string) ([]Receipt, int, error) {
	var out []Receipt
	bad := 0
	for _, p := range []string{path + ".1", path} {
		rs, b, err := readOne(p)
		if err != nil {
			return nil, 0, err
		}
		out, bad = append(out, rs...), bad+b
	}
	return out, bad, nil
}

func readOne(path string) ([]Receipt, int, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("reading the receipts: %w", err)
	}
	defer f.Close()
	var out []Receipt
	bad := 0
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var r Receipt
			if line[len(line)-1] != '\n' || json.Unmarshal(line, &r) != nil || r.ID == "" {
				bad++
			} else {
				out = append(out, r)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	return out, bad, nil
}

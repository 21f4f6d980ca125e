package roster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// FileID is a file's device and inode.
type FileID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// Scope is a directory a run may write beneath.
type Scope struct {
	// Path is canonical: absolute, every symbolic link resolved.
	Path string `json:"path"`
	// Chain holds the ids of Path and of each of its ancestors up to /.
	Chain []FileID `json:"chain"`
	// What says what makes it writable ("the workspace (files=write)",
	// "--allow-write").
	What string `json:"what"`
}

// NewScope resolves path and records the ids of it and its ancestors.
func NewScope(path, what string) (Scope, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Scope{}, err
	}
	c, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Scope{}, fmt.Errorf("resolving %s: %w", path, err)
	}
	s := Scope{Path: c, What: what}
	for p := c; ; p = filepath.Dir(p) {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			return Scope{}, fmt.Errorf("resolving %s: %w", p, err)
		}
		s.Chain = append(s.Chain, FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)})
		if p == "/" || p == "." {
			break
		}
	}
	return s, nil
}

// Overlaps reports whether s and o are the same directory or one lies
// inside the other: by canonical path, or by the id of either found among
// the other's ancestors (a bind mount or a second path to the same
// directory).
func (s Scope) Overlaps(o Scope) bool {
	if within(s.Path, o.Path) || within(o.Path, s.Path) {
		return true
	}
	if len(s.Chain) == 0 || len(o.Chain) == 0 {
		return false
	}
	return contains(o.Chain, s.Chain[0]) || contains(s.Chain, o.Chain[0])
}

func contains(chain []FileID, id FileID) bool {
	for _, c := range chain {
		if c == id {
			return true
		}
	}
	return false
}

func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// Entry is one live run.
type Entry struct {
	ID       string    `json:"id"`
	PID      int       `json:"pid"`
	Start    time.Time `json:"start"`
	Argv     []string  `json:"argv"`
	Role     string    `json:"role,omitempty"`
	Model    string    `json:"model,omitempty"`
	Thinking string    `json:"thinking,omitempty"`
	// Grant is the run's grant, canonical.
	Grant   string `json:"grant"`
	Workdir string `json:"workdir"`
	// Writes are the directories it holds for writing.
	Writes []Scope `json:"writes,omitempty"`
	// Share: it passed --share-workdir.
	Share bool `json:"share_workdir,omitempty"`
}

// Held is a registered run: Release removes the entry.
type Held struct {
	f    *os.File
	path string
}

// Release removes the entry and lets go of its lock. It is safe to call
// on nil.
func (h *Held) Release() {
	if h == nil || h.f == nil {
		return
	}
	_ = os.Remove(h.path)
	h.f.Close()
	h.f = nil
}

// ConflictError is a run refused because a live run holds an overlapping
// directory for writing.
type ConflictError struct {
	Mine, Theirs Scope
	Owner        Entry
}

func (e *ConflictError) Error() string {
	role := e.Owner.Role
	if role == "" {
		role = "no role"
	}
	same := "lies inside or holds"
	if e.Mine.Path == e.Theirs.Path {
		same = "is"
	}
	return fmt.Sprintf("%s (%s) %s %s, which live run %s (pid %d, %s, since %s) holds for writing: two writers in one workspace clobber each other's work; wait for it to end, or pass --share-workdir to both runs",
		e.Mine.Path, e.Mine.What, same, e.Theirs.Path, e.Owner.ID, e.Owner.PID, role, e.Owner.Start.Local().Format("15:04:05"))
}

// Register adds e to the registry in dir, after checking, under the
// registry's lock, that no live run holds a directory overlapping one of
// e.Writes for writing (unless both share). The entry stays until Release
// or the process ends.
func Register(dir string, e Entry) (*Held, error) {
	if err := ensureDir(dir); err != nil {
		return nil, err
	}
	lk, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the roster: %w", err)
	}
	defer lk.Close()
	if err := unix.Flock(int(lk.Fd()), unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("locking the roster: %w", err)
	}
	if len(e.Writes) > 0 {
		live, err := list(dir, true)
		if err != nil {
			return nil, err
		}
		for _, o := range live {
			if e.Share && o.Share {
				continue
			}
			for _, mine := range e.Writes {
				for _, theirs := range o.Writes {
					if mine.Overlaps(theirs) {
						return nil, &ConflictError{Mine: mine, Theirs: theirs, Owner: o}
					}
				}
			}
		}
	}
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, ".new-")
	if err != nil {
		return nil, fmt.Errorf("the roster: %w", err)
	}
	if err := unix.Flock(int(tmp.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("locking the roster entry: %w", err)
	}
	path := filepath.Join(dir, e.ID+".json")
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("the roster: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("the roster: %w", err)
	}
	return &Held{f: tmp, path: path}, nil
}

// List returns the live runs in dir, oldest first. An entry whose lock
// is free (its run is gone) is left out.
func List(dir string) ([]Entry, error) {
	return list(dir, false)
}

// list reads the entries; with clean (the registry's lock held) it
// removes those of dead runs and leftover temporary files.
func list(dir string, clean bool) ([]Entry, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the roster: %w", err)
	}
	var out []Entry
	for _, de := range ents {
		name := de.Name()
		full := filepath.Join(dir, name)
		if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			if clean && strings.HasPrefix(name, ".new-") && free(full) {
				os.Remove(full)
			}
			continue
		}
		f, err := os.OpenFile(full, os.O_RDONLY|unix.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		err = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
		if err == nil {
			// Nobody holds it: its run is gone.
			if clean {
				os.Remove(full)
			}
			f.Close()
			continue
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			continue
		}
		var e Entry
		derr := json.NewDecoder(f).Decode(&e)
		f.Close()
		if derr == nil && e.ID != "" {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out, nil
}

func free(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	return unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB) == nil
}

// ensureDir makes dir 0700, this user's.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("making the roster %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("the roster %s: not a directory of this user's", dir)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return os.Chmod(dir, 0o700)
	}
	return nil
}

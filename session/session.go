// Package session keeps, for a harness's session, the approvals it made
// with scope "session", so that later runs of the session take them
// without asking again. The session id is defined once, as
// policy.EnvSession: the harness sets it in wrun's environment; the
// command never gets it. The store lies in wrun's state directory, which
// every sandbox has hidden: the command can neither read what was
// approved nor add to it.
package session

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/policy"
)

// MaxAge is how long a session's remembered approvals last after the
// last one was made; an older store is removed when any session writes.
const MaxAge = 24 * time.Hour

// validID reports whether id is 16 to 128 letters, digits, '.', '_' or
// '-'. A loop, not a regexp: compiling `{16,128}` took half a millisecond
// of every launch's start, session or not.
func validID(id string) bool {
	if len(id) < 16 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// Store is one session's remembered approvals, in a file of its own.
type Store struct {
	path string
	rem  []escalate.Remembered
}

// file is the store on disk.
type file struct {
	Remembered []escalate.Remembered `json:"remembered"`
}

// Open reads the store of session id under dir (created 0700 when
// missing). The file is named by a hash of the id, so the id itself is
// written nowhere. An id not of the form policy.EnvSession describes is
// an error.
func Open(dir, id string) (*Store, error) {
	if !validID(id) {
		return nil, fmt.Errorf("%s: want 16 to 128 letters, digits, '.', '_' or '-' (an id the command cannot guess)", policy.EnvSession)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	sum := sha256.Sum256([]byte(id))
	s := &Store{path: filepath.Join(dir, hex.EncodeToString(sum[:16])+".json")}
	b, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("session store: %w", err)
	}
	if fi, err := os.Stat(s.path); err == nil && time.Since(fi.ModTime()) > MaxAge {
		return s, nil // expired: nothing remembered
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("session store %s: %w", s.path, err)
	}
	s.rem = f.Remembered
	return s, nil
}

// Remembered are the approvals the session made so far.
func (s *Store) Remembered() []escalate.Remembered { return slices.Clone(s.rem) }

// Remember adds approvals to the session, written to a new file beside
// the store and renamed over it, and removes expired stores beside it.
func (s *Store) Remember(rs []escalate.Remembered) error {
	for _, r := range rs {
		if !slices.ContainsFunc(s.rem, func(o escalate.Remembered) bool {
			return o.Workdir == r.Workdir && o.Kind == r.Kind && slices.Equal(o.Args, r.Args) &&
				slices.EqualFunc(o.Commands, r.Commands, func(a, b []string) bool { return slices.Equal(a, b) })
		}) {
			s.rem = append(s.rem, r)
		}
	}
	b, err := json.Marshal(file{Remembered: s.rem})
	if err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".new-*")
	if err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), s.path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("session store: %w", werr)
	}
	prune(filepath.Dir(s.path))
	return nil
}

// prune removes stores older than MaxAge.
func prune(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > MaxAge {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

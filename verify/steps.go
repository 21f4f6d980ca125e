package verify

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The kinds of Step.
const (
	// StepGitQuarantineOpen creates the quarantine Dir that receives the
	// objects the child writes into the repository whose common dir is
	// Repo, registers it as an alternate object directory of the
	// repository (so a ref the child points at a quarantined object is
	// valid at every moment), and first settles quarantines that earlier
	// runs left behind.
	StepGitQuarantineOpen = "git-quarantine-open"
	// StepGitQuarantineClose checks every object in Dir against its name,
	// copies the good ones into the repository, and only then unregisters
	// and removes the quarantine. If processes the child left running may
	// still write it, it stays registered for a later run to settle.
	StepGitQuarantineClose = "git-quarantine-close"
	// StepGitShim makes the directory Dir holding `git`, a symbolic link
	// to Target (wrun), which the child's PATH puts first.
	StepGitShim = "git-shim"
	// StepRemoveIfEmpty removes Dir if it is an empty file or an empty
	// directory: what wrun created for the run and the run did not use.
	StepRemoveIfEmpty = "remove-if-empty"
)

// Step is an action wrun takes outside the sandbox, before the child
// starts (Prepare) or after it and everything it started have ended
// (Finish). It is data, so `wrun explain --json` shows it; Kind names the
// action and the fields it uses depend on it.
type Step struct {
	Kind string `json:"kind"`
	// Repo is the git common dir a git step works on.
	Repo string `json:"repo,omitempty"`
	// Dir is the directory the step creates or settles.
	Dir string `json:"dir,omitempty"`
	// Target is what a link the step makes points to.
	Target string `json:"target,omitempty"`
	Why    string `json:"why"`
}

// Session is what Prepare keeps open until Finish: the lock on each git
// quarantine, which the child inherits so that a quarantine is never
// settled while any process of the run might still write into it.
type Session struct {
	held map[string]*os.File // by Step.Dir
}

// Prepare carries out steps in order. On error the steps done so far stay
// done; call Finish with the matching Finish steps to undo them.
func Prepare(steps []Step) (*Session, error) {
	s := &Session{held: map[string]*os.File{}}
	var errs []error
	for _, st := range steps {
		switch st.Kind {
		case StepGitQuarantineOpen:
			f, err := openQuarantine(st.Repo, st.Dir)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w", st.Kind, st.Dir, err))
				continue
			}
			s.held[st.Dir] = f
		case StepGitShim:
			if err := os.MkdirAll(st.Dir, 0o755); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", st.Kind, err))
			} else if err := os.Symlink(st.Target, filepath.Join(st.Dir, "git")); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", st.Kind, err))
			}
		default:
			errs = append(errs, fmt.Errorf("unknown step kind %q", st.Kind))
		}
	}
	return s, errors.Join(errs...)
}

// Files are the files the child must inherit (after its standard streams):
// the quarantine locks, opened read-only.
func (s *Session) Files() []*os.File {
	var out []*os.File
	for _, f := range s.held {
		out = append(out, f)
	}
	return out
}

// Finish carries out steps in order and returns what went wrong; it goes
// on after a failure so one bad step does not strand the others. It is
// safe to call with steps whose Prepare counterpart failed or never ran.
// ended says that every process the child started has ended (wrun ended
// what it left behind): then nothing can change what the run wrote, and
// objects are moved into place rather than copied.
func (s *Session) Finish(steps []Step, ended bool) []error {
	var errs []error
	for _, st := range steps {
		switch st.Kind {
		case StepGitQuarantineClose:
			var held *os.File
			if s != nil {
				held = s.held[st.Dir]
				delete(s.held, st.Dir)
			}
			errs = append(errs, closeQuarantine(st.Repo, st.Dir, held, ended)...)
		case StepRemoveIfEmpty:
			removeIfEmpty(st.Dir)
		default:
			errs = append(errs, fmt.Errorf("unknown step kind %q", st.Kind))
		}
	}
	return errs
}

// removeIfEmpty removes path if it is an empty regular file or an empty
// directory, never following a symbolic link in its last component.
func removeIfEmpty(path string) {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return
	}
	defer root.Close()
	name := filepath.Base(path)
	fi, err := root.Lstat(name)
	if err != nil || !fi.IsDir() && !(fi.Mode().IsRegular() && fi.Size() == 0) {
		return
	}
	_ = root.Remove(name) // a directory only goes if it is empty
}

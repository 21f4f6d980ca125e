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
	// StepGitQuarantineClose copies every object in Dir (within the
	// bounds MaxQuarantineFile and MaxQuarantineTotal) into the repository
	// and checks wrun's copy against its name, keeps the good ones, and only then unregisters
	// and removes the quarantine. If processes the child left running may
	// still write it, it stays registered for a later run to settle.
	StepGitQuarantineClose = "git-quarantine-close"
	// StepGitShim makes the directory Dir holding `git`, a symbolic link
	// to Target (wrun), which the child's PATH puts first, and the remote
	// helper that refuses pushes (PushRefusedHelper), git's proxy command
	// (GitProxyHelper) and ssh command (SSHRefusedHelper), more links to it.
	StepGitShim = "git-shim"
	// StepRemoveIfEmpty removes Dir if it is an empty file or an empty
	// directory: what wrun created for the run and the run did not use.
	StepRemoveIfEmpty = "remove-if-empty"
	// StepStateRoot makes wrun's state directory Dir on first use (mode
	// 0700, its missing parents too) and checks that it is a directory of
	// this user and not a symbolic link: the paths wrun keeps beneath it
	// are reached from it without following links, so it must be real.
	StepStateRoot = "state-root"
	// StepGuardOpen first makes the checks that earlier runs, ended
	// without them, left in the journal directory of Guard, then records
	// Guard there (see Guard).
	StepGuardOpen = "guard-open"
	// StepGuardClose makes Guard's check (see Guard.Check) and removes its
	// journal.
	StepGuardClose = "guard-close"
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
	// Guard is what a guard step records and checks.
	Guard *Guard `json:"guard,omitempty"`
	Why   string `json:"why"`
}

// Session is what Prepare keeps open until Finish: the lock on each git
// quarantine, which the child inherits so that a quarantine is never
// settled while any process of the run might still write into it.
type Session struct {
	held  map[string]*os.File // by Step.Dir
	guard map[string]*os.File // journal locks, by Guard.ID
	found []Finding
}

// Findings are what the guard checks changed so far: before the child
// started (for runs that ended without their check) and after it.
func (s *Session) Findings() []Finding {
	if s == nil {
		return nil
	}
	return s.found
}

// Prepare carries out steps in order. On error the steps done so far stay
// done; call Finish with the matching Finish steps to undo them.
func Prepare(steps []Step) (*Session, error) {
	s := &Session{held: map[string]*os.File{}, guard: map[string]*os.File{}}
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
		case StepStateRoot:
			if err := EnsureStateRoot(st.Dir); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", st.Kind, err))
			}
		case StepGuardOpen:
			if st.Guard == nil {
				continue
			}
			if st.Guard.Journal != "" {
				s.found = append(s.found, settleStaleGuards(st.Guard.Journal, st.Guard.ID)...)
			}
			f, err := st.Guard.writeJournal()
			if err != nil {
				// The checks after the run are made all the same; only a
				// wrun killed before them leaves them to nobody.
				s.found = append(s.found, Finding{Path: st.Guard.Journal, What: "could not record this run's checks (if wrun is killed, no later run makes them): " + err.Error()})
			} else if f != nil {
				s.guard[st.Guard.ID] = f
			}
			// Made once the journal names them: what a killed wrun made
			// is removed by the next run.
			errs = append(errs, st.Guard.makeScratch()...)
		case StepGitShim:
			if err := os.MkdirAll(st.Dir, 0o755); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", st.Kind, err))
			} else if err := os.Symlink(st.Target, filepath.Join(st.Dir, "git")); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", st.Kind, err))
			} else if err := os.Symlink(st.Target, filepath.Join(st.Dir, "git-remote-"+PushRefusedHelper)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", st.Kind, err))
			} else if err := os.Symlink(st.Target, filepath.Join(st.Dir, GitProxyHelper)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", st.Kind, err))
			} else if err := os.Symlink(st.Target, filepath.Join(st.Dir, SSHRefusedHelper)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", st.Kind, err))
			} else if err := os.Mkdir(PushReportDir(st.Dir), 0o700); err != nil {
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
// ended says that every process the child started has ended. wrun does
// not rely on it: what the run wrote is copied before it is checked, so a
// process that is still alive, a descriptor or a second link cannot change
// what was checked.
func (s *Session) Finish(steps []Step, ended bool) []error {
	_ = ended
	var errs []error
	for _, st := range steps {
		switch st.Kind {
		case StepGitQuarantineClose:
			var held *os.File
			if s != nil {
				held = s.held[st.Dir]
				delete(s.held, st.Dir)
			}
			errs = append(errs, closeQuarantine(st.Repo, st.Dir, held)...)
		case StepRemoveIfEmpty:
			removeIfEmpty(st.Dir)
		case StepGuardClose:
			if st.Guard == nil {
				continue
			}
			found := st.Guard.Check()
			if s != nil {
				s.found = append(s.found, found...)
			}
			if !ended {
				// Processes of the run may still write: the journal stays
				// for the next run to check again.
				errs = append(errs, Notice("processes of the command may still run: the next wrun checks git metadata and start-up files again"))
			} else if st.Guard.Journal != "" {
				os.Remove(filepath.Join(st.Guard.Journal, st.Guard.ID+".json"))
			}
			if s != nil {
				if f := s.guard[st.Guard.ID]; f != nil {
					f.Close()
					delete(s.guard, st.Guard.ID)
				}
			}
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

// EnsureStateRoot creates dir, wrun's state directory, if it is missing
// (mode 0700; missing parents 0700 too, as the XDG base directory
// specification asks), and checks that what is there is a directory owned
// by this user and not a symbolic link. Existing parents are the user's
// choice and may be links (a home directory on another disk); the state
// directory itself may not, since wrun reaches everything beneath it
// without following links and a link there would redirect all of it.
func EnsureStateRoot(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("state directory %q is not absolute", dir)
	}
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("creating the parent of wrun's state directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating wrun's state directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("checking wrun's state directory: %w", err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("wrun's state directory %s is a symbolic link; refusing to follow it (remove it, and wrun makes a new one)", dir)
	}
	if !fi.IsDir() {
		return fmt.Errorf("wrun's state directory %s is not a directory", dir)
	}
	if owner, ok := fileOwner(fi); ok && owner != os.Geteuid() {
		return fmt.Errorf("wrun's state directory %s belongs to uid %d, not to this user (uid %d)", dir, owner, os.Geteuid())
	}
	return nil
}

// Notice is what Session.Finish reports that is not a failure of the
// step: the step did its work (discarded a forged object, left a
// quarantine in use registered for a later run) and says so.
type Notice string

func (n Notice) Error() string { return string(n) }

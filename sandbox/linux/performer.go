//go:build linux

package linux

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Performers: the threads of wrun that make the command's mediated calls.
//
// A call wrun performs must be the call the command would have made, with
// nothing of wrun's own authority: each performer is a locked OS thread
// of wrun that has, before its first call,
//
//   - a file system context of its own (unshare(CLONE_FS)), so that the
//     command's umask can be set on it for each call that creates, and a
//     change of directory (a relative bind) touches no other thread.
//     Where unshare is refused (a container's default seccomp profile
//     refuses it without CAP_SYS_ADMIN) the context is wrun's: the calls
//     that set a umask or a directory then take fsContext's lock, and
//     put wrun's back (nothing else of wrun's makes files or depends on
//     its directory while the command runs);
//   - no capability at all (as root, wrun holds CAP_CHOWN, CAP_FOWNER,
//     CAP_DAC_OVERRIDE, which the command does not) and no_new_privs;
//     its uid and gids are wrun's, which are the command's (the command
//     cannot change them: no capability, no setuid program);
//   - a Landlock domain of its own whose rules are the writable trees of
//     the policy, whole, and the sandbox's private devices
//     (performerRules): whatever wrun's checks decide, the kernel keeps a
//     performed call inside the write scope. The domain scopes nothing:
//     the performer connects to the command's abstract sockets, which a
//     scoped domain beside the command's could not.
//
// The command cannot reach a performer: its domain is beside the
// command's (Landlock refuses ptrace access and, from ABI 6, signals
// across), and below the signal scope the filter sends every signal to
// wrun, which sends none to its own threads. The Go runtime never starts
// a thread from a locked one (it uses a template thread), so nothing else
// of wrun inherits the restriction; a performer's goroutine never unlocks
// its thread, and the runtime discards it when the goroutine returns.

// maxPerformers bounds the performer threads: calls that block (a connect
// waiting for an accept, an open of a FIFO waiting for a writer) each hold
// one. Beyond the bound a call waits for a free one.
const maxPerformers = 64

// performers is the pool. The zero value is not usable: newPerformers.
type performers struct {
	// build makes the performers' ruleset (nil without Landlock), once,
	// when the first thread is made: a run that makes no mediated call
	// pays nothing for it. Each thread restricts itself with it.
	build func() (*ruleset, error)
	once  sync.Once
	rs    *ruleset
	// work carries calls to idle threads.
	work chan func()
	// slots bounds the threads.
	slots chan struct{}
	mu    sync.Mutex
	// err is the first failure to make a thread: every call then fails.
	err    error
	closed bool
	// fs is the file system context the threads share where they cannot
	// have one of their own.
	fs *fsContext
}

// fsContext serializes umask and working-directory changes of performer
// threads that share wrun's file system context (shared: unshare was
// refused). cwd is wrun's own working directory, put back after each.
type fsContext struct {
	shared atomic.Bool
	mu     sync.Mutex
	cwd    int
}

// newFSContext holds wrun's working directory for fsContext.
func newFSContext() *fsContext {
	fs := &fsContext{cwd: -1}
	if fd, err := unix.Open(".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		fs.cwd = fd
	}
	return fs
}

// withUmask runs f with the calling performer's umask set to mask.
func (fs *fsContext) withUmask(mask int, f func()) {
	if fs.shared.Load() {
		fs.mu.Lock()
		defer fs.mu.Unlock()
	}
	old := unix.Umask(mask)
	defer unix.Umask(old)
	f()
}

// inDir runs f with the calling performer's working directory dir, and
// puts it back.
func (fs *fsContext) inDir(dir int, f func() error) error {
	if fs.shared.Load() {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		if fs.cwd < 0 {
			return unix.EPERM // wrun's own directory could not be put back
		}
		defer func() { _ = unix.Fchdir(fs.cwd) }()
	} else {
		defer func() { _ = unix.Chdir("/") }()
	}
	if err := unix.Fchdir(dir); err != nil {
		return err
	}
	return f()
}

// newPerformers makes the pool; no thread starts, and build does not
// run, before the first call.
func newPerformers(build func() (*ruleset, error), fs *fsContext) *performers {
	return &performers{build: build, work: make(chan func()), slots: make(chan struct{}, maxPerformers), fs: fs}
}

// errNoPerformer is returned when no performer could be made.
var errNoPerformer = errors.New("no thread could be made to perform the call")

// do runs f on a performer and returns once it has run. f must not keep
// the thread: it runs with the command's umask set by the caller (umask).
func (p *performers) do(f func()) error {
	done := make(chan struct{})
	job := func() { defer close(done); f() }
	for {
		select {
		case p.work <- job:
			<-done
			return nil
		default:
		}
		p.mu.Lock()
		if p.err != nil || p.closed {
			err := p.err
			p.mu.Unlock()
			if err == nil {
				err = errNoPerformer
			}
			return err
		}
		p.mu.Unlock()
		select {
		case p.slots <- struct{}{}:
			p.once.Do(func() {
				rs, err := p.build()
				p.mu.Lock()
				p.rs, p.err = rs, err
				p.mu.Unlock()
			})
			p.mu.Lock()
			err := p.err
			p.mu.Unlock()
			if err != nil {
				<-p.slots
				return err
			}
			ready := make(chan error, 1)
			go p.thread(ready)
			if err := <-ready; err != nil {
				<-p.slots
				p.mu.Lock()
				if p.err == nil {
					p.err = err
				}
				p.mu.Unlock()
				return err
			}
		case p.work <- job:
			<-done
			return nil
		}
	}
}

// thread is one performer: it makes its thread what the type's comment
// says, then serves work until the pool closes.
func (p *performers) thread(ready chan<- error) {
	runtime.LockOSThread() // never unlocked: the runtime discards the thread
	if err := becomePerformer(p.rs, p.fs); err != nil {
		ready <- fmt.Errorf("preparing a thread to perform the command's calls: %w", err)
		return
	}
	ready <- nil
	for job := range p.work {
		job()
	}
}

// close ends the pool: idle threads exit; a call made after it fails.
func (p *performers) close() {
	p.once.Do(func() {}) // a ruleset not built by now never is
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.work)
	}
	if p.rs != nil {
		p.rs.close()
		p.rs = nil
	}
}

// becomePerformer prepares the calling (locked) thread.
func becomePerformer(rs *ruleset, fs *fsContext) error {
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.ENOSYS) {
			return fmt.Errorf("unshare(CLONE_FS): %w", err)
		}
		fs.shared.Store(true)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if rs != nil {
		if err := restrictSelf(rs, false); err != nil {
			return err
		}
	}
	return nil
}

//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/sandbox"
)

// makeUndumpable keeps the child out of wrun's memory, environment and
// descriptors. The launch thread shares the child's sandbox (the child is
// forked from it), so Landlock lets the child reach it through
// /proc/PPID/task/TID/{environ,mem,fd/N} and pidfd_getfd, which would hand
// it the environment wrun scrubbed and descriptors wrun kept from it. A
// process that is not dumpable can be inspected that way only with
// CAP_SYS_PTRACE, which the child never has. execve makes the child
// dumpable again, so the observer can still read its arguments. (Not set
// for the second stage's launch: a process that is not dumpable cannot
// exec /proc/self/exe into a new user namespace, and there no wrun thread
// shares the child's sandbox.)
func makeUndumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("making wrun undumpable: %w", err)
	}
	return nil
}

// MarkInheritedFDsCloseOnExec sets close-on-exec on every descriptor above
// 2, so nothing wrun inherited reaches the child. Call it first thing.
func MarkInheritedFDsCloseOnExec() error {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("listing open file descriptors: %w", err)
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		unix.CloseOnExec(fd)
	}
	return nil
}

// Run enforces the plan and runs the command under it. It returns when the
// command has exited and, unless KeepBackground is set, every process it
// left behind has been ended.
func Run(pl *Plan, c sandbox.Command) (sandbox.Result, error) {
	return RunStaged(pl, c, nil)
}

// RunStaged is Run with a stage started ahead of the plan (StartStage),
// which it uses when the plan needs one of its shape and abandons
// otherwise; ps may be nil.
func RunStaged(pl *Plan, c sandbox.Command, ps *Prestage) (sandbox.Result, error) {
	defer ps.Abandon()
	if len(c.Argv) == 0 {
		return sandbox.Result{}, &sandbox.StartError{Code: 125, Err: errors.New("no command")}
	}
	for _, cr := range pl.Create {
		if err := create(cr); err != nil {
			return sandbox.Result{}, &sandbox.StartError{Code: 125, Err: err}
		}
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return sandbox.Result{}, &sandbox.StartError{Code: 125, Err: fmt.Errorf("becoming a child subreaper: %w", err)}
	}
	// Interactive: the child stays in wrun's process group, so the
	// terminal's job control (Ctrl-C, Ctrl-Z) reaches both, and signals the
	// terminal sends are not forwarded a second time. Otherwise the child
	// leads a process group of its own, and wrun forwards to all of it.
	interactive := isForeground(c.Stdin)
	started := make(chan startResult, 1)
	done := make(chan syscall.WaitStatus, 1)
	stageDone := make(chan stageEnd, 1)
	// The kernel's audit records, where they can be read, confirm the
	// observer's denials and show what it does not watch. Subscribed before
	// the sandbox exists, so no record is missed.
	var aud *auditReader
	if pl.audit {
		aud = openAudit()
	}
	if pl.stage {
		// The stage restricts a thread of its own and forks the command
		// from it: no thread of wrun is in the child's sandbox, and the
		// child cannot see wrun (another PID namespace).
		startStage(ps, &stageReq{pl: pl, c: c, interactive: interactive, auditLog: aud != nil, started: started, done: stageDone})
	} else {
		if err := makeUndumpable(); err != nil {
			return sandbox.Result{}, &sandbox.StartError{Code: 125, Err: err}
		}
		if !pl.Options.KeepBackground {
			// Once every sandboxed process has ended, wrun may be dumpable
			// again: a retry that needs the stage must exec /proc/self/exe,
			// which a process that is not dumpable cannot.
			defer func() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0) }()
		}
		// The launch goroutine starts first so that the runtime's creation
		// of its thread overlaps with building the ruleset.
		r := pl.restriction(aud != nil)
		ready := make(chan *ruleset, 1)
		go launch(pl, r, ready, c, interactive, started, done)
		rs, err := r.ruleset()
		if err != nil {
			close(ready)
			return sandbox.Result{}, &sandbox.StartError{Code: 125, Err: err}
		}
		if rs != nil {
			defer rs.close()
		}
		ready <- rs
	}
	sr := <-started
	if aud != nil && sr.err != nil {
		aud.finish(0)
	}
	var nsErr *userNSError
	if errors.As(sr.err, &nsErr) {
		// The kernel refused the user namespace (an AppArmor or sysctl
		// restriction the probe could not see, or the seccomp filter of an
		// enclosing wrun). The launch thread and carved rules hold the
		// grant without one.
		f := pl.Features
		f.UserNS = false
		fallback, err := NewPlan(pl.Policy, f, pl.Options)
		if err != nil {
			return sandbox.Result{}, &sandbox.StartError{Code: 125, Err: err}
		}
		res, err := Run(fallback, c)
		res.Warnings = append(res.Warnings, nsErr.Error()+"; the sandbox was enforced without namespaces (carved Landlock rules, seccomp) instead")
		return res, err
	}
	if sr.err != nil {
		return sandbox.Result{}, sr.err
	}
	pid := sr.pid
	obs := sr.obs

	var state syscall.WaitStatus
	var warnings []string
	var grace <-chan time.Time // set once a request to end was forwarded
wait:
	for {
		select {
		case state = <-done:
			break wait
		case end := <-stageDone:
			state = end.status
			switch {
			case end.err != nil:
				warnings = append(warnings, "the sandbox's stage: "+end.err.Error())
				state = end.stage
			case !end.reported:
				// The stage ended without the command's status: something
				// killed it, and the kernel ended the sandbox with it.
				warnings = append(warnings, fmt.Sprintf("the sandbox's stage ended before the command (%s); every process of the sandbox was ended with it", describeWait(end.stage)))
				state = end.stage
			}
			break wait
		case s := <-c.Signals:
			sig, ok := s.(syscall.Signal)
			switch {
			case !ok:
			case pl.stage:
				// The stage passes it on, as the terminal would have.
				_ = unix.Kill(pid, sig)
			case !interactive:
				_ = unix.Kill(-pid, sig)
			case sig != unix.SIGINT && sig != unix.SIGQUIT:
				_ = unix.Kill(pid, sig)
			}
			// A request to end: the command gets KillAfter to do so.
			if ok && grace == nil && pl.Options.KillAfter > 0 && (sig == unix.SIGTERM || sig == unix.SIGINT || sig == unix.SIGHUP) {
				t := time.NewTimer(pl.Options.KillAfter)
				defer t.Stop()
				grace = t.C
			}
		case <-grace:
			// The grace is over: end everything in the sandbox. Through the
			// stage, killing it ends its PID namespace, and with it every
			// process; the wait above then sees the stage end.
			grace = nil
			warnings = append(warnings, fmt.Sprintf("the command did not end within %s of the signal (--kill-after): everything in the sandbox was killed", pl.Options.KillAfter))
			// On the launch-thread path the command's process group goes
			// now, and what it left elsewhere once the command is reaped.
			switch {
			case pl.stage || interactive:
				_ = unix.Kill(pid, unix.SIGKILL)
			default:
				_ = unix.Kill(-pid, unix.SIGKILL)
			}
		}
	}
	res := sandbox.Result{Warnings: warnings}
	if state.Signaled() {
		res.Signal = state.Signal()
		res.ExitCode = 128 + int(state.Signal())
	} else {
		res.ExitCode = state.ExitStatus()
	}
	if !pl.Options.KeepBackground && !pl.stage {
		// Through the stage, the kernel has ended them already, with the
		// PID namespace.
		pgid := pid
		if interactive {
			pgid = 0
		}
		res.Killed = killLeftovers(pgid)
	}
	if obs != nil {
		var faults int
		res.Denials, faults = obs.stop()
		res.DenialsDropped = obs.dropped()
		if faults > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the denial observer could not decode %d call(s) of the command; the kernel still decided them, but their denials are not reported", faults))
		}
		res.Observed = obs.observing
		if obs.med != nil {
			if n := obs.med.unreached.Load(); n > 0 {
				res.Warnings = append(res.Warnings, fmt.Sprintf("the hands process, which makes the sandbox's UNIX socket connects, binds and addressed sends (and directories' setgid bits), had ended during the run: %d such call(s) of the command failed with EPERM", n))
			}
		}
	}
	if aud != nil {
		// The restricting process: wrun itself, or the stage.
		restrictor := os.Getpid()
		if pl.stage {
			restrictor = pid
		}
		recs, lost := aud.finish(restrictor)
		var unmatched, dropped int
		res.Denials, unmatched, dropped = mergeAudit(res.Denials, recs)
		res.DenialsDropped += dropped
		res.Audited = true
		if lost {
			res.Warnings = append(res.Warnings, "some of the kernel's audit records of this run were lost: the denials listed may be incomplete")
		}
		if unmatched > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the kernel's audit log shows %d denial(s) the observer did not predict; they name only a directory (ausearch -m LANDLOCK_ACCESS shows them)", unmatched))
		}
	}
	for _, pr := range pl.Sweep {
		removed, err := sweep(pr)
		if err != nil {
			res.AfterRunFailed = append(res.AfterRunFailed, err.Error())
		}
		if removed {
			res.Swept = append(res.Swept, pr.Path)
		}
	}
	return res, nil
}

type startResult struct {
	pid int
	obs *observer
	err error
}

// launch runs on its own OS thread, which it locks and never unlocks: r is
// applied to this thread alone, the child is forked from it (so inherits
// it), and the Go runtime discards the thread when launch returns. The
// thread lives until the child exits, which PR_SET_PDEATHSIG needs: the
// child's death signal fires when the thread that forked it ends. The
// caller builds r's ruleset meanwhile and sends it on ready.
func launch(pl *Plan, r *restriction, ready <-chan *ruleset, c sandbox.Command, interactive bool, started chan<- startResult, done chan<- syscall.WaitStatus) {
	runtime.LockOSThread()
	prog := r.filter()
	rs, ok := <-ready
	if !ok {
		return // the caller failed before the sandbox was ready
	}
	listener, err := restrict(r, rs, prog)
	if err != nil {
		started <- startResult{err: &sandbox.StartError{Code: 125, Err: err}}
		return
	}
	var obs *observer
	if listener >= 0 {
		// Served from another thread: this one must stay the child's parent.
		if obs, err = newObserver(listener, pl); err != nil {
			started <- startResult{err: &sandbox.StartError{Code: 125, Err: err}}
			return
		}
		go obs.run()
	}
	p := pl.Policy
	path, err := lookPath(c.Argv[0], p.Env, p.Cwd)
	if err != nil {
		started <- startResult{err: err}
		return
	}
	// From here on, returning ends this thread, the last user of the
	// filter before the child exists, which stops the observer.
	// syscall.ForkExec rather than os/exec: os/exec forks a throwaway child
	// the first time it runs, to learn whether pidfds work, and wrun waits
	// for its child with wait4 on this thread anyway.
	files := []uintptr{c.Stdin.Fd(), c.Stdout.Fd(), c.Stderr.Fd()}
	for _, f := range c.ExtraFiles { // the only other descriptors the child gets
		files = append(files, f.Fd())
	}
	pid, err := syscall.ForkExec(path, c.Argv, &syscall.ProcAttr{
		Dir:   p.Cwd,
		Env:   p.Env,
		Files: files,
		Sys:   &syscall.SysProcAttr{Setsid: detach(interactive, c), Setpgid: !interactive && !detach(interactive, c), Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		code := 126
		if errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		started <- startResult{err: &sandbox.StartError{Code: code, Err: explainStart(c.Argv[0], err)}}
		return
	}
	started <- startResult{pid: pid, obs: obs}
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(pid, &ws, 0, nil); !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	done <- ws
}

// lookPath finds argv0 the way a shell would, with the child's PATH. A
// name with a slash is taken as it is (relative to the child's directory).
func lookPath(argv0 string, env []string, dir string) (string, error) {
	if strings.Contains(argv0, "/") {
		// A directory is not a program: say so, rather than blame the
		// sandbox for the EACCES that executing it gives.
		cand := argv0
		if !filepath.IsAbs(cand) {
			cand = filepath.Join(dir, cand)
		}
		if fi, err := os.Stat(cand); err == nil && fi.IsDir() {
			return "", &sandbox.StartError{Code: 126, Err: fmt.Errorf("%s: is a directory", argv0)}
		}
		return argv0, nil
	}
	pathEnv := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		cand := filepath.Join(d, argv0)
		if !filepath.IsAbs(cand) {
			cand = filepath.Join(dir, cand)
		}
		fi, err := os.Stat(cand)
		if err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return cand, nil
		}
	}
	return "", &sandbox.StartError{Code: 127, Err: fmt.Errorf("%s: command not found in PATH", argv0)}
}

func explainStart(argv0 string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("%s: no such file or directory", argv0)
	case errors.Is(err, unix.EACCES):
		return fmt.Errorf("%s: permission denied: the sandbox does not allow executing it, or it is not executable", argv0)
	}
	return fmt.Errorf("%s: %w", argv0, err)
}

// detach reports whether the command is to lead a session of its own: a
// run that is not interactive and hands the command no terminal. The
// session wrun runs in may still have a controlling terminal (a harness's,
// where its user types): left in it, the command could open that terminal
// as /dev/tty, write to it, and, ignoring SIGTTOU, make itself its
// foreground and read what is typed there. In a session of its own it has
// no controlling terminal (the kernel's guarantee), and /dev/tty fails
// with ENXIO. Its session id is its pid, so it still leads the process
// group wrun signals. A command given a terminal stays in wrun's session:
// it holds that terminal anyway, and job control keeps working.
func detach(interactive bool, c sandbox.Command) bool {
	if interactive {
		return false
	}
	for _, f := range append([]*os.File{c.Stdin, c.Stdout, c.Stderr}, c.ExtraFiles...) {
		if f == nil {
			continue
		}
		if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
			return false
		}
	}
	return true
}

// isForeground reports whether stdin is a terminal whose foreground process
// group is wrun's: an interactive run.
func isForeground(stdin *os.File) bool {
	if stdin == nil {
		return false
	}
	pgrp, err := unix.IoctlGetInt(int(stdin.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// children lists wrun's direct children (reparented orphans included).
func children() []int {
	var out []int
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// killLeftovers ends every process the command left behind: its process
// group (if it has its own), then, repeatedly, every child reparented to wrun (a subreaper),
// including ones that called setsid. It returns how many it ended.
func killLeftovers(pgid int) int {
	killed := 0
	for round := 0; round < 1000; round++ {
		if pgid > 0 {
			_ = unix.Kill(-pgid, unix.SIGKILL)
		}
		// The common case: no child at all is left (ECHILD), one call.
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); errors.Is(err, unix.ECHILD) {
			return killed
		}
		kids := children()
		if len(kids) == 0 {
			return killed
		}
		for _, k := range kids {
			if unix.Kill(k, unix.SIGKILL) == nil {
				killed++
			}
		}
		for _, k := range kids {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(k, &ws, 0, nil)
		}
	}
	return killed
}

// Run enforces the plan and runs c under it; see the package function Run.
func (pl *Plan) Run(c sandbox.Command) (sandbox.Result, error) { return Run(pl, c) }

// describeWait says in words how a process ended.
func describeWait(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "killed by " + ws.Signal().String()
	}
	return fmt.Sprintf("exit status %d", ws.ExitStatus())
}

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

	"github.com/wrun-dev/wrun/internal/ptyrelay"
	"github.com/wrun-dev/wrun/sandbox"
)

// wrun's side of a run: the one launch path.
//
// wrun builds the command's Landlock ruleset, then restricts one locked
// thread of its own with it and with the seccomp filter (restrict.go) and
// forks the command from that thread, which stays, blocked in wait4, as
// the command's parent (so that the command dies with wrun:
// PR_SET_PDEATHSIG). No second program starts before the command, and no
// namespace is made: Landlock and seccomp hold the grant, and wrun itself,
// through the filter's listener, decides or performs what they cannot
// (supervise.go). wrun is a child subreaper, so everything the command
// starts stays its descendant; when the command exits wrun ends what it
// left (unless --keep-background), stops the mediation (from then on the
// calls it received fail with ENOSYS, so nothing left can change what the
// checks after the run hold), and runs those checks.
//
// An interactive run (standard input a terminal whose foreground group is
// wrun's) gets a terminal of its own through a pty relay
// (internal/ptyrelay, whose doc says why and how): T1 forks the relay's
// monitor (wrun's own binary, re-executed inside the sandbox) as the
// leader of a new session whose controlling terminal is the relay's
// inner one, and the monitor runs the command as that terminal's
// foreground group. So the command shares no process group and no
// session with wrun or anything else outside the sandbox, interactive or
// not: kill(0), setpriority(PRIO_PGRP, 0) and the terminal's own signals
// reach the sandbox's processes only. wrun copies bytes between the two
// terminals, and follows the monitor's stops (^Z) with its own; all of
// that runs on wrun's unrestricted threads, never on T1, which only
// forks and waits.

// Run enforces the plan and runs the command under it. It returns when the
// command has exited and, unless KeepBackground is set, every process it
// left behind has been ended.
func Run(pl *Plan, c sandbox.Command) (sandbox.Result, error) {
	if len(c.Argv) == 0 {
		return sandbox.Result{}, &sandbox.StartError{Code: 125, Err: errors.New("no command")}
	}
	// nil, at the cost of one ioctl, unless the run is interactive. A
	// relay that cannot be made refuses the run: without one the command
	// would share wrun's process group and session.
	relay, err := ptyrelay.Start(c.Stdin)
	if err != nil {
		return sandbox.Result{}, &sandbox.StartError{Code: 125, Err: fmt.Errorf("giving the interactive command a terminal of its own: %w (a run whose standard input is not a terminal, e.g. </dev/null, needs none)", err)}
	}
	// Every path: the terminal gets its modes back. The run's end closes
	// it earlier, once the command and what it left have ended.
	defer relay.Close()
	return run(pl, c, relay)
}

// run is Run with the interactive run's relay, or nil.
func run(pl *Plan, c sandbox.Command, relay *ptyrelay.Relay) (sandbox.Result, error) {
	// The count of the user's tasks (a read of /proc) overlaps with the
	// steps before the fork.
	bound := make(chan procBound, 1)
	go func() { bound <- processBound() }()
	for _, cr := range pl.Create {
		if err := create(cr); err != nil {
			return sandbox.Result{}, &sandbox.StartError{Code: 125, Err: err}
		}
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return sandbox.Result{}, &sandbox.StartError{Code: 125, Err: fmt.Errorf("becoming a child subreaper: %w", err)}
	}
	if err := makeUndumpable(); err != nil {
		return sandbox.Result{}, &sandbox.StartError{Code: 125, Err: err}
	}
	// The kernel's audit records, where they can be read, confirm the
	// denials and show what the mediation does not see (reads).
	// Subscribed before the sandbox exists, so no record is missed.
	var aud *auditReader
	if pl.audit {
		aud = openAudit()
	}
	interactive := relay != nil
	started := make(chan startResult, 1)
	done := make(chan syscall.WaitStatus, 1)
	// With a relay, the monitor's stops (the command's ^Z), each with its
	// signal; T1 sends them and waits on.
	var stops chan syscall.Signal
	if interactive {
		stops = make(chan syscall.Signal)
	}
	// The launch goroutine starts first so that the runtime's creation of
	// its thread overlaps with building the ruleset.
	ready := make(chan *ruleset, 1)
	go launch(pl, ready, bound, c, relay, started, stops, done)
	var rs *ruleset
	if pl.ABI > 0 {
		rules := pl.Rules
		if interactive {
			rules = relayRules(rules, terminalOf(c.Stdin), relay.Slave().Name())
		}
		var err error
		if rs, err = buildRuleset(pl.attr, fsRules(rules)); err != nil {
			close(ready)
			if aud != nil {
				aud.finish(0)
			}
			return sandbox.Result{}, &sandbox.StartError{Code: 125, Err: err}
		}
	}
	ready <- rs
	sr := <-started
	if errors.Is(sr.err, errListenerTaken) && rs != nil {
		rs.close()
		if aud != nil {
			aud.finish(0)
		}
		// Another filter of the chain holds the listener: the run is a
		// nested one, planned again for what holds there.
		f := pl.Features
		f.Nested, f.Outer = true, OuterOther
		if os.Getenv("WRUN_SANDBOX") != "" {
			f.Outer = OuterWrun
		}
		again, err := NewPlan(pl.Policy, f, pl.Options)
		if err != nil {
			return sandbox.Result{}, &sandbox.StartError{Code: 125, Err: err}
		}
		return run(again, c, relay)
	}
	if sr.err != nil {
		if rs != nil {
			rs.close()
		}
		if aud != nil {
			aud.finish(0)
		}
		return sandbox.Result{}, sr.err
	}
	var sup *supervisor
	if sr.listener >= 0 {
		var err error
		// The supervisor keeps the ruleset, for the performers that act
		// under the command's own rules.
		if sup, err = newSupervisor(sr.listener, pl, sr.launch, rs); err != nil {
			// The command waits in its first mediated call; it ends with
			// the listener.
			_ = unix.Kill(sr.pid, unix.SIGKILL)
			waitEnd(done, stops)
			return sandbox.Result{}, &sandbox.StartError{Code: 125, Err: err}
		}
		sup.baseline.Store(int64(sr.filters))
		if relay != nil {
			// The relay's inner terminal is the sandbox's own: reopened
			// through /dev/pts/N (or with O_TRUNC, which wrun performs
			// below Landlock ABI 3) it is the command's.
			sup.dev.adopt(relay.Slave().Name())
		}
		go sup.run()
	} else if rs != nil {
		rs.close()
	}
	pid := sr.pid
	// The outer terminal goes raw and the copying starts: from here until
	// the relay is closed, wrun writes nothing to the terminal.
	relay.Started(pid)

	var state syscall.WaitStatus
	var warnings []string
	var grace <-chan time.Time // set once a request to end was forwarded
wait:
	for {
		select {
		case state = <-done:
			break wait
		case sig := <-stops:
			// The monitor stopped as the command did (^Z, or a stop
			// signal sent inside): the terminal gets its modes back and
			// wrun stops likewise, until its shell continues it (fg).
			relay.Stopped(sig)
			relay.Continued()
		case s := <-c.Signals:
			sig, ok := s.(syscall.Signal)
			switch {
			case !ok:
			case !interactive:
				_ = unix.Kill(-pid, sig)
			default:
				// The monitor passes it on to the command's group. SIGINT
				// and SIGQUIT too: the outer terminal is raw, so the
				// keyboard's ^C reached the command as a byte, and one
				// wrun receives came from kill.
				_ = unix.Kill(pid, sig)
			}
			// A request to end: the command gets KillAfter to do so.
			if ok && grace == nil && pl.Options.KillAfter > 0 && (sig == unix.SIGTERM || sig == unix.SIGINT || sig == unix.SIGHUP) {
				t := time.NewTimer(pl.Options.KillAfter)
				defer t.Stop()
				grace = t.C
			}
		case <-grace:
			grace = nil
			warnings = append(warnings, fmt.Sprintf("the command did not end within %s of the signal (--kill-after): everything in the sandbox was killed", pl.Options.KillAfter))
			if interactive {
				// The monitor; the command dies with it (its
				// PR_SET_PDEATHSIG), what it left below.
				_ = unix.Kill(pid, unix.SIGKILL)
			} else {
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
	if !pl.Options.KeepBackground {
		pgid := pid
		if interactive {
			// The monitor's group holds only the monitor; what the
			// command left, in any group, is wrun's child now.
			pgid = 0
		}
		res.Killed = killLeftovers(pgid, sr.filters)
		// Nothing of the command's is left to read wrun's memory: wrun
		// is dumpable again, so that an enclosing wrun can mediate its
		// calls after the run (it cannot read an undumpable process).
		_ = unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0)
	}
	// The command's last output drains (until what holds the inner
	// terminal is gone), then the outer terminal gets its modes back.
	if err := relay.Close(); err != nil {
		res.Warnings = append(res.Warnings, err.Error())
	}
	if sup != nil {
		var faults int
		if pl.Options.KeepBackground {
			// What the command left goes on being mediated (by the
			// keeper: cmd/wrun) until the last of it ends.
			res.Denials, faults = sup.snapshot()
			res.Linger = func() { linger(sup, sr.filters) }
		} else {
			// Nothing is left; a call still waiting fails with ENOSYS.
			res.Denials, faults = sup.stop()
			sup.dev.cleanup() // as a private /dev/shm would go: not said
		}
		res.DenialsDropped = sup.dropped()
		res.Observed = !pl.Options.NoObserve
		if faults > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("wrun could not decode %d call(s) of the command; each failed with EPERM", faults))
		}
		if sup.failed > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%d call(s) wrun performs for the command failed with EPERM: no thread could be prepared to make them", sup.failed))
		}
	}
	if aud != nil {
		recs, lost := aud.finish(os.Getpid())
		var unmatched, dropped int
		res.Denials, unmatched, dropped = mergeAudit(res.Denials, recs)
		res.DenialsDropped += dropped
		res.Audited = true
		if lost {
			res.Warnings = append(res.Warnings, "some of the kernel's audit records of this run were lost: the denials listed may be incomplete")
		}
		if unmatched > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the kernel's audit log shows %d denial(s) wrun did not see; they name only a directory (ausearch -m LANDLOCK_ACCESS shows them)", unmatched))
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

// linger serves what a --keep-background run left: its standard streams
// become /dev/null (whoever reads the run's output sees it end), it reaps
// every process that ends (wrun is their subreaper) until none is left,
// then stops the mediation.
func linger(sup *supervisor, filters int) {
	// No check after the run follows: from now on every protected name
	// is refused when it is made.
	sup.guard.strict.Store(true)
	if null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0); err == nil {
		for fd := 0; fd <= 2; fd++ {
			_ = unix.Dup3(null, fd, 0)
		}
		unix.Close(null)
	}
	for {
		kids := sandboxChildren(filters)
		if len(kids) == 0 {
			break
		}
		// One at a time: an orphan that arrives meanwhile is found on
		// the next round; a child of wrun's own is never waited for.
		var ws unix.WaitStatus
		if _, err := unix.Wait4(kids[0], &ws, unix.WALL, nil); err != nil && err != unix.EINTR && err != unix.ECHILD {
			break
		}
	}
	sup.stop()
	sup.dev.cleanup()
	for _, pr := range sup.pl.Sweep {
		_, _ = sweep(pr) // what a kept process made before strict, if anything
	}
}

type startResult struct {
	pid      int
	listener int
	filters  int
	launch   int
	err      error
}

// launch runs on its own OS thread, which it locks and never unlocks:
// the restriction is applied to this thread alone, the command is forked
// from it (so inherits it), and the thread lives until the command exits,
// which PR_SET_PDEATHSIG needs (the command's death signal fires when
// the thread that forked it ends). The caller builds the ruleset
// meanwhile and sends it on ready. With a relay the child is the relay's
// monitor, and each of its stops is sent on stops; the caller handles
// them on a thread of its own (this one may not signal wrun).
func launch(pl *Plan, ready <-chan *ruleset, bound <-chan procBound, c sandbox.Command, relay *ptyrelay.Relay, started chan<- startResult, stops chan<- syscall.Signal, done chan<- syscall.WaitStatus) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		// The main thread is the one a signal to wrun's process finds:
		// it must never share the command's domain. Another goroutine,
		// on another thread, launches instead.
		runtime.UnlockOSThread()
		go launch(pl, ready, bound, c, relay, started, stops, done)
		return
	}
	interactive := relay != nil
	// What needs no ruleset is done while the caller builds it: the
	// first steps of the restriction, the filter's assembly.
	r := launchRestriction{auditLog: pl.audit, seccomp: pl.Features.Seccomp, spec: pl.seccomp,
		listen: pl.mediate, waitKillable: pl.Features.WaitKillable}
	prep, err := prepareLaunch(r)
	rs, ok := <-ready
	if !ok {
		return // the caller failed before the sandbox was ready
	}
	if err != nil {
		started <- startResult{listener: -1, err: &sandbox.StartError{Code: 125, Err: err}}
		return
	}
	r.rs = rs
	listener, filters, err := applyLaunch(r, prep)
	if err != nil {
		if !errors.Is(err, errListenerTaken) {
			err = &sandbox.StartError{Code: 125, Err: err}
		}
		started <- startResult{listener: -1, err: err}
		return
	}
	p := pl.Policy
	path, err := lookPath(c.Argv[0], p.Env, p.Cwd)
	if err != nil {
		if listener >= 0 {
			unix.Close(listener)
		}
		started <- startResult{listener: -1, err: err}
		return
	}
	// syscall.ForkExec rather than os/exec: os/exec forks a throwaway
	// child the first time it runs, to learn whether pidfds work, and
	// wrun waits for its child with wait4 on this thread anyway.
	// With a relay, each descriptor on the user's terminal is the inner
	// terminal instead (Replace), and the program is the monitor, which
	// leads a session of its own with it (Apply) and runs path.
	files := []uintptr{relay.Replace(c.Stdin).Fd(), relay.Replace(c.Stdout).Fd(), relay.Replace(c.Stderr).Fd()}
	for _, f := range c.ExtraFiles { // the only other descriptors the child gets
		files = append(files, relay.Replace(f).Fd())
	}
	sys := &syscall.SysProcAttr{Setsid: detach(interactive, c), Setpgid: !interactive && !detach(interactive, c), Pdeathsig: syscall.SIGKILL}
	relay.Apply(sys)
	prog, argv := relay.Command("/proc/self/exe", path, c.Argv, len(files))
	restore := (<-bound).apply()
	pid, err := syscall.ForkExec(prog, argv, &syscall.ProcAttr{Dir: p.Cwd, Env: p.Env, Files: files, Sys: sys})
	restore()
	runtime.KeepAlive(c)
	if err != nil {
		if listener >= 0 {
			unix.Close(listener)
		}
		code := 126
		if errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		err = explainStart(c.Argv[0], err)
		if interactive {
			code, err = 125, fmt.Errorf("starting the pty relay's monitor (wrun itself, inside the sandbox): %w", err)
		}
		started <- startResult{listener: -1, err: &sandbox.StartError{Code: code, Err: err}}
		return
	}
	started <- startResult{pid: pid, listener: listener, filters: filters, launch: unix.Gettid()}
	// Stops are reported only with a relay: a run without one never
	// stops wrun.
	opts := 0
	if interactive {
		opts = syscall.WUNTRACED
	}
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, opts, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err == nil && ws.Stopped() {
			stops <- ws.StopSignal()
			continue
		}
		break
	}
	done <- ws
}

// waitEnd waits for the child's end, taking the stops reported meanwhile.
func waitEnd(done <-chan syscall.WaitStatus, stops <-chan syscall.Signal) {
	for {
		select {
		case <-done:
			return
		case <-stops:
		}
	}
}

// terminalOf reports, for a path, whether it is the terminal f is open on
// (the same device, however it is named; never /dev/tty, which is the
// caller's controlling terminal, whatever that is). f is read through
// SyscallConn: Fd would make the user's terminal blocking for the shell
// too, which shares its file description.
func terminalOf(f *os.File) func(path string) bool {
	none := func(string) bool { return false }
	rc, err := f.SyscallConn()
	if err != nil {
		return none
	}
	var dev uint32
	if err := rc.Control(func(fd uintptr) { dev, err = unix.IoctlGetUint32(int(fd), unix.TIOCGDEV) }); err != nil {
		return none
	}
	if err != nil {
		return none
	}
	return func(path string) bool {
		if !strings.HasPrefix(path, "/dev/") {
			return false
		}
		var st unix.Stat_t
		return unix.Stat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFCHR &&
			unix.Major(st.Rdev) == unix.Major(uint64(dev)) && unix.Minor(st.Rdev) == unix.Minor(uint64(dev))
	}
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
// group wrun signals. A command given a terminal that is not interactive
// (a terminal on stdout only, or wrun in the background) stays in wrun's
// session, in a process group of its own: it holds that terminal anyway.
// An interactive one has a session of its own, the relay's.
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

// children lists wrun's direct children (reparented orphans included).
// sandboxChildren are wrun's children in the sandbox: those with at least
// the command's seccomp filters (filters), which no process sheds. A
// process wrun had before the run (its parent's, inherited by an exec)
// is not one of them. Without a filter to tell them apart, every child.
func sandboxChildren(filters int) []int {
	kids := children()
	if filters <= 0 {
		return kids
	}
	out := kids[:0]
	for _, k := range kids {
		if filterCount(k) >= filters {
			out = append(out, k)
		}
	}
	return out
}

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

// sandboxProcesses is how many tasks (processes and threads) the command
// may add to those its user already runs: RLIMIT_NPROC counts every task
// of the user, threads included.
const sandboxProcesses = 4096

// procBound is the RLIMIT_NPROC the command starts with, if any.
type procBound struct {
	set bool
	lim unix.Rlimit
}

// processBound bounds the command's tasks: the user's current count plus
// sandboxProcesses, where that is lower than the limit wrun has. The
// kernel exempts root's processes from RLIMIT_NPROC (docs/linux.md,
// Limits): nothing then.
func processBound() procBound {
	uid := os.Getuid()
	var cur unix.Rlimit
	if uid == 0 || unix.Getrlimit(unix.RLIMIT_NPROC, &cur) != nil {
		return procBound{}
	}
	n, ok := userTasks(uid)
	if !ok {
		return procBound{}
	}
	want := n + sandboxProcesses
	if cur.Cur != unix.RLIM_INFINITY && cur.Cur <= want {
		return procBound{}
	}
	return procBound{set: true, lim: unix.Rlimit{Cur: want, Max: cur.Max}}
}

// userTasks counts the tasks of uid, threads included, as RLIMIT_NPROC
// does: procfs gives a process's task directory the owner of the process
// and a link count of two plus its threads (proc_task_getattr). Counting
// processes alone left a user whose programs run many threads (a JVM, a
// browser) with a bound below what it already had: every fork of the
// command then failed with EAGAIN.
func userTasks(uid int) (uint64, bool) {
	proc, err := os.Open("/proc")
	if err != nil {
		return 0, false
	}
	defer proc.Close()
	names, err := proc.Readdirnames(-1)
	if err != nil {
		return 0, false
	}
	fd := int(proc.Fd())
	var n uint64
	for _, name := range names {
		if c := name[0]; c < '0' || c > '9' {
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(fd, name+"/task", &st, 0) != nil || int(st.Uid) != uid {
			continue
		}
		if st.Nlink > 2 {
			n += uint64(st.Nlink) - 2
		} else {
			n++
		}
	}
	return n, true
}

// apply sets the bound for the fork (the limit is the whole process's,
// and the child inherits it) and returns what puts wrun's back. Both run
// on another thread than the caller: the launch thread holds the
// command's filter by then, which refuses every change of RLIMIT_NPROC
// (filterRules), and a goroutine locked to its thread shares that thread
// with no other.
func (b procBound) apply() func() {
	if !b.set {
		return func() {}
	}
	elsewhere := func(f func()) {
		done := make(chan struct{})
		go func() { f(); close(done) }()
		<-done
	}
	var old unix.Rlimit
	ok := false
	elsewhere(func() {
		ok = unix.Getrlimit(unix.RLIMIT_NPROC, &old) == nil && unix.Setrlimit(unix.RLIMIT_NPROC, &b.lim) == nil
	})
	if !ok {
		return func() {}
	}
	return func() { elsewhere(func() { _ = unix.Setrlimit(unix.RLIMIT_NPROC, &old) }) }
}

// killLeftovers ends every process the command left behind: its process
// group (if it has its own), then, repeatedly, every child reparented to
// wrun (a subreaper), including ones that called setsid. It returns how
// many it ended. A child wrun had before the run (fewer filters than the
// command's) is not the command's: it is left alone.
func killLeftovers(pgid, filters int) int {
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
		kids := sandboxChildren(filters)
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

//go:build darwin

package darwin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/internal/envlist"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// logTool reads the unified log; by absolute path, as sandbox-exec.
const logTool = "/usr/bin/log"

// exitSandboxApply is sandbox-exec's status when it cannot apply a
// profile (EX_OSERR), as inside another Seatbelt sandbox.
const exitSandboxApply = 71

// How long the system log gets: to attach before the command starts, and
// to show the reports still on their way once it has ended (until none
// has come for logQuiet, at most logDrain).
const (
	logReady = 2 * time.Second
	logQuiet = 150 * time.Millisecond
	logDrain = time.Second
)

// InSandbox reports whether this process already runs inside a Seatbelt
// sandbox, where no other profile can be applied ("sandbox_apply:
// Operation not permitted"). It asks libsystem_sandbox; only if that
// question fails does it apply the most permissive profile to
// /usr/bin/true, which starts sandbox-exec. An error means neither
// could tell.
func InSandbox() (bool, error) {
	switch sandboxCheck() {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	var stderr bytes.Buffer
	cmd := exec.Command(SandboxExec, "-p", "(version 1)(allow default)", "/usr/bin/true")
	cmd.Stderr = &stderr
	cmd.Env = []string{}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return false, nil
	case errors.As(err, &ee) && (ee.ExitCode() == exitSandboxApply || strings.Contains(stderr.String(), "sandbox_apply")):
		return true, nil
	}
	return false, fmt.Errorf("running %s: %v: %s", SandboxExec, err, strings.TrimSpace(stderr.String()))
}

// osBuild is this Mac's build of macOS (kern.osversion, "24A335"): the
// compile check is kept per build.
func osBuild() string {
	v, err := unix.Sysctl("kern.osversion")
	if err != nil {
		return "unknown"
	}
	return v
}

// Prepare plans p for this Mac: a fresh run id, the profile with paths
// resolved as the sandbox will see them, and, inside an enclosing Seatbelt
// sandbox, the decision whether the command may run under it (Nest).
// stateDir is wrun's state directory ("" for none), where the profile
// shapes sandbox-exec accepted are recorded: each shape is compiled once
// per macOS build, not once per run.
func Prepare(p *policy.Policy, o sandbox.Options, stateDir string) (*Plan, error) {
	if _, err := os.Stat(SandboxExec); err != nil {
		return nil, fmt.Errorf("%s is missing: wrun cannot sandbox on this Mac: %w", SandboxExec, err)
	}
	id, err := NewRunID()
	if err != nil {
		return nil, err
	}
	settled, skipped, err := Settle(Adapt(p, UserCacheDir(os.Getenv("TMPDIR"))), os.Lstat)
	if err != nil {
		return nil, err
	}
	pl, err := NewPlan(settled, o, id, ResolveExisting)
	if err != nil {
		return nil, err
	}
	if len(skipped) > 0 {
		pl.Notes = append(pl.Notes, "no rule for what is missing or reached through a symbolic link: "+strings.Join(skipped, ", "))
	}
	nested, err := InSandbox()
	if err != nil {
		return nil, err
	}
	if nested {
		if err := Nest(pl, os.Getenv("WRUN_GRANT")); err != nil {
			return nil, err
		}
		return pl, nil
	}
	// A profile sandbox-exec rejects must stop the run before anything
	// starts (exit 125), rather than show as the command's own exit
	// status: a new shape is compiled once, on /usr/bin/true.
	key := ShapeKey(pl.Profile.Text, id, osBuild())
	if compiledBefore(stateDir, key) {
		return pl, nil
	}
	var stderr bytes.Buffer
	check := exec.Command(SandboxExec, pl.Profile.Argv([]string{"/usr/bin/true"})[1:]...)
	check.Env, check.Stderr = []string{}, &stderr
	if err := check.Run(); err != nil {
		return nil, fmt.Errorf("sandbox-exec rejected the generated profile (%v): %s", err, strings.TrimSpace(stderr.String()))
	}
	if err := recordCompiled(stateDir, key); err != nil {
		pl.Notes = append(pl.Notes, err.Error())
	}
	return pl, nil
}

// Doctor lists what this Mac offers wrun.
func Doctor() []sandbox.Feature {
	_, err := os.Stat(SandboxExec)
	out := []sandbox.Feature{{Name: "sandbox-exec", Available: err == nil, Detail: SandboxExec,
		Consequence: "wrun applies a generated Seatbelt profile to every command"}}
	if err != nil {
		out[0].Consequence = "wrun refuses to run: nothing here can enforce a grant"
		return out
	}
	nested, nerr := InSandbox()
	f := sandbox.Feature{Name: "outside_seatbelt", Available: nerr == nil && !nested, Detail: "sandbox_check of wrun itself",
		Consequence: "wrun can apply its own profile"}
	if nested {
		f.Consequence = "wrun runs inside a Seatbelt sandbox: a command runs only if its grant is at least as wide as the enclosing one, under the enclosing profile"
	} else if nerr != nil {
		f.Detail, f.Consequence = nerr.Error(), "wrun cannot apply a profile here"
	}
	out = append(out, f)
	_, lerr := os.Stat(logTool)
	return append(out, sandbox.Feature{Name: "log_stream", Available: lerr == nil, Detail: logTool + " stream --style ndjson",
		Consequence: "denials are read from the system log when it attaches before the command starts; otherwise inferred from output"})
}

// MarkInheritedFDsCloseOnExec marks every descriptor above 2 that wrun
// inherited close-on-exec, so that none reaches a child.
func MarkInheritedFDsCloseOnExec() error {
	var lim unix.Rlimit
	limit := 4096
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Cur < uint64(limit) {
		limit = int(lim.Cur)
	}
	for fd := 3; fd < limit; fd++ {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC); err != nil {
			return fmt.Errorf("marking descriptor %d close-on-exec: %w", fd, err)
		}
	}
	return nil
}

// logStream is a running `log stream` and its reader.
type logStream struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	*logReader
}

// startLog starts `log stream` on the run's reports; it does not wait for
// it (ready does).
func startLog(runID string) (*logStream, error) {
	if _, err := os.Stat(logTool); err != nil {
		return nil, fmt.Errorf("%s is missing", logTool)
	}
	ls := &logStream{logReader: newLogReader(Tag(runID))}
	ls.cmd = exec.Command(logTool, "stream", "--style", "ndjson", "--level", "default", "--predicate", LogPredicate(runID))
	ls.cmd.Env = []string{}
	out, err := ls.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	ls.cmd.Stderr = &ls.stderr
	ls.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := ls.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting log stream: %w", err)
	}
	go ls.read(out)
	return ls, nil
}

// attach waits for the stream to attach; on failure it stops it and says
// why denials will be inferred instead.
func (ls *logStream) attach() error {
	if err := ls.ready(logReady); err != nil {
		ls.stop()
		if s := strings.TrimSpace(ls.stderr.String()); s != "" {
			err = fmt.Errorf("%w (log stream: %s)", err, s)
		}
		return err
	}
	return nil
}

func (ls *logStream) stop() {
	if ls.cmd.Process != nil {
		_ = unix.Kill(-ls.cmd.Process.Pid, unix.SIGTERM)
	}
	select {
	case <-ls.done:
	case <-time.After(2 * time.Second):
		_ = unix.Kill(-ls.cmd.Process.Pid, unix.SIGKILL)
		<-ls.done
	}
	_ = ls.cmd.Wait()
}

// create makes a path the policy says wrun creates, reaching it from
// beneath without following a symbolic link (a planted link must not
// redirect the creation).
func create(path, beneath string, dir bool) error {
	if beneath == "" {
		beneath = filepath.Dir(path)
	}
	rel, err := filepath.Rel(beneath, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("creating %s: not beneath %s", path, beneath)
	}
	cur := beneath
	parts := strings.Split(rel, string(filepath.Separator))
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		switch {
		case err == nil && fi.Mode()&os.ModeSymlink != 0:
			return fmt.Errorf("creating %s: %s is a symbolic link", path, cur)
		case err == nil:
			continue
		case !errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("creating %s: %w", path, err)
		}
		last := i == len(parts)-1
		if !last || dir {
			if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("creating %s: %w", path, err)
			}
			continue
		}
		fd, err := unix.Open(cur, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("creating %s: %w", path, err)
		}
		if err == nil {
			unix.Close(fd)
		}
	}
	return nil
}

// lookPath finds argv0 as the child's PATH would: a start error of 127
// when it is not found, 126 when it is not executable.
func lookPath(argv0 string, env []string) (string, error) {
	if strings.Contains(argv0, "/") {
		fi, err := os.Stat(argv0)
		switch {
		case err != nil:
			return "", &sandbox.StartError{Code: 127, Err: fmt.Errorf("%s: %w", argv0, err)}
		case fi.IsDir() || fi.Mode()&0o111 == 0:
			return "", &sandbox.StartError{Code: 126, Err: fmt.Errorf("%s: not executable", argv0)}
		}
		return argv0, nil
	}
	path, _ := envlist.Lookup(env, "PATH")
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		c := filepath.Join(dir, argv0)
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return c, nil
		}
	}
	return "", &sandbox.StartError{Code: 127, Err: fmt.Errorf("%s: command not found", argv0)}
}

// Run runs the command under the plan's profile (or, nested, under the
// enclosing sandbox) and returns how it ended, with the denials the
// system log showed for this run.
func Run(pl *Plan, c sandbox.Command) (sandbox.Result, error) {
	var res sandbox.Result
	if len(c.Argv) == 0 {
		return res, &sandbox.StartError{Code: 125, Err: errors.New("no command")}
	}
	p := pl.Policy
	// The log stream starts first: it attaches while the paths are made.
	var ls *logStream
	if !pl.Nested && !pl.Options.NoObserve {
		var err error
		if ls, err = startLog(pl.RunID); err != nil {
			res.Warnings = append(res.Warnings, "denials are inferred from the command's output: "+err.Error())
		}
	}
	fail := func(err error) (sandbox.Result, error) {
		if ls != nil {
			ls.stop()
		}
		return res, err
	}
	for _, r := range p.Rules {
		if r.Create != policy.CreateNone {
			if err := create(r.Path, r.Beneath, r.Create == policy.CreateDir); err != nil {
				return fail(&sandbox.StartError{Code: 125, Err: err})
			}
		}
	}
	for _, pr := range p.Protected {
		if pr.Create != policy.CreateNone {
			if err := create(pr.Path, pr.Within, pr.Create == policy.CreateDir); err != nil {
				return fail(&sandbox.StartError{Code: 125, Err: err})
			}
		}
	}
	path, err := lookPath(c.Argv[0], p.Env)
	if err != nil {
		return fail(err)
	}
	argv := c.Argv
	if !pl.Nested {
		argv, path = pl.Profile.Argv(c.Argv), SandboxExec
	}
	if ls != nil {
		if err := ls.attach(); err != nil {
			res.Warnings = append(res.Warnings, "denials are inferred from the command's output: "+err.Error())
			ls = nil
		}
	}
	at := place(isForeground(c.Stdin), holdsTerminal(c))
	cmd := &exec.Cmd{Path: path, Args: argv, Env: p.Env, Dir: p.Cwd,
		Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr, ExtraFiles: c.ExtraFiles,
		SysProcAttr: &syscall.SysProcAttr{Setsid: at.setsid, Setpgid: at.setpgid}}
	if err := cmd.Start(); err != nil {
		return fail(&sandbox.StartError{Code: 125, Err: fmt.Errorf("starting %s: %w", path, err)})
	}
	pid := cmd.Process.Pid
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan string, 1)
	go forward(ctx, c.Signals, pid, at, pl.Options.KillAfter, ended)
	err = cmd.Wait()
	cancel()
	select {
	case w := <-ended:
		res.Warnings = append(res.Warnings, w)
	default:
	}
	if !at.interactive && !pl.Options.KeepBackground {
		if unix.Kill(-pid, 0) == nil {
			_ = unix.Kill(-pid, unix.SIGKILL)
			res.Killed++
		}
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			res.Signal = ws.Signal()
			res.ExitCode = 128 + int(ws.Signal())
		} else {
			res.ExitCode = ws.ExitStatus()
		}
	default:
		if ls != nil {
			ls.stop()
		}
		return res, fmt.Errorf("waiting for the command: %w", err)
	}
	if ls != nil {
		if !ls.drain(logQuiet, logDrain) {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the system log was still showing this run's denials %s after the command ended; later ones are missing", logDrain))
		}
		ls.stop()
		res.Observed = true
		res.Denials, res.DenialsDropped = denials(p, ls.taken())
	}
	return res, nil
}

// denials turns the run's reports into denial records, with paths given
// back as the policy names them.
func denials(p *policy.Policy, reports []Report) ([]sandbox.Denial, int) {
	var paths []string
	for _, r := range p.Rules {
		paths = append(paths, r.Path)
	}
	for _, h := range p.Hidden {
		paths = append(paths, h.Path)
	}
	for _, pr := range p.Protected {
		paths = append(paths, pr.Path)
	}
	var log sandbox.DenialLog
	for _, r := range reports {
		d := r.Denial
		if d.Path != "" {
			d.Path = Uncanonical(d.Path, paths, ResolveExisting)
		}
		if after, ok := strings.CutPrefix(d.Addr, "unix:"); ok {
			d.Addr = "unix:" + Uncanonical(after, paths, ResolveExisting)
		}
		log.Add(d)
	}
	return log.Denials(), log.Dropped()
}

// forward delivers the caller's signals to the command as its placement
// says, and after a terminating one gives it killAfter before killing it
// (its process group, unless it shares wrun's); it says so on ended.
func forward(ctx context.Context, sigs <-chan os.Signal, pid int, at placement, killAfter time.Duration, ended chan<- string) {
	if sigs == nil {
		return
	}
	var kill <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-kill:
			_ = unix.Kill(at.killTo(pid), unix.SIGKILL)
			ended <- fmt.Sprintf("the command did not end within %s of the signal (--kill-after): it was killed", killAfter)
			return
		case s := <-sigs:
			sig, ok := s.(syscall.Signal)
			if !ok {
				continue
			}
			if to := at.forwardTo(pid, sig); to != 0 {
				_ = unix.Kill(to, sig)
			}
			if (sig == unix.SIGTERM || sig == unix.SIGINT || sig == unix.SIGHUP) && killAfter > 0 && kill == nil {
				kill = time.After(killAfter)
			}
		}
	}
}

// isForeground reports whether stdin is a terminal whose foreground
// process group is wrun's: an interactive run.
func isForeground(stdin *os.File) bool {
	if stdin == nil {
		return false
	}
	pgrp, err := unix.IoctlGetInt(int(stdin.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// holdsTerminal reports whether any descriptor the command gets is a
// terminal.
func holdsTerminal(c sandbox.Command) bool {
	for _, f := range append([]*os.File{c.Stdin, c.Stdout, c.Stderr}, c.ExtraFiles...) {
		if f == nil {
			continue
		}
		if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TIOCGETA); err == nil {
			return true
		}
	}
	return false
}

// Run runs the command under the plan (see Run).
func (pl *Plan) Run(c sandbox.Command) (sandbox.Result, error) { return Run(pl, c) }

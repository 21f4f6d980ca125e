//go:build darwin

package darwin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// InSandbox reports whether this process already runs inside a Seatbelt
// sandbox: applying the most permissive profile fails there
// ("sandbox_apply: Operation not permitted"). An error means sandbox-exec
// could not be run at all.
func InSandbox() (bool, error) {
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

// Prepare plans p for this Mac: a fresh run id, the profile with paths
// resolved as the sandbox will see them (macOS's additions made, Adapt),
// and, inside an enclosing Seatbelt sandbox, the decision whether the
// command may run under it (Nest).
func Prepare(p *policy.Policy, o sandbox.Options) (*Plan, error) {
	if _, err := os.Stat(SandboxExec); err != nil {
		return nil, fmt.Errorf("%s is missing: wrun cannot sandbox on this Mac: %w", SandboxExec, err)
	}
	id, err := NewRunID()
	if err != nil {
		return nil, err
	}
	settled, skipped, err := Settle(p, os.Lstat)
	if err != nil {
		return nil, err
	}
	pl, err := NewPlan(Adapt(settled, UserCacheDir(os.Getenv("TMPDIR"))), o, id, ResolveExisting)
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
	// The profile is compiled once here, on /usr/bin/true: a profile
	// sandbox-exec rejects stops the run before anything starts (exit
	// 125), rather than showing as the command's own exit status.
	var stderr bytes.Buffer
	check := exec.Command(SandboxExec, pl.Profile.Argv([]string{"/usr/bin/true"})[1:]...)
	check.Env, check.Stderr = []string{}, &stderr
	if err := check.Run(); err != nil {
		return nil, fmt.Errorf("sandbox-exec rejected the generated profile (%v): %s", err, strings.TrimSpace(stderr.String()))
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
	f := sandbox.Feature{Name: "outside_seatbelt", Available: nerr == nil && !nested, Detail: "sandbox_apply of a permissive profile",
		Consequence: "wrun can apply its own profile"}
	if nested {
		f.Consequence = "wrun runs inside a Seatbelt sandbox: a command runs only if its grant is at least as wide as the enclosing one, under the enclosing profile"
	} else if nerr != nil {
		f.Detail, f.Consequence = nerr.Error(), "wrun cannot apply a profile here"
	}
	out = append(out, f)
	_, lerr := os.Stat(logTool)
	return append(out, sandbox.Feature{Name: "log_stream", Available: lerr == nil, Detail: logTool + " stream --style ndjson",
		Consequence: "denials are read from the system log when it shows them before the command starts; otherwise inferred from output"})
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

// logReader follows the system log for one run's reports.
type logReader struct {
	cmd     *exec.Cmd
	tag     string
	mu      sync.Mutex
	reports []Report
	seen    map[string]bool // markers seen
	done    chan struct{}
}

// startLog starts `log stream` on the run's tag and confirms it shows the
// run's reports: a probe under a profile that denies one read, tagged
// "TAG-ready", must appear before the command starts. An error says why
// denials will be inferred instead.
func startLog(runID string) (*logReader, error) {
	tag := Tag(runID)
	if _, err := os.Stat(logTool); err != nil {
		return nil, fmt.Errorf("%s is missing", logTool)
	}
	cmd := exec.Command(logTool, "stream", "--style", "ndjson", "--level", "default",
		"--predicate", LogPredicate(runID))
	cmd.Env = []string{}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting log stream: %w", err)
	}
	lr := &logReader{cmd: cmd, tag: tag, seen: map[string]bool{}, done: make(chan struct{})}
	go lr.read(out)
	if err := lr.marker("ready", 3*time.Second); err != nil {
		lr.stop()
		if s := strings.TrimSpace(stderr.String()); s != "" {
			err = fmt.Errorf("%w (log stream: %s)", err, s)
		}
		return nil, err
	}
	return lr, nil
}

func (lr *logReader) read(r io.Reader) {
	defer close(lr.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		rep, ok := ParseLogLine(sc.Bytes())
		if !ok {
			continue
		}
		lr.mu.Lock()
		switch rep.Message {
		case lr.tag:
			if len(lr.reports) < 4*sandbox.MaxDenials {
				lr.reports = append(lr.reports, rep)
			}
		case lr.tag + "-ready", lr.tag + "-drain":
			lr.seen[rep.Message] = true
		}
		lr.mu.Unlock()
	}
}

// marker runs a probe whose denial is tagged TAG-kind and waits until the
// log shows it: everything reported before it has been read.
func (lr *logReader) marker(kind string, within time.Duration) error {
	msg := lr.tag + "-" + kind
	profile := `(version 1)(allow default)(deny file-read-data (literal "/usr/bin/true") (with message "` + msg + `"))`
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		probe := exec.Command(SandboxExec, "-p", profile, "/bin/cat", "/usr/bin/true")
		probe.Env = []string{}
		_ = probe.Run() // refused by design
		for i := 0; i < 10; i++ {
			lr.mu.Lock()
			ok := lr.seen[msg]
			lr.mu.Unlock()
			if ok {
				return nil
			}
			select {
			case <-lr.done:
				return errors.New("log stream ended before it showed wrun's probe (reading the system log may need privileges wrun lacks)")
			case <-time.After(25 * time.Millisecond):
			}
		}
	}
	return fmt.Errorf("the system log did not show wrun's probe within %s", within)
}

func (lr *logReader) stop() {
	if lr.cmd.Process != nil {
		_ = unix.Kill(-lr.cmd.Process.Pid, unix.SIGTERM)
	}
	select {
	case <-lr.done:
	case <-time.After(2 * time.Second):
		_ = unix.Kill(-lr.cmd.Process.Pid, unix.SIGKILL)
		<-lr.done
	}
	_ = lr.cmd.Wait()
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
	for _, r := range p.Rules {
		if r.Create != policy.CreateNone {
			if err := create(r.Path, r.Beneath, r.Create == policy.CreateDir); err != nil {
				return res, &sandbox.StartError{Code: 125, Err: err}
			}
		}
	}
	for _, pr := range p.Protected {
		if pr.Create != policy.CreateNone {
			if err := create(pr.Path, pr.Within, pr.Create == policy.CreateDir); err != nil {
				return res, &sandbox.StartError{Code: 125, Err: err}
			}
		}
	}
	if _, err := lookPath(c.Argv[0], p.Env); err != nil {
		return res, err
	}
	var lr *logReader
	if !pl.Nested && !pl.Options.NoObserve {
		var err error
		if lr, err = startLog(pl.RunID); err != nil {
			res.Warnings = append(res.Warnings, "denials are inferred from the command's output: "+err.Error())
		}
	}
	argv := pl.Profile.Argv(c.Argv)
	if pl.Nested {
		argv = c.Argv
	}
	path := argv[0]
	if pl.Nested {
		var err error
		if path, err = lookPath(argv[0], p.Env); err != nil {
			return res, err
		}
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: p.Env, Dir: p.Cwd,
		Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr, ExtraFiles: c.ExtraFiles}
	interactive := isForeground(c.Stdin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !interactive}
	if err := cmd.Start(); err != nil {
		if lr != nil {
			lr.stop()
		}
		return res, &sandbox.StartError{Code: 125, Err: fmt.Errorf("starting %s: %w", path, err)}
	}
	pgid := cmd.Process.Pid
	ctx, cancel := context.WithCancel(context.Background())
	go forward(ctx, c.Signals, cmd.Process, pgid, interactive, pl.Options.KillAfter)
	err := cmd.Wait()
	cancel()
	if !interactive && !pl.Options.KeepBackground {
		if unix.Kill(-pgid, 0) == nil {
			_ = unix.Kill(-pgid, unix.SIGKILL)
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
		return res, fmt.Errorf("waiting for the command: %w", err)
	}
	if lr != nil {
		if err := lr.marker("drain", 2*time.Second); err != nil {
			res.Warnings = append(res.Warnings, "some denials may be missing: "+err.Error())
		}
		lr.stop()
		res.Observed = true
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
		lr.mu.Lock()
		for _, r := range lr.reports {
			d := r.Denial
			if d.Path != "" {
				d.Path = Uncanonical(d.Path, paths, ResolveExisting)
			}
			if after, ok := strings.CutPrefix(d.Addr, "unix:"); ok {
				d.Addr = "unix:" + Uncanonical(after, paths, ResolveExisting)
			}
			log.Add(d)
		}
		lr.mu.Unlock()
		res.Denials, res.DenialsDropped = log.Denials(), log.Dropped()
	}
	return res, nil
}

// forward delivers the caller's signals to the command (its process group
// unless it shares wrun's, on a terminal), and after a terminating one
// gives it killAfter before killing the group.
func forward(ctx context.Context, sigs <-chan os.Signal, proc *os.Process, pgid int, interactive bool, killAfter time.Duration) {
	if sigs == nil {
		return
	}
	var kill <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-kill:
			_ = unix.Kill(-pgid, unix.SIGKILL)
			_ = proc.Kill()
			return
		case s := <-sigs:
			sig, ok := s.(syscall.Signal)
			if !ok {
				continue
			}
			if !interactive {
				_ = unix.Kill(-pgid, sig)
			}
			if (sig == unix.SIGTERM || sig == unix.SIGINT || sig == unix.SIGHUP) && killAfter > 0 && kill == nil {
				kill = time.After(killAfter)
			}
		}
	}
}

// isForeground reports whether stdin is a terminal whose foreground
// process group is wrun's.
func isForeground(stdin *os.File) bool {
	if stdin == nil {
		return false
	}
	pgrp, err := unix.IoctlGetInt(int(stdin.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// Run runs the command under the plan (see Run).
func (pl *Plan) Run(c sandbox.Command) (sandbox.Result, error) { return Run(pl, c) }

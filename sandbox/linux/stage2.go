//go:build linux

package linux

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// The stage. Wherever wrun may create namespaces (as root, or as a user
// through a user namespace) the command does not run as a child of wrun
// but of a second process: wrun re-executes itself as the stage, cloned
// into new PID, IPC and mount namespaces (and a user namespace when wrun
// is not root). The stage is the init (PID 1) of the sandbox:
//
//   - in its mount namespace it makes the file system read-only and
//     nosuid (the writable paths of the plan bound back read-write), binds
//     the protected paths read-only over themselves and mounts a /proc of
//     the new PID namespace, so the child cannot change metadata outside
//     its write scope (Landlock has no hook for chmod, chown, utimes or
//     xattrs) and sees no process outside the sandbox;
//   - it restricts one locked thread of its own exactly as the launch
//     thread does (restrict) and forks the command from it, so the command
//     is never PID 1 (which ignores signals it has no handler for);
//   - it reaps every process of the sandbox, forwards the signals wrun
//     sends it, and reports the command's status to wrun; then it exits,
//     and the kernel kills whatever is left in the PID namespace. When
//     wrun dies the stage dies with it (PR_SET_PDEATHSIG), and so does
//     everything in the sandbox.
//
// wrun itself is never restricted and shares no Landlock domain with the
// command, which cannot see it (another PID namespace) nor signal it: what
// wrun does after the run cannot be stopped by the child. The IPC
// namespace gives the child SysV IPC and POSIX message queues of its own.
// It costs one more exec of wrun per run.

// Stage2Arg0 is argv[0] of the second stage; cmd/wrun hands control to
// Stage2 when it sees it.
const Stage2Arg0 = "wrun:stage2"

// stage2Spec is everything the stage needs, sent through a pipe: the
// restriction the launch thread would apply, the view of the file system,
// and the command.
// specWarmup names every struct type of a stage2Spec once
// (TestSpecWarmupCoversTheSpec).
const specWarmup = `{"restriction":{"mounts":[{"path":""}],"rules":[{"Path":""}],"filter":{}},"writable":[{"Path":""}],"views":[{"path":"","keep":[{"Path":""}]}]}`

type stage2Spec struct {
	Restriction restriction `json:"restriction"`
	// Writable are the plan's writable paths, bound back read-write over
	// the read-only view (opened as their Landlock rules are).
	Writable []fsRule `json:"writable"`
	Argv     []string `json:"argv"`
	Env      []string `json:"env"`
	Cwd      string   `json:"cwd"`
	// ExtraFDs counts the descriptors the caller named for the command
	// (sandbox.Command.ExtraFiles): they arrive as 5, 6, ...
	ExtraFDs int `json:"extra_fds,omitempty"`
	// Interactive: the command shares the terminal's foreground process
	// group (it gets SIGINT and SIGQUIT from the terminal itself).
	Interactive bool `json:"interactive,omitempty"`
	// Detach: no descriptor the command gets is a terminal, so it leads
	// a session of its own, with no controlling terminal (detach).
	Detach bool `json:"detach,omitempty"`
	// KeepBackground: the stage stays, reaping, until the last process of
	// the sandbox has ended, rather than ending them with itself.
	KeepBackground bool `json:"keep_background,omitempty"`
	// AllowUnix are the sockets outside the sandbox the hands may connect
	// to (--allow-unix), when the restriction mediates.
	AllowUnix []string `json:"allow_unix,omitempty"`
	// Masks are the hidden paths the stage covers with an empty file or
	// directory the child can neither read nor list (maskHidden).
	Masks []string `json:"masks,omitempty"`
	// Views are the hidden directories covered, without Landlock, by a
	// tmpfs holding only the rules beneath them (makeHoleView), deepest
	// first.
	Views []holeView `json:"views,omitempty"`
	// RefuseAbstract: nothing scopes abstract UNIX addresses (no Landlock
	// ABI 6 scope, no network namespace of the stage's), so the hands
	// refuses to connect or send to one.
	RefuseAbstract bool `json:"refuse_abstract,omitempty"`
	// Ignored are the signals wrun's caller ignores (and wrun left
	// ignored): the stage ignores them too, so the command inherits them
	// ignored, as it would bare.
	Ignored []int `json:"ignored,omitempty"`
}

// The stage talks back over a SOCK_SEQPACKET socket: an optional
// stageListener message carrying the seccomp listener, then either a
// stageStartError message, or stageStarted and, when the command has
// ended, stageExited with its wait status.

// stageMsgKind is the first byte of a message from the second stage.
type stageMsgKind byte

const (
	// stageListener carries the seccomp listener as SCM_RIGHTS; it has no
	// body.
	stageListener stageMsgKind = 'L'
	// stageStartError carries a stage2Err as JSON: the command was not
	// executed.
	stageStartError stageMsgKind = 'E'
	// stageStarted: the command runs. No body.
	stageStarted stageMsgKind = 'S'
	// stageExited carries the command's wait status as JSON.
	stageExited stageMsgKind = 'X'
)

// stage2Err is why the second stage could not execute the command, and
// the exit status wrun reports for it.
type stage2Err struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
}

// stageMsg is one message from the second stage.
type stageMsg struct {
	Kind stageMsgKind
	// Err is set for stageStartError.
	Err stage2Err
	// Status is set for stageExited.
	Status syscall.WaitStatus
}

// encode is the message's bytes on the socket (without the descriptor a
// stageListener message carries beside them).
func (m stageMsg) encode() ([]byte, error) {
	switch m.Kind {
	case stageListener, stageStarted:
		return []byte{byte(m.Kind)}, nil
	case stageStartError:
		b, err := json.Marshal(m.Err)
		if err != nil {
			return nil, err
		}
		return append([]byte{byte(stageStartError)}, b...), nil
	case stageExited:
		b, err := json.Marshal(uint32(m.Status))
		if err != nil {
			return nil, err
		}
		return append([]byte{byte(stageExited)}, b...), nil
	}
	return nil, fmt.Errorf("second stage: unknown message kind %q", byte(m.Kind))
}

// decodeStageMsg reads a message encode wrote.
func decodeStageMsg(b []byte) (stageMsg, error) {
	if len(b) == 0 {
		return stageMsg{}, errors.New("second stage: empty message")
	}
	m := stageMsg{Kind: stageMsgKind(b[0])}
	switch m.Kind {
	case stageListener, stageStarted:
		if len(b) != 1 {
			return stageMsg{}, fmt.Errorf("second stage: %q message with a body", b[0])
		}
		return m, nil
	case stageExited:
		var st uint32
		if err := json.Unmarshal(b[1:], &st); err != nil {
			return stageMsg{}, fmt.Errorf("second stage: bad exit message: %w", err)
		}
		m.Status = syscall.WaitStatus(st)
		return m, nil
	case stageStartError:
		if err := json.Unmarshal(b[1:], &m.Err); err != nil {
			return stageMsg{}, fmt.Errorf("second stage: bad start error message: %w", err)
		}
		return m, nil
	}
	return stageMsg{}, fmt.Errorf("second stage: unknown message kind %q", b[0])
}

// serveStage is launch for plans that run through the stage: it hands the
// started stage sp the command's descriptors and the spec, serves the
// observer from the listener the stage passes up, and reports the
// command's start and, through done, its wait status. It runs on the
// locked thread that started the stage (stageThread).
func serveStage(sp *stageProc, r *stageReq) {
	pl, c, started, done := r.pl, r.c, r.started, r.done
	defer sp.close()
	fail := func(code int, err error) { started <- startResult{err: &sandbox.StartError{Code: code, Err: err}} }
	spec := stage2Spec{
		Restriction: *pl.restriction(r.auditLog),
		Writable:    pl.writable(),
		Masks:       pl.maskPaths(),
		Views:       pl.Views,
		Argv:        c.Argv, Env: pl.Policy.Env, Cwd: pl.Policy.Cwd,
		ExtraFDs:       len(c.ExtraFiles),
		Interactive:    r.interactive,
		Detach:         detach(r.interactive, c),
		KeepBackground: pl.Options.KeepBackground,
		AllowUnix:      pl.Policy.IPC.UnixSockets,
		Ignored:        ignoredSignals(),
	}
	// The stage makes the protected mounts itself, in the namespace it is
	// cloned into, before it restricts the launch thread.
	spec.Restriction.InMountNS = false
	spec.RefuseAbstract = !pl.netNS && !(spec.Restriction.Landlock && spec.Restriction.Scoped&llScopeAbstractUnix != 0)
	back := sp.back
	kill := sp.kill
	if err := sp.sendDescriptors(c); err != nil {
		kill()
		fail(125, fmt.Errorf("handing the stage the command's descriptors: %w", err))
		return
	}
	err := json.NewEncoder(sp.specW).Encode(spec)
	sp.specW.Close()
	sp.specW = nil
	if err != nil {
		kill()
		fail(125, fmt.Errorf("sending the sandbox to the stage: %w", err))
		return
	}
	var obs *observer
	running := false
	end := stageEnd{}
	for {
		buf := make([]byte, 4096)
		oob := make([]byte, unix.CmsgSpace(8))
		n, oobn, _, _, err := unix.Recvmsg(int(back.Fd()), buf, oob, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			break // end of file: the stage has ended (or closed its end)
		}
		msg, err := decodeStageMsg(buf[:n])
		if err != nil {
			kill()
			if running {
				end.err = err
				done <- end
			} else {
				fail(125, err)
			}
			return
		}
		switch msg.Kind {
		case stageListener:
			fds, perr := parseRightsN(oob[:oobn])
			if perr == nil {
				obs, perr = newObserver(fds[0], pl)
			}
			if perr == nil && len(fds) == 2 {
				obs.med = newMediator(fds[1])
			}
			if perr != nil {
				kill()
				fail(125, perr)
				return
			}
			go obs.run()
		case stageStartError:
			sp.wait()
			if obs != nil {
				obs.stop()
			}
			fail(msg.Err.Code, errors.New(msg.Err.Msg))
			return
		case stageStarted:
			running = true
			started <- startResult{pid: sp.pid, obs: obs}
		case stageExited:
			end.status, end.reported = msg.Status, true
			if pl.Options.KeepBackground {
				// The stage stays behind as the init of what runs on.
				done <- end
				return
			}
		}
	}
	// Every process of the sandbox has ended once the stage has: the kernel
	// kills the rest of a PID namespace when its init exits, and the
	// init's exit waits for them.
	end.stage = sp.wait()
	if !running {
		fail(125, fmt.Errorf("the sandbox's stage ended before starting the command (%s)", describeWait(end.stage)))
		return
	}
	done <- end
}

// stageEnd is how a run through the stage ended.
type stageEnd struct {
	// status is the command's wait status, as the stage reported it
	// (reported); otherwise the stage ended without reporting one.
	status   syscall.WaitStatus
	reported bool
	// stage is the stage's own wait status.
	stage syscall.WaitStatus
	err   error
}

// writable lists the plan's rules that give a write right, which the stage
// binds back read-write over the read-only view; a path beneath another
// one is covered by it. Devices need no binding (a read-only mount does
// not stop writes to a device), and rules that only read are left out.
func (pl *Plan) writable() []fsRule {
	const write = llWriteFile | llRemoveDir | llRemoveFile | llMakeChar | llMakeDir | llMakeReg |
		llMakeSock | llMakeFifo | llMakeBlock | llMakeSym | llRefer | llTruncate
	var out []fsRule
	for _, r := range pl.fsRules() {
		if r.Access&write == 0 || strings.HasPrefix(r.Path, "/dev/") {
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	kept := out[:0]
	for _, r := range out {
		if len(kept) > 0 && policy.Within(r.Path, kept[len(kept)-1].Path) {
			continue
		}
		kept = append(kept, r)
	}
	return kept
}

// userNSError is a failure to create the user namespace; Run falls back to
// carved rules on it.
type userNSError struct{ err error }

func (e *userNSError) Error() string {
	return "creating a user namespace for the sandbox: " + e.err.Error()
}

// Stage2 is the stage: the init of the sandbox's PID namespace. It makes
// the sandbox's view of the file system, restricts a locked thread of its
// own and forks the command from it, then reaps every process of the
// namespace, forwards the signals wrun sends it, and reports the
// command's status to wrun. It never returns.
func Stage2() {
	if len(os.Args) > 1 && os.Args[1] == handsArg {
		Hands()
	}
	runtime.LockOSThread()
	_ = MarkInheritedFDsCloseOnExec()
	const back = 4
	fail := func(code int, err error) {
		if b, merr := (stageMsg{Kind: stageStartError, Err: stage2Err{Code: code, Msg: err.Error()}}).encode(); merr == nil {
			_ = unix.Sendmsg(back, b, nil, nil, 0)
		}
		os.Exit(code)
	}
	send := func(m stageMsg, fds []int) error {
		b, err := m.encode()
		if err != nil {
			return err
		}
		var oob []byte
		if len(fds) > 0 {
			oob = unix.UnixRights(fds...)
		}
		return unix.Sendmsg(back, b, oob, nil, 0)
	}
	// A name to find it by (ps shows it as PID 1 of the sandbox, and in
	// the host's process list as the parent of what runs in it).
	_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&[]byte("wrun-sandbox\x00")[0])), 0, 0, 0)
	// The command shares a Landlock domain with the launch thread below:
	// nothing of the stage may be readable to it through /proc.
	if err := makeUndumpable(); err != nil {
		fail(125, err)
	}
	// Signals for the command, registered while the stage waits for the
	// spec and makes the view (os/signal hands each signal to a thread of
	// its own: about 2 ms for all of them); the command starts only once
	// they are (sigReady). wrun forwards what it receives to the stage,
	// which passes them on. In a terminal, SIGINT and SIGQUIT reach the
	// command from the terminal itself.
	//
	// Every other signal sent to the stage is dropped. The launch thread
	// is in the command's Landlock domain, so the command may signal it,
	// and the kernel delivers to the init of a PID namespace every signal
	// it has a handler for, which the Go runtime installs for all of them:
	// a SIGSEGV, SIGABRT or SIGALRM sent with kill would otherwise make
	// the runtime end the stage, and with it the sandbox and the report of
	// the command's status. Caught (not ignored), they still reach the
	// command with their default action after exec.
	sigs := make(chan os.Signal, 16)
	sigReady := make(chan struct{})
	go func() {
		signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2)
		drop := make(chan os.Signal, 1)
		signal.Notify(drop)
		close(sigReady)
		for range drop {
		}
	}()
	// encoding/json works out a struct type's fields at its first use,
	// about 1 ms for the spec's types: done here while the stage waits for
	// wrun (started ahead, it usually does), not once the spec is there.
	go func() {
		var s stage2Spec
		_ = json.Unmarshal([]byte(specWarmup), &s)
	}()
	// The command's descriptors come first: the stage may have been
	// started before wrun knew them (StartStage).
	extra, err := takeDescriptors(back)
	if err != nil {
		fail(125, err)
	}
	var spec stage2Spec
	if err := json.NewDecoder(io.LimitReader(os.NewFile(3, "spec"), 64<<20)).Decode(&spec); err != nil {
		fail(125, fmt.Errorf("stage: reading the sandbox: %w", err))
	}
	unix.Close(3)
	if spec.ExtraFDs != extra {
		fail(125, fmt.Errorf("stage: %d extra descriptors, the sandbox names %d", extra, spec.ExtraFDs))
	}
	if err := makeView(&spec); err != nil {
		fail(125, err)
	}
	r := &spec.Restriction
	rs, err := r.ruleset()
	if err != nil {
		fail(125, err)
	}
	// The sandbox's own pseudo-terminals and /dev/shm (pts.go). What
	// cannot be mounted stays the host's, hidden.
	_ = privateDev(rs, r.HandledFS)
	prog := r.filter()
	path, err := lookPath(spec.Argv[0], spec.Env, spec.Cwd)
	if err != nil {
		var se *sandbox.StartError
		if errors.As(err, &se) {
			fail(se.Code, se.Err)
		}
		fail(127, err)
	}
	<-sigReady
	// After the catch-alls: Ignore undoes them for these signals.
	for _, s := range spec.Ignored {
		signal.Ignore(unix.Signal(s))
	}

	// The socket between wrun and the hands, where UNIX sockets are
	// mediated; with Landlock and no abstract-socket scope the hands
	// starts at wrun's first request, from a thread of its own domain
	// (handsLater), restricted beside the launch thread and before the
	// command is forked.
	wrunEnd, handsEnd := -1, -1
	lazyHands := r.Filter.Mediate && rs != nil && canHandsLater(r)
	if r.Filter.Mediate {
		if wrunEnd, handsEnd, err = newHandsPair(); err != nil {
			fail(125, err)
		}
	}
	var handsRestricted chan error
	if lazyHands {
		handsRestricted = make(chan error, 1)
		go handsLater(rs, r.AuditLog, handsEnd, spec.AllowUnix, spec.RefuseAbstract, handsRestricted)
	}

	// The launch thread: restricted, it forks the command and then stays,
	// blocked, for as long as the stage lives (the command's
	// PR_SET_PDEATHSIG is tied to it).
	type launched struct {
		pid int
		err error
	}
	lc := make(chan launched, 1)
	go func() {
		runtime.LockOSThread()
		listener, err := restrictWith(r, rs, prog, func() error {
			if !r.Filter.Mediate || lazyHands {
				return nil
			}
			// The hands starts now, in the launch thread's domain. The
			// command then runs in a layer nested in it, which keeps
			// it from the hands (shieldFromHands); without one (no
			// Landlock, or no signal scope) the command could reach
			// a dumpable hands, and it is waited for.
			shield := canShieldHands(r)
			err := execHands(handsEnd, spec.AllowUnix, spec.RefuseAbstract, !shield)
			unix.Close(handsEnd)
			if err != nil || !shield {
				return err
			}
			return shieldFromHands()
		})
		if err != nil {
			lc <- launched{err: &sandbox.StartError{Code: 125, Err: err}}
			return
		}
		if wrunEnd >= 0 && !r.Filter.Mediate {
			// An enclosing wrun holds the listener: no mediation. The
			// hands, started or waiting to be, sees the socket's end.
			unix.Close(wrunEnd)
			wrunEnd = -1
		}
		if listener >= 0 {
			fds := []int{listener}
			if wrunEnd >= 0 {
				fds = append(fds, wrunEnd)
			}
			// Sent from another thread: this one is under the filter now,
			// and its sendmsg would wait for the listener it sends.
			sent := make(chan error, 1)
			go func() { sent <- send(stageMsg{Kind: stageListener}, fds) }()
			err := <-sent
			unix.Close(listener)
			if wrunEnd >= 0 {
				unix.Close(wrunEnd)
			}
			if err != nil {
				lc <- launched{err: &sandbox.StartError{Code: 125, Err: fmt.Errorf("handing the observer its descriptor: %w", err)}}
				return
			}
		}
		if handsRestricted != nil {
			if err := <-handsRestricted; err != nil {
				lc <- launched{err: &sandbox.StartError{Code: 125, Err: err}}
				return
			}
		}
		files := []uintptr{0, 1, 2}
		for i := 0; i < spec.ExtraFDs; i++ {
			files = append(files, uintptr(5+i))
		}
		pid, err := syscall.ForkExec(path, spec.Argv, &syscall.ProcAttr{
			Dir: spec.Cwd, Env: spec.Env, Files: files,
			Sys: &syscall.SysProcAttr{Setsid: spec.Detach, Setpgid: !spec.Interactive && !spec.Detach, Pdeathsig: syscall.SIGKILL},
		})
		if err != nil {
			code := 126
			if errors.Is(err, unix.ENOENT) {
				code = 127
			}
			lc <- launched{err: &sandbox.StartError{Code: code, Err: explainStart(spec.Argv[0], err)}}
			return
		}
		lc <- launched{pid: pid}
		select {} // keep the thread: it is the command's parent
	}()
	l := <-lc
	if l.err != nil {
		var se *sandbox.StartError
		if errors.As(l.err, &se) {
			fail(se.Code, se.Err)
		}
		fail(125, l.err)
	}
	if rs != nil {
		rs.close()
	}
	// The stage needs none of the descriptors it passed on: holding the
	// caller's stdout or stderr open would keep a caller that reads them
	// from ever seeing their end while the stage stays as the init of
	// processes kept in the background, and the extra descriptors (the
	// git quarantine's lock among them) belong to the command alone. (On
	// failure the stage exits, and the command ends with its namespace.)
	if err := releaseDescriptors(spec.ExtraFDs); err != nil {
		fail(125, err)
	}
	if err := send(stageMsg{Kind: stageStarted}, nil); err != nil {
		os.Exit(125) // wrun is gone; so is everything here once we exit
	}
	go func() {
		for s := range sigs {
			sig := s.(syscall.Signal)
			switch {
			case spec.Interactive && (sig == unix.SIGINT || sig == unix.SIGQUIT):
			case spec.Interactive:
				_ = unix.Kill(l.pid, sig)
			default:
				_ = unix.Kill(-l.pid, sig)
			}
		}
	}()
	reported := false
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			break // ECHILD: nothing is left
		}
		if pid != l.pid || reported {
			continue
		}
		reported = true
		_ = send(stageMsg{Kind: stageExited, Status: ws}, nil)
		if !spec.KeepBackground {
			break
		}
	}
	// Exiting ends the PID namespace: the kernel kills what is left.
	os.Exit(0)
}

// makeView gives the stage's mount namespace the sandbox's view of the
// file system: propagation to the host cut, every mount read-only and
// nosuid except the writable paths (bound back read-write), the protected
// paths bound read-only over themselves, the hidden paths it can mask
// covered (maskHidden), and a /proc that shows only the
// sandbox's PID namespace. Mounts are made on file descriptors opened as
// the Landlock rules open them, so no path is resolved twice and no link
// a child planted earlier redirects one.
func makeView(spec *stage2Spec) error {
	if err := enterMountNS(false); err != nil {
		return err
	}
	trees := make([]int, 0, len(spec.Writable))
	targets := make([]int, 0, len(spec.Writable))
	defer func() {
		for _, fd := range append(trees, targets...) {
			unix.Close(fd)
		}
	}()
	var bound []fsRule
	for _, w := range spec.Writable {
		fd, err := openRulePath(w)
		if err != nil {
			if w.Optional {
				continue // it gets no Landlock rule either
			}
			return fmt.Errorf("binding %s writable: %w", w.Path, err)
		}
		// A detached copy of the tree, taken while it is still writable.
		tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("binding %s writable: open_tree: %w", w.Path, err)
		}
		trees = append(trees, tree)
		targets = append(targets, fd)
		bound = append(bound, w)
	}
	ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &ro); err != nil {
		return fmt.Errorf("making the file system read-only for the sandbox: mount_setattr: %w", err)
	}
	nosuid := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID}
	for i, w := range bound {
		if err := unix.MountSetattr(trees[i], "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &nosuid); err != nil {
			return fmt.Errorf("binding %s writable: mount_setattr: %w", w.Path, err)
		}
		if err := unix.MoveMount(trees[i], "", targets[i], "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
			return fmt.Errorf("binding %s writable: move_mount: %w", w.Path, err)
		}
	}
	for _, m := range spec.Restriction.Mounts {
		if err := protectPath(m); err != nil {
			return err
		}
	}
	spec.Restriction.Mounts = nil // made: restrict has nothing left to mount
	if err := maskHidden(spec.Masks); err != nil {
		return err
	}
	for _, v := range spec.Views {
		if err := makeHoleView(v); err != nil {
			return err
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		// A user namespace may not mount proc where parts of /proc are
		// masked (a container's). The support matrix holds other
		// processes out of reach with Landlock then (shell.processes):
		// the host's /proc stays, read-only; without Landlock it cannot.
		if !errors.Is(err, unix.EPERM) || !spec.Restriction.Landlock {
			return fmt.Errorf("mounting /proc for the sandbox's PID namespace: %w", err)
		}
	}
	return nil
}

// releaseDescriptors points the stage's 0, 1 and 2 at /dev/null and closes
// the extra descriptors (5 and up) it handed to the command.
func releaseDescriptors(extra int) error {
	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("stage: opening /dev/null: %w", err)
	}
	for fd := 0; fd <= 2; fd++ {
		if err := unix.Dup3(null, fd, 0); err != nil {
			unix.Close(null)
			return fmt.Errorf("stage: releasing descriptor %d: %w", fd, err)
		}
	}
	unix.Close(null)
	for i := 0; i < extra; i++ {
		unix.Close(5 + i)
	}
	return nil
}

// ignoredSignals are the signals wrun forwards that its caller ignores:
// wrun does not catch them (run.Run), so they are still ignored here.
// The Go runtime keeps only SIGHUP and SIGINT ignored from its start;
// the others it has caught by then, and the command gets them default.
func ignoredSignals() []int {
	var out []int
	for _, s := range []unix.Signal{unix.SIGHUP, unix.SIGINT} {
		if signal.Ignored(s) {
			out = append(out, int(s))
		}
	}
	return out
}

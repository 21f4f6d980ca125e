//go:build linux

package linux

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/sandbox"
)

// Without CAP_SYS_ADMIN a thread of wrun cannot get a mount namespace of its
// own: unshare(CLONE_NEWUSER) is refused to a multi-threaded process. So
// when protected paths need bind mounts and wrun is unprivileged, the child
// is started as a second stage: wrun re-executes itself in a new user and
// mount namespace (the clone flags are the kernel's, set by the parent), and
// that process makes the mounts, restricts itself exactly as the launch
// thread does, and executes the command. It costs one more exec of wrun,
// and only runs under grants that write where protected paths are.

// Stage2Arg0 is argv[0] of the second stage; cmd/wrun hands control to
// Stage2 when it sees it.
const Stage2Arg0 = "wrun:stage2"

// stage2Spec is everything the second stage needs, sent through a pipe:
// the restriction the launch thread would apply, and the command.
type stage2Spec struct {
	Restriction restriction `json:"restriction"`
	Argv        []string    `json:"argv"`
	Env         []string    `json:"env"`
	Cwd         string      `json:"cwd"`
	// ExtraFDs counts the descriptors the caller named for the command
	// (sandbox.Command.ExtraFiles): they arrive as 5, 6, ...
	ExtraFDs int `json:"extra_fds,omitempty"`
}

// The second stage talks back over a SOCK_SEQPACKET socket: an optional
// stageListener message carrying the seccomp listener, then either a
// stageStartError message or end-of-file when the command has been
// executed.

// stageMsgKind is the first byte of a message from the second stage.
type stageMsgKind byte

const (
	// stageListener carries the seccomp listener as SCM_RIGHTS; it has no
	// body.
	stageListener stageMsgKind = 'L'
	// stageStartError carries a stage2Err as JSON: the command was not
	// executed.
	stageStartError stageMsgKind = 'E'
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
}

// encode is the message's bytes on the socket (without the descriptor a
// stageListener message carries beside them).
func (m stageMsg) encode() ([]byte, error) {
	switch m.Kind {
	case stageListener:
		return []byte{byte(stageListener)}, nil
	case stageStartError:
		b, err := json.Marshal(m.Err)
		if err != nil {
			return nil, err
		}
		return append([]byte{byte(stageStartError)}, b...), nil
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
	case stageListener:
		if len(b) != 1 {
			return stageMsg{}, errors.New("second stage: listener message with a body")
		}
		return m, nil
	case stageStartError:
		if err := json.Unmarshal(b[1:], &m.Err); err != nil {
			return stageMsg{}, fmt.Errorf("second stage: bad start error message: %w", err)
		}
		return m, nil
	}
	return stageMsg{}, fmt.Errorf("second stage: unknown message kind %q", b[0])
}

// launchUserNS is launch for plans that run through the second stage.
func launchUserNS(pl *Plan, c sandbox.Command, interactive, auditLog bool, started chan<- startResult, done chan<- syscall.WaitStatus) {
	runtime.LockOSThread() // the child's PDEATHSIG is tied to this thread
	fail := func(code int, err error) { started <- startResult{err: &sandbox.StartError{Code: code, Err: err}} }
	spec := stage2Spec{
		Restriction: *pl.restriction(auditLog),
		Argv:        c.Argv, Env: pl.Policy.Env, Cwd: pl.Policy.Cwd,
		ExtraFDs: len(c.ExtraFiles),
	}
	// The stage is cloned into a mount namespace of its own.
	spec.Restriction.InMountNS = true
	specR, specW, err := os.Pipe()
	if err != nil {
		fail(125, err)
		return
	}
	defer specR.Close()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		specW.Close()
		fail(125, fmt.Errorf("socketpair: %w", err))
		return
	}
	back := os.NewFile(uintptr(pair[0]), "stage2-back")
	childEnd := os.NewFile(uintptr(pair[1]), "stage2-child")
	defer back.Close()
	uid, gid := os.Getuid(), os.Getgid()
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{Stage2Arg0},
		Env:        []string{},
		Dir:        "/",
		Stdin:      c.Stdin,
		Stdout:     c.Stdout,
		Stderr:     c.Stderr,
		ExtraFiles: append([]*os.File{specR, childEnd}, c.ExtraFiles...),
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:                 unix.CLONE_NEWUSER | unix.CLONE_NEWNS,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			GidMappingsEnableSetgroups: false,
			// The uid stays the user's own, so exec would clear the
			// capabilities the new namespace gives; keep the two the second
			// stage needs (mounts, dropping the bounding set) as ambient.
			AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP},
			Setpgid:     !interactive,
			Pdeathsig:   syscall.SIGKILL,
		},
	}
	err = cmd.Start()
	childEnd.Close()
	if err != nil {
		specW.Close()
		started <- startResult{err: &userNSError{err}}
		return
	}
	enc := json.NewEncoder(specW)
	err = enc.Encode(spec)
	specW.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		fail(125, fmt.Errorf("sending the sandbox to the second stage: %w", err))
		return
	}
	var obs *observer
	for {
		buf := make([]byte, 4096)
		oob := make([]byte, unix.CmsgSpace(4))
		n, oobn, _, _, err := unix.Recvmsg(int(back.Fd()), buf, oob, 0)
		if err == nil && n == 0 {
			break // end of file: the command was executed
		}
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			fail(125, fmt.Errorf("second stage: %w", err))
			return
		}
		msg, err := decodeStageMsg(buf[:n])
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			fail(125, err)
			return
		}
		switch msg.Kind {
		case stageListener:
			fd, perr := parseRights(oob[:oobn])
			if perr != nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				fail(125, perr)
				return
			}
			if obs, err = newObserver(fd, pl); err != nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				fail(125, err)
				return
			}
			go obs.run()
		case stageStartError:
			_ = cmd.Wait()
			if obs != nil {
				obs.stop()
			}
			fail(msg.Err.Code, errors.New(msg.Err.Msg))
			return
		}
	}
	started <- startResult{pid: cmd.Process.Pid, obs: obs}
	_ = cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	done <- ws
}

// userNSError is a failure to create the user namespace; Run falls back to
// carved rules on it.
type userNSError struct{ err error }

func (e *userNSError) Error() string {
	return "creating a user namespace for the sandbox: " + e.err.Error()
}

func parseRights(oob []byte) (int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("second stage: bad control message: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return -1, fmt.Errorf("second stage: bad file descriptor message: %v", err)
	}
	unix.CloseOnExec(fds[0])
	return fds[0], nil
}

// Stage2 is the second stage: it runs in the new user and mount namespace
// its parent created, applies the sandbox to itself and executes the
// command. It never returns.
func Stage2() {
	runtime.LockOSThread()
	_ = MarkInheritedFDsCloseOnExec()
	back := 4
	fail := func(code int, err error) {
		if b, merr := (stageMsg{Kind: stageStartError, Err: stage2Err{Code: code, Msg: err.Error()}}).encode(); merr == nil {
			_ = unix.Sendmsg(back, b, nil, nil, 0)
		}
		os.Exit(code)
	}
	var spec stage2Spec
	if err := json.NewDecoder(io.LimitReader(os.NewFile(3, "spec"), 64<<20)).Decode(&spec); err != nil {
		fail(125, fmt.Errorf("second stage: reading the sandbox: %w", err))
	}
	unix.Close(3)
	r := &spec.Restriction
	rs, err := r.ruleset()
	if err != nil {
		fail(125, err)
	}
	listener, err := restrict(r, rs, r.filter())
	if err != nil {
		fail(125, err)
	}
	if rs != nil {
		rs.close()
	}
	if listener >= 0 {
		msg, _ := stageMsg{Kind: stageListener}.encode()
		if err := unix.Sendmsg(back, msg, unix.UnixRights(listener), nil, 0); err != nil {
			fail(125, fmt.Errorf("handing the observer its descriptor: %w", err))
		}
		unix.Close(listener)
	}
	if err := os.Chdir(spec.Cwd); err != nil {
		fail(125, fmt.Errorf("entering %s: %w", spec.Cwd, err))
	}
	path, err := lookPath(spec.Argv[0], spec.Env, spec.Cwd)
	if err != nil {
		var se *sandbox.StartError
		if errors.As(err, &se) {
			fail(se.Code, se.Err)
		}
		fail(127, err)
	}
	// The descriptors the caller named arrive as 5, 6, ...; the command
	// gets them as 3, 4, ..., as a child of the launch thread does. The
	// back channel moves out of their way first.
	if spec.ExtraFDs > 0 {
		nb, err := unix.FcntlInt(uintptr(back), unix.F_DUPFD_CLOEXEC, 5+spec.ExtraFDs)
		if err != nil {
			fail(125, fmt.Errorf("second stage: moving its channel: %w", err))
		}
		unix.Close(back)
		back = nb
		for i := 0; i < spec.ExtraFDs; i++ {
			if err := unix.Dup2(5+i, 3+i); err != nil { // the copy is not close-on-exec
				fail(125, fmt.Errorf("second stage: passing descriptor %d: %w", 3+i, err))
			}
		}
	}
	err = syscall.Exec(path, spec.Argv, spec.Env)
	code := 126
	if errors.Is(err, unix.ENOENT) {
		code = 127
	}
	fail(code, explainStart(spec.Argv[0], err))
}

//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/sandbox"
)

// A stage started before its plan. The stage's own start (a Go program's,
// some milliseconds) needs nothing of the policy but the shape of its
// namespaces, which the features and the options decide: StartStage
// starts it first thing, so that it overlaps wrun's policy work, and the
// launch hands it the command's descriptors and the spec when the plan is
// ready (RunStaged). The stage does nothing before it has them: it waits
// in its namespaces, with no descriptor of the command's.

// stageShape is what the stage's clone needs to know.
type stageShape struct {
	userNS, netNS, interactive, keepBackground bool
}

// shapeOf is the shape pl's launch needs.
func shapeOf(pl *Plan, interactive bool) stageShape {
	return stageShape{userNS: pl.viaUserNS, netNS: pl.netNS, interactive: interactive, keepBackground: pl.Options.KeepBackground}
}

// Prestage is a stage started ahead of its plan, from a locked thread of
// its own that waits for the launch (or for Abandon).
type Prestage struct {
	shape stageShape
	req   chan *stageReq
	mu    sync.Mutex
	taken bool
}

// stageReq is the launch a started stage serves.
type stageReq struct {
	pl          *Plan
	c           sandbox.Command
	interactive bool
	auditLog    bool
	started     chan<- startResult
	done        chan<- stageEnd
}

// StartStage starts the stage for a launch with features f, before its
// plan exists; nil where the launch would not use one. The shape it
// guesses (a network namespace only below Landlock ABI 6) is checked
// against the plan's; a stage of the wrong shape is abandoned.
func StartStage(f Features, keepBackground bool, stdin *os.File) *Prestage {
	if !f.Env().stage() {
		return nil
	}
	ps := &Prestage{
		shape: stageShape{
			userNS:         !f.MountNS,
			netNS:          f.landlock().rights().Scoped&llScopeAbstractUnix == 0,
			interactive:    isForeground(stdin),
			keepBackground: keepBackground,
		},
		req: make(chan *stageReq, 1),
	}
	go stageThread(ps.shape, ps.req)
	return ps
}

// Abandon ends the stage when no launch took it; after a launch it does
// nothing. It does not wait for the stage to end.
func (ps *Prestage) Abandon() {
	if ps == nil {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !ps.taken {
		ps.taken = true
		close(ps.req)
	}
}

// take hands r to the stage if it has shape s; otherwise it abandons it.
func (ps *Prestage) take(s stageShape, r *stageReq) bool {
	if ps == nil {
		return false
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.taken {
		return false
	}
	ps.taken = true
	if ps.shape != s {
		close(ps.req)
		return false
	}
	ps.req <- r
	return true
}

// startStage hands the launch to ps when its shape fits, else to a stage
// started now.
func startStage(ps *Prestage, r *stageReq) {
	s := shapeOf(r.pl, r.interactive)
	if ps.take(s, r) {
		return
	}
	req := make(chan *stageReq, 1)
	req <- r
	go stageThread(s, req)
}

// stageProc is a started stage, from wrun's side.
type stageProc struct {
	pid   int      // wrun's child: its number stays its own until wrun reaps it
	specW *os.File // the spec goes here
	back  *os.File // the stage's messages, and the command's descriptors
}

// stageThread starts a stage of shape s on a locked thread (the stage's
// PR_SET_PDEATHSIG is tied to it) and serves the launch that comes on req;
// if req closes first, it ends the stage.
func stageThread(s stageShape, req <-chan *stageReq) {
	runtime.LockOSThread()
	sp, err := startStageProc(s)
	r, ok := <-req
	if !ok {
		if err == nil {
			sp.kill()
			sp.close()
		}
		return
	}
	if err != nil {
		if s.userNS {
			r.started <- startResult{err: &userNSError{err}}
		} else {
			r.started <- startResult{err: &sandbox.StartError{Code: 125, Err: fmt.Errorf("starting the sandbox's namespaces: %w", err)}}
		}
		return
	}
	serveStage(sp, r)
}

// startStageProc executes the stage in new namespaces of shape s. Its
// standard descriptors are /dev/null until the launch sends the
// command's.
func startStageProc(s stageShape) (*stageProc, error) {
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer specR.Close()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		specW.Close()
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	back := os.NewFile(uintptr(pair[0]), "stage-back")
	childEnd := os.NewFile(uintptr(pair[1]), "stage-child")
	defer childEnd.Close()
	attr := &syscall.SysProcAttr{
		Cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWNS,
		Setpgid:    !s.interactive,
	}
	if s.netNS {
		// Abstract UNIX sockets live in a network namespace: a new one
		// holds them where Landlock cannot scope them (below ABI 6).
		attr.Cloneflags |= unix.CLONE_NEWNET
	}
	if !s.keepBackground {
		// When wrun dies, the stage dies, and with the init of its PID
		// namespace every process of the sandbox.
		attr.Pdeathsig = syscall.SIGKILL
	}
	if s.userNS {
		uid, gid := os.Getuid(), os.Getgid()
		attr.Cloneflags |= unix.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		// The uid stays the user's own, so exec would clear the
		// capabilities the new namespace gives; keep the two the stage
		// needs (mounts, dropping the bounding set) as ambient.
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
	}
	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		specW.Close()
		back.Close()
		return nil, fmt.Errorf("opening /dev/null: %w", err)
	}
	defer unix.Close(null)
	// syscall.ForkExec rather than os/exec: os/exec's first start in a
	// process forks a throwaway child to learn whether pidfds work, on
	// the launch's critical path, and wrun needs no pidfd for its own
	// child, which it reaps itself.
	pid, err := syscall.ForkExec("/proc/self/exe", []string{Stage2Arg0}, &syscall.ProcAttr{
		Dir:   "/",
		Env:   []string{},
		Files: []uintptr{uintptr(null), uintptr(null), uintptr(null), specR.Fd(), childEnd.Fd()},
		Sys:   attr,
	})
	runtime.KeepAlive(specR)
	runtime.KeepAlive(childEnd)
	if err != nil {
		specW.Close()
		back.Close()
		return nil, fmt.Errorf("executing the stage: %w", err)
	}
	return &stageProc{pid: pid, specW: specW, back: back}, nil
}

// wait reaps the stage and returns its wait status.
func (sp *stageProc) wait() syscall.WaitStatus {
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(sp.pid, &ws, 0, nil); !errors.Is(err, syscall.EINTR) {
			return ws
		}
	}
}

// kill ends the stage and reaps it.
func (sp *stageProc) kill() {
	_ = unix.Kill(sp.pid, unix.SIGKILL)
	sp.wait()
}

func (sp *stageProc) close() {
	if sp.specW != nil {
		sp.specW.Close()
	}
	sp.back.Close()
}

// stageFDs is the first byte of the message that carries the command's
// descriptors to the stage: stdin, stdout, stderr, then the extra ones.
const stageFDs = 'D'

// sendDescriptors hands the stage the command's descriptors.
func (sp *stageProc) sendDescriptors(c sandbox.Command) error {
	fds := []int{int(c.Stdin.Fd()), int(c.Stdout.Fd()), int(c.Stderr.Fd())}
	for _, f := range c.ExtraFiles {
		fds = append(fds, int(f.Fd()))
	}
	if len(fds) > maxStageFDs {
		return fmt.Errorf("too many descriptors for the command (%d, at most %d)", len(fds)-3, maxStageFDs-3)
	}
	err := unix.Sendmsg(int(sp.back.Fd()), []byte{stageFDs}, unix.UnixRights(fds...), nil, 0)
	runtime.KeepAlive(c)
	return err
}

// maxStageFDs bounds the descriptors of one message (the kernel's
// SCM_MAX_FD).
const maxStageFDs = 253

// takeDescriptors is the stage's side of sendDescriptors: it puts the
// command's descriptors at 0, 1, 2 and 5 onwards (3 is the spec, 4 the
// socket back to wrun) and returns how many extra ones there are.
func takeDescriptors(back int) (int, error) {
	buf := make([]byte, 8)
	oob := make([]byte, unix.CmsgSpace(4*maxStageFDs))
	var n, oobn, flags int
	var err error
	for {
		n, oobn, flags, _, err = unix.Recvmsg(back, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return 0, fmt.Errorf("stage: receiving the command's descriptors: %w", err)
	}
	fds := rightsOf(oob[:oobn])
	if n != 1 || buf[0] != stageFDs || flags&(unix.MSG_CTRUNC|unix.MSG_TRUNC) != 0 || len(fds) < 3 {
		closeAll(fds)
		return 0, fmt.Errorf("stage: a bad descriptor message (%d bytes, %d descriptors)", n, len(fds))
	}
	// Above every target first, so no move overwrites a descriptor still
	// to be moved.
	const high = 1024
	for i, fd := range fds {
		h, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, high)
		if err != nil {
			closeAll(fds)
			return 0, fmt.Errorf("stage: placing the command's descriptors: %w", err)
		}
		unix.Close(fd)
		fds[i] = h
	}
	defer closeAll(fds)
	for i, fd := range fds {
		target, flags := i, 0
		if i >= 3 {
			target, flags = 5+i-3, unix.O_CLOEXEC
		}
		if err := unix.Dup3(fd, target, flags); err != nil {
			return 0, fmt.Errorf("stage: placing the command's descriptors: %w", err)
		}
	}
	return len(fds) - 3, nil
}

//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// The supervisor: wrun's side of the seccomp listener.
//
// The filter sends wrun the command's calls that Landlock cannot decide
// alone (seccomp.go). For each, wrun reads the call's arguments once from
// the command's memory, resolves what they name from the command's own
// working directory or descriptor, and then does one of three things:
//
//   - performs the call itself, on a performer thread (performer.go), on
//     the directory descriptor it resolved, after checking it against the
//     grant (the access model) and the protected names and inodes; a
//     descriptor it opened is installed in the command with
//     SECCOMP_IOCTL_NOTIF_ADDFD. So are every create, removal, rename and
//     link in a directory that carving left without those rights (the
//     workspace root, .git: mediation.go), every metadata call (Landlock
//     has no hook for them), every truncate below Landlock ABI 3, every
//     signal to another process below ABI 6, and the calls on sockets
//     below ABI 9 (sockets.go);
//   - lets the call continue, where Landlock still decides it: a call
//     wrun lets continue after a racy read of its path can never create
//     where carving refuses, so reading the path is only for the report
//     of its denial, predicted from the command's own rules;
//   - refuses it, with a denial.
//
// Nothing read from the command can crash, stall or starve wrun: every
// length is bounded, a fault decoding a call fails that call (EPERM) and
// is counted, at most maxHandling calls are handled at once (the rest
// wait in the kernel: the command is slowed, not wrun), and a call that
// blocks holds one performer thread, never the receiving loop.

// Kernel structures of the user-notification interface.
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

type seccompNotif struct {
	ID    uint64
	PID   uint32
	Flags uint32
	Data  seccompData
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

const ioctlNotifIDValid = 0x40082102 // SECCOMP_IOCTL_NOTIF_ID_VALID

// maxHandling bounds the calls being handled at once.
const maxHandling = 256

// supervisor serves the listener of one run.
type supervisor struct {
	fd    int
	pl    *Plan
	feat  Features
	exact *access.Model
	// kernel predicts the calls let continue.
	kernel *access.Model
	calls  map[uint32]callSpec
	// perf performs the mediated calls (the writable trees whole), asCmd
	// those made under the command's own rules (openat2).
	perf, asCmd *performers
	// wide are the directories approved while the command runs (hold.go).
	wide widenings
	// fs is the performers' file system context, where they share wrun's.
	fs    *fsContext
	trees *trees
	guard *guarded
	dev   *devices
	socks *socketState
	inet  *inetState
	// self is wrun's pid, launch the thread the command was forked from.
	self, launch int
	// baseline is the number of seccomp filters of a process of the
	// command's: one with more made a filter of its own (a nested wrun,
	// another sandbox), and wrun performs nothing for it.
	baseline atomic.Int64
	// domains are the processes that made a Landlock domain of their own
	// (landlock_restrict_self); wrun performs nothing for them or their
	// descendants.
	domains sync.Map // tgid -> struct{}

	// structure serializes the calls wrun performs that change which
	// entries a directory the mediation watches holds (create, remove,
	// rename, link), with their checks.
	structure sync.Mutex

	slots        chan struct{}
	stopR, stopW int
	wg           sync.WaitGroup

	mu     sync.Mutex
	log    sandbox.DenialLog
	faults int
	// replay keeps, per thread, the result of a call wrun performed whose
	// answer found the call gone (a signal interrupted its wait, on a
	// kernel without WAIT_KILLABLE_RECV): the restarted call gets it.
	replay map[uint32]replayed
	// failed counts performed calls that failed for want of a performer.
	failed int
}

// newSupervisor serves the listener fd for the plan pl, whose command was
// forked from thread launch with the ruleset cmd (nil without Landlock),
// which it takes.
func newSupervisor(fd int, pl *Plan, launch int, cmd *ruleset) (*supervisor, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("starting the mediation: %w", err)
	}
	s := &supervisor{fd: fd, pl: pl, feat: pl.Features, exact: pl.accessModel(), kernel: pl.kernelModel(),
		calls: map[uint32]callSpec{}, self: os.Getpid(), launch: launch,
		slots: make(chan struct{}, maxHandling), stopR: p[0], stopW: p[1], replay: map[uint32]replayed{}}
	for _, c := range mediatedCalls() {
		s.calls[c.nr] = c
	}
	s.trees = newTrees(pl.Mediated)
	s.guard = newGuarded(pl.Policy.Protected)
	s.dev = newDevices()
	s.socks = newSocketState(pl.Policy.IPC.UnixSockets)
	s.fs = newFSContext()
	s.inet = newInetState()
	s.perf = newPerformers(func() (*ruleset, error) {
		if pl.ABI == 0 {
			return nil, nil
		}
		rs, err := buildRuleset(rulesetAttr{handledFS: pl.attr.handledFS, handledNet: pl.perfNet()}, fsRules(pl.perfRules))
		if err != nil {
			return nil, fmt.Errorf("the rules of the mediation: %w", err)
		}
		return rs, nil
	}, s.fs)
	s.asCmd = newPerformers(func() (*ruleset, error) { return cmd, nil }, s.fs)
	return s, nil
}

// run serves notifications until stop, or until no process uses the
// filter any more (POLLHUP).
func (s *supervisor) run() {
	defer unix.Close(s.stopR)
	for {
		s.slots <- struct{}{}
		fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}, {Fd: int32(s.stopR), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			<-s.slots
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if fds[0].Revents&unix.POLLIN == 0 || fds[1].Revents != 0 {
			<-s.slots
			return // stopped, or every user of the filter has exited
		}
		var n seccompNotif
		if err := ioctlPtr(s.fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); err != nil {
			<-s.slots
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOENT) {
				continue // interrupted, or the caller died before we read it
			}
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-s.slots }()
			s.serve(&n)
		}()
	}
}

// stop ends the mediation: the listener closes, so that every call the
// filter sends from now on (a process that outlives the command) fails
// with ENOSYS, and the calls being handled finish. It returns the
// denials, within the bounds, and the number of calls it failed on. Call
// it once the command has ended.
func (s *supervisor) stop() ([]sandbox.Denial, int) {
	_, _ = unix.Write(s.stopW, []byte{0})
	unix.Close(s.stopW)
	// Calls of a process kept in the background may wait in a performer
	// (a connect) for good: they are not waited for beyond a grace.
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	unix.Close(s.fd)
	s.perf.close()
	s.asCmd.close()
	s.wide.close()
	if s.fs.cwd >= 0 {
		unix.Close(s.fs.cwd)
	}
	s.socks.close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.replay {
		r.close()
	}
	return slices.Clone(s.log.Denials()), s.faults
}

// snapshot is what stop returns, with the mediation still running.
func (s *supervisor) snapshot() ([]sandbox.Denial, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log.Denials()), s.faults
}

// dropped is how many denials the supervisor counted beyond its bounds.
func (s *supervisor) dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.Dropped()
}

// record records a denial, or counts a repeat of one (nothing with
// --observe off).
func (s *supervisor) record(c *notice, op, path, addr, right string) {
	if s.pl.Options.NoObserve {
		return
	}
	prog := c.program()
	d := sandbox.Denial{
		Time: time.Now().UTC().Format(time.RFC3339Nano), PID: c.tgid, Program: prog,
		Op: op, Path: path, Addr: addr, Right: right, Exact: true, Count: 1,
	}
	s.mu.Lock()
	// Added whether seen before or not (Add counts a repeat); told to
	// Denied only the first time.
	seen := s.log.Find(sandbox.DenialKey(d)) != nil
	fresh := s.log.Add(d) && !seen
	s.mu.Unlock()
	if fresh && s.pl.Options.Denied != nil {
		s.pl.Options.Denied(d)
	}
}

// recordMissing records what the model found missing for op.
func (s *supervisor) recordMissing(c *notice, op string, missing []access.Missing) {
	for _, m := range missing {
		s.record(c, op, m.Path, m.Addr, m.Right)
	}
}

func ioctlPtr(fd int, req uint, p unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(p))
	if errno != 0 {
		return errno
	}
	return nil
}

// ioctlRet is ioctlPtr returning the ioctl's value.
func ioctlRet(fd int, req uint, p unsafe.Pointer) (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(p))
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

// notice is one notified call being handled.
type notice struct {
	s   *supervisor
	n   seccompNotif
	tid int
	// tgid is the caller's process.
	tgid int
	// prog is its argv[0] once read (program): read before the call is
	// answered, while the caller is sure to exist.
	prog string
	mem  childMemory
	// held are descriptors of wrun's to close when the call is done.
	held []int
	// answered: the call has had its answer.
	answered bool
	// performed: wrun made the call itself (a lost answer is replayed).
	performed bool
	// st is the caller's /proc status, read once.
	st *taskStatus
}

// taskStatus is what wrun reads of a thread's /proc/TID/status.
type taskStatus struct {
	tgid, filters, umask int
}

// status reads the caller's status once.
func (c *notice) status() taskStatus {
	if c.st == nil {
		st := readStatus(c.tid)
		c.st = &st
	}
	return *c.st
}

// readStatus parses /proc/TID/status; a field it cannot read is -1
// (umask: 077).
func readStatus(tid int) taskStatus {
	st := taskStatus{tgid: -1, filters: -1, umask: 0o077}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return st
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Tgid":
			if n, err := strconv.Atoi(v); err == nil {
				st.tgid = n
			}
		case "Seccomp_filters":
			if n, err := strconv.Atoi(v); err == nil {
				st.filters = n
			}
		case "Umask":
			if n, err := strconv.ParseUint(v, 8, 32); err == nil {
				st.umask = int(n)
			}
		}
	}
	return st
}

// open prepares the notice: the caller's memory and process, checked
// against the notification. It reports false when the call is gone.
func (c *notice) open() bool {
	c.tid = int(c.n.PID)
	fd, err := unix.Open("/proc/"+strconv.Itoa(c.tid)+"/mem", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		// An undumpable caller (a nested wrun's own threads) cannot be
		// read. A narrower sandbox's calls are still decided by their
		// registers alone (forNarrower; whatever needs memory fails);
		// anything else without its memory is refused.
		c.mem = memFile{-1}
		if c.tgid = c.status().tgid; c.tgid > 0 && c.valid() && c.s.narrower(c) {
			return true
		}
		c.answer(-1, unix.EPERM)
		return false
	}
	c.mem = memFile{fd}
	c.held = append(c.held, fd)
	if !c.valid() {
		return false
	}
	c.tgid = c.status().tgid
	if c.tgid <= 0 || !c.valid() {
		c.answer(-1, unix.EPERM)
		return false
	}
	return true
}

// valid reports whether the call is still waiting for its answer: while
// it is, the caller is alive and its tid names it.
func (c *notice) valid() bool {
	return ioctlPtr(c.s.fd, ioctlNotifIDValid, unsafe.Pointer(&c.n.ID)) == nil
}

func (c *notice) release() {
	for _, fd := range c.held {
		unix.Close(fd)
	}
}

// hold keeps fd until the call is done.
func (c *notice) hold(fd int) int {
	c.held = append(c.held, fd)
	return fd
}

// answer answers the call with a return value or an errno.
func (c *notice) answer(val int64, errno unix.Errno) {
	if c.answered {
		return
	}
	if errno == unix.EACCES || errno == unix.EPERM || errno == unix.EXDEV {
		c.program() // a denial's program, read while the caller waits
	}
	c.answered = true
	r := seccompNotifResp{ID: c.n.ID, Val: val}
	if errno != 0 {
		r.Val, r.Error = 0, -int32(errno)
	}
	err := ioctlPtr(c.s.fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&r))
	if errors.Is(err, unix.ENOENT) && c.performed {
		c.s.keepReplay(c, replayed{val: val, errno: errno, fd: -1})
	}
}

// continue lets the call run, for the kernel to decide.
func (c *notice) continueCall() {
	if c.answered {
		return
	}
	c.answered = true
	r := seccompNotifResp{ID: c.n.ID, Flags: notifFlagContinue}
	_ = ioctlPtr(c.s.fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&r))
}

// installFD hands fd (wrun's, which the caller keeps) to the command as
// the call's result.
func (c *notice) installFD(fd int, cloexec bool) {
	if c.answered {
		return
	}
	a := seccompNotifAddfd{ID: c.n.ID, SrcFD: uint32(fd)}
	if cloexec {
		a.NewFDFlags = unix.O_CLOEXEC
	}
	if c.s.feat.AddFDSend {
		a.Flags = addfdFlagSend
		_, err := ioctlRet(c.s.fd, ioctlNotifAddfd, unsafe.Pointer(&a))
		c.answered = true
		if errors.Is(err, unix.ENOENT) {
			c.s.keepReplayFD(c, fd, cloexec)
		} else if err != nil {
			// The descriptor could not be installed (the command's table
			// is full: EMFILE): answer with that.
			c.answered = false
			c.answer(-1, errnoOf(err))
		}
		return
	}
	n, err := ioctlRet(c.s.fd, ioctlNotifAddfd, unsafe.Pointer(&a))
	switch {
	case errors.Is(err, unix.ENOENT):
		c.answered = true
		c.s.keepReplayFD(c, fd, cloexec)
	case err != nil:
		c.answer(-1, errnoOf(err))
	default:
		c.answer(int64(n), 0)
	}
}

// program names the caller, for a denial.
func (c *notice) program() string {
	if c.prog != "" {
		return c.prog
	}
	c.prog = "?"
	b, err := os.ReadFile("/proc/" + strconv.Itoa(c.tid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return c.prog
	}
	if i := indexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	c.prog = string(b)
	return c.prog
}

// args are the call's arguments.
func (c *notice) args() [6]uint64 { return c.n.Data.Args }

// path reads the path argument i.
func (c *notice) path(i int) (string, error) {
	return c.mem.readString(c.args()[i], unix.PathMax)
}

// dir returns a descriptor (wrun's, held) of the directory a path
// argument is relative to: the caller's working directory for AT_FDCWD,
// else its descriptor dirfd.
func (c *notice) dir(dirfd int32) (int, error) {
	if dirfd == unix.AT_FDCWD {
		fd, err := unix.Open("/proc/"+strconv.Itoa(c.tid)+"/cwd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		return c.hold(fd), nil
	}
	return c.fdPath(int(dirfd))
}

// fdPath returns an O_PATH descriptor (wrun's, held) of the file the
// caller's descriptor fd is open on, reopened through /proc: the same
// file, a description of wrun's own.
func (c *notice) fdPath(fd int) (int, error) {
	if fd < 0 {
		return -1, unix.EBADF
	}
	d, err := unix.Open("/proc/"+strconv.Itoa(c.tid)+"/fd/"+strconv.Itoa(fd), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return -1, unix.EBADF
		}
		return -1, err
	}
	return c.hold(d), nil
}

// takeFD returns the caller's open file fd itself (pidfd_getfd: the same
// description, with its flags and offset), held.
func (c *notice) takeFD(fd int) (int, error) {
	if !c.s.feat.PidfdGetfd {
		return -1, unix.EPERM
	}
	var pidfd int
	var err error
	if c.s.feat.PidfdThread {
		pidfd, err = unix.PidfdOpen(c.tid, pidfdThread)
	} else {
		pidfd, err = unix.PidfdOpen(c.tgid, 0)
	}
	if err != nil {
		return -1, unix.EPERM
	}
	defer unix.Close(pidfd)
	if !c.valid() {
		return -1, unix.EINTR
	}
	got, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		if errors.Is(err, unix.EBADF) {
			return -1, unix.EBADF
		}
		return -1, unix.EPERM
	}
	unix.CloseOnExec(got)
	return c.hold(got), nil
}

// umask is the caller's umask.
func (c *notice) umask() int { return c.status().umask }

// tgidOf reads the process a thread belongs to.
func tgidOf(tid int) int { return readStatus(tid).tgid }

// filterCount reads how many seccomp filters a thread runs under.
func filterCount(tid int) int { return readStatus(tid).filters }

// errnoError is a call's failure as the errno it answers with.
type errnoError unix.Errno

func (e errnoError) Error() string { return unix.Errno(e).Error() }

func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	var ee errnoError
	if errors.As(err, &ee) {
		return unix.Errno(ee)
	}
	return unix.EIO
}

// serve handles one notification.
func (s *supervisor) serve(n *seccompNotif) {
	c := &notice{s: s, n: *n}
	defer c.release()
	defer func() {
		if recover() != nil {
			// A fault decoding what the command passed (a bug it found)
			// fails that call, never wrun.
			c.answer(-1, unix.EPERM)
			s.mu.Lock()
			s.faults++
			s.mu.Unlock()
		}
	}()
	if uint32(n.Data.Nr) == unix.SYS_LANDLOCK_RESTRICT_SELF {
		// A nested sandbox's domain begins: its arguments are registers,
		// and its caller (a nested wrun's launch thread, undumpable) may
		// be one wrun cannot read.
		c.tid = int(c.n.PID)
		if c.tgid = c.status().tgid; c.tgid > 0 && c.valid() {
			s.domains.Store(c.tgid, struct{}{})
			c.continueCall()
		}
		c.answer(-1, unix.EPERM)
		return
	}
	if !c.open() {
		return
	}
	if s.answerReplay(c) {
		return
	}
	nr := uint32(n.Data.Nr)
	if spec, ok := s.calls[nr]; ok {
		if s.narrower(c) {
			s.forNarrower(c, spec)
			return
		}
		s.fsCall(c, spec)
		c.answer(-1, unix.EPERM) // a handler that forgot to answer fails closed
		return
	}
	switch nr {
	case unix.SYS_SOCKET:
		s.refusedSocket(c)
	case unix.SYS_CONNECT, unix.SYS_BIND, unix.SYS_SENDTO, unix.SYS_SENDMSG, unix.SYS_SENDMMSG:
		if s.narrower(c) && nr == unix.SYS_BIND {
			c.answer(-1, unix.EPERM)
			return
		}
		s.socketCall(c)
	case unix.SYS_LISTEN:
		s.listenCall(c)
	case unix.SYS_KILL, unix.SYS_TKILL, unix.SYS_TGKILL, unix.SYS_RT_SIGQUEUEINFO,
		unix.SYS_RT_TGSIGQUEUEINFO, unix.SYS_PIDFD_SEND_SIGNAL:
		s.signalCall(c)
	case unix.SYS_PRLIMIT64, unix.SYS_SETPRIORITY, unix.SYS_IOPRIO_SET, unix.SYS_SCHED_SETAFFINITY,
		unix.SYS_SCHED_SETSCHEDULER, unix.SYS_SCHED_SETPARAM, unix.SYS_SCHED_SETATTR:
		s.targetCall(c)
	case unix.SYS_FCNTL:
		s.setOwner(c)
	case unix.SYS_IOCTL:
		s.ptyPeer(c)
	}
	c.answer(-1, unix.EPERM)
}

// narrower reports whether the caller may run under a sandbox narrower
// than this one: a seccomp filter more than the command's (a nested wrun
// loads one), or a Landlock domain it (or a process it descends from)
// made. wrun performs nothing for such a caller: a call it performed
// would escape the narrower sandbox's Landlock domain.
func (s *supervisor) narrower(c *notice) bool {
	base := s.baseline.Load()
	if n := c.status().filters; n < 0 || base > 0 && int64(n) > base {
		return true
	}
	nested := false
	s.domains.Range(func(k, _ any) bool {
		if descends(c.tgid, k.(int), s.self) {
			nested = true
			return false
		}
		return true
	})
	return nested
}

// forNarrower handles a file system call of a narrower sandbox's: what
// Landlock decides continues (both sandboxes' domains then decide it);
// what wrun would have performed is refused.
func (s *supervisor) forNarrower(c *notice, spec callSpec) {
	switch spec.op {
	case opChmod, opFchmod, opChown, opLchown, opFchown, opUtimens, opUtime, opUtimes,
		opSetxattr, opLsetxattr, opFsetxattr, opRemovexattr, opLremovexattr, opFremovexattr, opOpen2:
		c.answer(-1, unix.EPERM)
	case opTruncate:
		if s.pl.attr.handledFS&llTruncate == 0 {
			c.answer(-1, unix.EPERM)
			return
		}
		c.continueCall()
	case opOpen, opCreate:
		flags := uint64(unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC)
		if spec.flags >= 0 {
			flags = c.args()[spec.flags]
		}
		if readTruncates(flags) && s.pl.attr.handledFS&llTruncate == 0 {
			c.answer(-1, unix.EPERM)
			return
		}
		c.continueCall()
	default:
		c.continueCall()
	}
}

// replayed is the result of a call wrun performed whose answer found the
// call interrupted.
type replayed struct {
	nr      int32
	args    [6]uint64
	val     int64
	errno   unix.Errno
	fd      int // a descriptor to install, or -1
	cloexec bool
}

func (r replayed) close() {
	if r.fd >= 0 {
		unix.Close(r.fd)
	}
}

func (s *supervisor) keepReplay(c *notice, r replayed) {
	r.nr, r.args = c.n.Data.Nr, c.n.Data.Args
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.replay[c.n.PID]; ok {
		old.close()
	}
	s.replay[c.n.PID] = r
}

// keepReplayFD keeps a descriptor to install in the restarted call; fd
// stays open (it is no longer the notice's).
func (s *supervisor) keepReplayFD(c *notice, fd int, cloexec bool) {
	if i := slices.Index(c.held, fd); i >= 0 {
		c.held = slices.Delete(c.held, i, i+1)
	}
	s.keepReplay(c, replayed{fd: fd, cloexec: cloexec})
}

// answerReplay answers a call restarted after a signal with the result of
// the one wrun performed, rather than performing it twice. Any other call
// of the thread drops what was kept.
func (s *supervisor) answerReplay(c *notice) bool {
	s.mu.Lock()
	r, ok := s.replay[c.n.PID]
	if ok {
		delete(s.replay, c.n.PID)
	}
	s.mu.Unlock()
	if !ok {
		return false
	}
	if r.nr != c.n.Data.Nr || r.args != c.n.Data.Args {
		r.close()
		return false
	}
	c.performed = true
	if r.fd >= 0 {
		c.hold(r.fd)
		c.installFD(r.fd, r.cloexec)
		return true
	}
	c.answer(r.val, r.errno)
	return true
}

// refusedSocket answers a socket family the grant refuses: EPERM, with a
// denial.
func (s *supervisor) refusedSocket(c *notice) {
	fam := int(int32(c.args()[0]))
	c.answer(-1, unix.EPERM)
	right := access.RightSocketInet
	if fam == unix.AF_UNIX {
		right = access.RightSocketUnix
	}
	s.record(c, access.OpSocket, "", familyName(fam), right)
}

// trees are the directories whose entries the mediation makes and
// removes: those carving left without the rights (Plan.Mediated), and
// every directory made in one of them during the run. They are known by
// inode, so a directory keeps its place among them wherever it is moved.
type trees struct {
	mu   sync.Mutex
	dirs map[devIno]bool
}

// maxTrees bounds the directories the run may add.
const maxTrees = 1 << 20

func newTrees(paths []string) *trees {
	t := &trees{dirs: map[devIno]bool{}}
	for _, p := range paths {
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			t.dirs[idOf(&st)] = true
		}
	}
	return t
}

func (t *trees) has(id devIno) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dirs[id]
}

// add counts a directory the mediation made; false past the bound.
func (t *trees) add(id devIno) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.dirs) >= maxTrees {
		return false
	}
	t.dirs[id] = true
	return true
}

func (t *trees) remove(id devIno) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.dirs, id)
}

// guarded are the protected paths as the mediation refuses them: by the
// name in their directory (so one that does not exist yet is known), and
// by inode (so no other name reaches one).
type guarded struct {
	// names are the protected names, by directory.
	names map[nameKey]policy.Protected
	// inodes are the protected files and directories that exist: neither
	// they nor anything in them may change.
	inodes map[devIno]policy.Protected
	// pinned are directories that may not be moved, removed or replaced
	// (a repository's gitdir), though their contents may change.
	pinned map[devIno]policy.Protected
	// strict refuses every protected name, also one only checked after
	// the run: set while wrun keeps serving what a --keep-background run
	// left, when no check after the run will come.
	strict atomic.Bool
}

// neverMade are protected names git's own work never creates in a git
// dir (a linked worktree's are made by git worktree, in worktrees/, a
// new entry there): one the command creates is refused when it is made,
// so that nothing waits for the check after the run, which a wrun that
// is killed never makes.
func neverMade(name string) bool {
	switch name {
	case "commondir", "gitdir", "config.worktree", "remotes", "branches":
		return true
	}
	return false
}

type nameKey struct {
	dir  devIno
	name string
}

func newGuarded(ps []policy.Protected) *guarded {
	g := &guarded{names: map[nameKey]policy.Protected{}, inodes: map[devIno]policy.Protected{}, pinned: map[devIno]policy.Protected{}}
	for _, pr := range ps {
		var dst unix.Stat_t
		if unix.Stat(dirOf(pr.Path), &dst) != nil {
			continue
		}
		g.names[nameKey{idOf(&dst), baseOf(pr.Path)}] = pr
		var st unix.Stat_t
		if unix.Lstat(pr.Path, &st) != nil {
			continue
		}
		if pr.Pin {
			g.pinned[idOf(&st)] = pr
		} else {
			g.inodes[idOf(&st)] = pr
		}
	}
	return g
}

// refuses says whether the mediation must refuse to change the entry e
// (st: what is there, nil if nothing): a protected name that exists or
// is kept (not one only checked after the run), a protected inode, or
// anything inside a protected directory.
func (g *guarded) refuses(e entry, st *unix.Stat_t) (policy.Protected, bool) {
	if pr, ok := g.inodes[e.dirID]; ok {
		return pr, true
	}
	if pr, ok := g.names[nameKey{e.dirID, e.name}]; ok && (pr.Exists || pr.Create != policy.CreateNone || neverMade(e.name) || g.strict.Load()) {
		return pr, true
	}
	if st != nil {
		if pr, ok := g.inodes[idOf(st)]; ok {
			return pr, true
		}
		if pr, ok := g.pinned[idOf(st)]; ok {
			return pr, true
		}
	}
	return policy.Protected{}, false
}

// inode says whether st is a protected file or directory (for a call on
// a descriptor).
func (g *guarded) inode(st *unix.Stat_t) (policy.Protected, bool) {
	pr, ok := g.inodes[idOf(st)]
	return pr, ok
}

func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "/"
}

func baseOf(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

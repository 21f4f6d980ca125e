//go:build linux

package linux

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/access"
)

// Calls that name another process: signals (below Landlock ABI 6, where
// its scope does not hold them), and, at every ABI, priorities,
// scheduling and resource limits, which Landlock has no hook for. The
// filter lets the caller's own process and group through by register;
// every other target comes here, and is let through only when it belongs
// to the sandbox.
//
// Without a PID namespace, "belongs to the sandbox" is "descends from
// the command": wrun is a child subreaper, so every process the command
// starts stays wrun's descendant even when its parent dies, and a
// process outside can never become one. The test walks up the target's
// parents to wrun, each step pinned by a pidfd opened first and the
// child's parent read again afterwards (so a parent that died and whose
// number was given to another process is never taken for it), and stops
// at wrun, whose other children the sandbox does not hold. A signal is
// then sent by wrun on the target's pidfd, as the command (a performer:
// its uid, no capability), so it reaches the process checked and no
// other. A priority or limit is set by number after the same check, and
// the pidfd tells whether the target lived throughout.

// parentOf reads a process's parent from /proc/PID/stat.
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1, err
	}
	// The command name is in parentheses and may hold anything: the
	// fields after the last ')' are fixed.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1, errors.New("bad stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return -1, errors.New("bad stat")
	}
	return strconv.Atoi(f[1])
}

// descends reports whether process pid descends from process anc, below
// wrun (self): false for wrun itself and its threads.
func descends(pid, anc, self int) bool {
	for depth := 0; pid > 1 && depth < 4096; depth++ {
		if pid == anc {
			return true
		}
		if pid == self {
			return false
		}
		pp, err := parentOf(pid)
		if err != nil {
			return false
		}
		pid = pp
	}
	return false
}

// member reports whether process pid (a tgid) belongs to the sandbox:
// it descends from the command, wrun's only child while the command runs.
// A pidfd for it, held, pins its identity for the caller.
func (s *supervisor) member(c *notice, pid int) (pidfd int, ok bool) {
	if pid <= 1 || pid == s.self {
		return -1, false
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1, false
	}
	c.hold(fd)
	cur, curfd := pid, fd
	for depth := 0; depth < 4096; depth++ {
		pp, err := parentOf(cur)
		if err != nil {
			return -1, false
		}
		if pp == s.self {
			// Its parent is wrun: it is the command, or an orphan of the
			// command's that wrun, its subreaper, took in, if it runs
			// under the command's filters (a child wrun had before the
			// run does not).
			if base := int(s.baseline.Load()); base > 0 && filterCount(cur) < base {
				return -1, false
			}
			return fd, alive(curfd)
		}
		if pp <= 1 {
			return -1, false
		}
		pfd, err := unix.PidfdOpen(pp, 0)
		if err != nil {
			return -1, false
		}
		c.hold(pfd)
		// The parent read before pfd was opened is still the parent: so
		// pfd is it, not a process given the number since.
		if again, err := parentOf(cur); err != nil || again != pp || !alive(curfd) {
			return -1, false
		}
		cur, curfd = pp, pfd
	}
	return -1, false
}

// alive reports whether the process of pidfd has not exited.
func alive(pidfd int) bool {
	return unix.PidfdSendSignal(pidfd, 0, nil, 0) == nil
}

// signalCall handles a signal to another process, below the signal scope.
func (s *supervisor) signalCall(c *notice) {
	args := c.args()
	nr := uint32(c.n.Data.Nr)
	var sig int
	switch nr {
	case unix.SYS_KILL:
		s.kill(c, int(int32(args[0])), int(int32(args[1])))
		return
	case unix.SYS_TKILL:
		s.threadSignal(c, tgidOf(int(int32(args[0]))), int(int32(args[0])), int(int32(args[1])), 0)
		return
	case unix.SYS_TGKILL:
		s.threadSignal(c, int(int32(args[0])), int(int32(args[1])), int(int32(args[2])), 0)
		return
	case unix.SYS_RT_SIGQUEUEINFO:
		sig = int(int32(args[1]))
		s.queueSignal(c, int(int32(args[0])), -1, sig, args[2])
		return
	case unix.SYS_RT_TGSIGQUEUEINFO:
		sig = int(int32(args[2]))
		s.queueSignal(c, int(int32(args[0])), int(int32(args[1])), sig, args[3])
		return
	case unix.SYS_PIDFD_SEND_SIGNAL:
		s.pidfdSignal(c)
		return
	}
	c.answer(-1, unix.ENOSYS)
}

// refuseSignal answers a signal to a process outside the sandbox.
func (s *supervisor) refuseSignal(c *notice, target int, sig int) {
	c.answer(-1, unix.EPERM)
	s.record(c, access.OpSignal, "", "pid "+strconv.Itoa(target)+" ("+unix.SignalName(unix.Signal(sig))+")", access.RightSignal)
}

// kill handles kill(2): one process, the caller's group (0), another
// group (-pgid), or every process the caller may signal (-1), each
// narrowed to the sandbox's.
func (s *supervisor) kill(c *notice, pid, sig int) {
	switch {
	case pid == c.tgid:
		c.continueCall() // itself
	case pid > 0:
		pidfd, ok := s.member(c, pid)
		if !ok {
			s.refuseSignal(c, pid, sig)
			return
		}
		s.sendOn(c, pidfd, sig, nil)
	default:
		group := -pid
		if pid == 0 {
			group = pgidOf(c.tgid)
		}
		s.killGroup(c, group, sig, pid == -1)
	}
}

// killGroup signals every process of the sandbox in group (or, with all,
// every process of the sandbox), as kill does a group, each on its
// pidfd. ESRCH when none was.
func (s *supervisor) killGroup(c *notice, group, sig int, all bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		c.answer(-1, unix.EPERM)
		return
	}
	sent, outside := 0, 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == s.self {
			continue
		}
		if !all && pgidOf(pid) != group {
			continue
		}
		if all && pid == c.tgid {
			continue // kill(-1) spares the caller
		}
		pidfd, ok := s.member(c, pid)
		if !ok {
			outside++
			continue
		}
		if s.signalOn(pidfd, sig, nil) == nil {
			sent++
		}
	}
	switch {
	case sent > 0:
		c.answer(0, 0)
	case outside > 0 && !all:
		s.refuseSignal(c, -group, sig)
	default:
		c.answer(-1, unix.ESRCH)
	}
}

// pgidOf reads a process's group.
func pgidOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return -1
	}
	n, err := strconv.Atoi(f[2])
	if err != nil {
		return -1
	}
	return n
}

// sendOn sends sig (with info, or none) on pidfd as the command, and
// answers.
func (s *supervisor) sendOn(c *notice, pidfd, sig int, info *unix.Siginfo) {
	if err := s.signalOn(pidfd, sig, info); err != nil {
		c.answer(-1, errnoOf(err))
		return
	}
	c.answer(0, 0)
}

// signalOn sends the signal from a performer (the command's uid, no
// capability: the kernel's own permission check is the command's).
func (s *supervisor) signalOn(pidfd, sig int, info *unix.Siginfo) error {
	var err error
	if perr := s.perf.do(func() { err = unix.PidfdSendSignal(pidfd, unix.Signal(sig), info, 0) }); perr != nil {
		return unix.EPERM
	}
	return err
}

// threadSignal handles tkill and tgkill: a thread of process tgid.
func (s *supervisor) threadSignal(c *notice, tgid, tid, sig int, _ uint64) {
	if tgid == c.tgid {
		c.continueCall() // a thread of its own
		return
	}
	if tgid <= 0 {
		c.answer(-1, unix.ESRCH)
		return
	}
	if _, ok := s.member(c, tgid); !ok {
		s.refuseSignal(c, tid, sig)
		return
	}
	// The process is pinned and checked; tgkill reaches only a thread of
	// it, whatever the thread's number names by then.
	var err error
	if perr := s.perf.do(func() { err = unix.Tgkill(tgid, tid, unix.Signal(sig)) }); perr != nil {
		err = unix.EPERM
	}
	if err != nil {
		c.answer(-1, errnoOf(err))
		return
	}
	c.answer(0, 0)
}

// queueSignal handles rt_sigqueueinfo (tid < 0) and rt_tgsigqueueinfo.
func (s *supervisor) queueSignal(c *notice, tgid, tid, sig int, infoPtr uint64) {
	if tgid == c.tgid {
		c.continueCall()
		return
	}
	var info unix.Siginfo
	if err := c.mem.read(infoPtr, unsafe.Slice((*byte)(unsafe.Pointer(&info)), unsafe.Sizeof(info))); err != nil {
		c.answer(-1, unix.EFAULT)
		return
	}
	pidfd, ok := s.member(c, tgid)
	if !ok {
		s.refuseSignal(c, tgid, sig)
		return
	}
	if tid >= 0 {
		// A thread's queue: the kernel takes no pidfd for a thread here.
		var err error
		if perr := s.perf.do(func() {
			_, _, e := unix.Syscall6(unix.SYS_RT_TGSIGQUEUEINFO, uintptr(tgid), uintptr(tid), uintptr(sig), uintptr(unsafe.Pointer(&info)), 0, 0)
			if e != 0 {
				err = e
			}
		}); perr != nil {
			err = unix.EPERM
		}
		if err != nil {
			c.answer(-1, errnoOf(err))
			return
		}
		c.answer(0, 0)
		return
	}
	s.sendOn(c, pidfd, sig, &info)
}

// pidfdSignal handles pidfd_send_signal, at every Landlock ABI: the
// process the caller's descriptor names (a pidfd, or a /proc/PID
// directory, which may be a thread of wrun's own) is checked, and the
// signal sent on wrun's copy of the descriptor.
func (s *supervisor) pidfdSignal(c *notice) {
	args := c.args()
	fd, err := c.takeFD(int(int32(args[0])))
	if err != nil {
		if s.feat.PidfdGetfd {
			c.answer(-1, unix.EBADF)
		} else {
			c.answer(-1, unix.EPERM) // the descriptor cannot be taken here
		}
		return
	}
	pid := pidfdPid(fd)
	if pid <= 0 {
		c.answer(-1, unix.EBADF)
		return
	}
	if tg := tgidOf(pid); tg != pid {
		// A thread's own pidfd, or /proc/TID of one: the thread's process
		// answers for it.
		if tg <= 0 {
			c.answer(-1, unix.ESRCH)
			return
		}
		pid = tg
	}
	sig := int(int32(args[1]))
	if pid == c.tgid {
		c.continueCall()
		return
	}
	if _, ok := s.member(c, pid); !ok {
		s.refuseSignal(c, pid, sig)
		return
	}
	var info *unix.Siginfo
	if args[2] != 0 {
		info = new(unix.Siginfo)
		if err := c.mem.read(args[2], unsafe.Slice((*byte)(unsafe.Pointer(info)), unsafe.Sizeof(*info))); err != nil {
			c.answer(-1, unix.EFAULT)
			return
		}
	}
	// On the caller's own pidfd (the process it names, not a number).
	s.sendOn(c, fd, sig, info)
}

// pidfdPid reads the process a pidfd of wrun's names (its fdinfo), or
// the one a /proc/PID directory is of.
func pidfdPid(fd int) int {
	if p, err := fdPath(fd); err == nil {
		if rest, ok := strings.CutPrefix(p, "/proc/"); ok {
			if n, err := strconv.Atoi(rest); err == nil {
				return n
			}
		}
	}
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Pid:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// targetCall handles prlimit, setpriority, ioprio_set and the sched_set
// calls that name a process other than the caller.
func (s *supervisor) targetCall(c *notice) {
	args := c.args()
	nr := uint32(c.n.Data.Nr)
	var pid int
	switch nr {
	case unix.SYS_SETPRIORITY, unix.SYS_IOPRIO_SET:
		which, who := int(int32(args[0])), int(int32(args[1]))
		user := unix.PRIO_USER
		process := unix.PRIO_PROCESS
		if nr == unix.SYS_IOPRIO_SET {
			user, process = 3, 1
		}
		if which == user {
			c.answer(-1, unix.EPERM) // every process of the user, outside too
			s.record(c, access.OpSignal, "", "every process of the user", access.RightPriority)
			return
		}
		if which != process {
			// A group: all of it must be the sandbox's.
			if who == 0 || s.groupInside(c, who) {
				c.continueCall()
				return
			}
			c.answer(-1, unix.EPERM)
			s.record(c, access.OpSignal, "", "process group "+strconv.Itoa(who), access.RightPriority)
			return
		}
		pid = who
	default:
		pid = int(int32(args[0]))
	}
	if pid == 0 || pid == c.tid || pid == c.tgid {
		c.continueCall()
		return
	}
	tgid := tgidOf(pid)
	if tgid == c.tgid {
		c.continueCall() // a thread of its own
		return
	}
	pidfd, ok := s.member(c, tgid)
	if !ok {
		c.answer(-1, unix.EPERM)
		s.record(c, access.OpSignal, "", "pid "+strconv.Itoa(pid), access.RightPriority)
		return
	}
	c.continueCall()
	_ = pidfd // held until the call is answered: the target is pinned
}

// groupInside reports whether every process of group is the sandbox's.
func (s *supervisor) groupInside(c *notice, group int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	found := false
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pgidOf(pid) != group {
			continue
		}
		if _, ok := s.member(c, pid); !ok {
			return false
		}
		found = true
	}
	return found
}

// setOwner handles fcntl(F_SETOWN) below the signal scope: the owner of
// a descriptor's I/O signals may be the caller's own process or group
// only (the kernel checks nothing at signal time there).
func (s *supervisor) setOwner(c *notice) {
	args := c.args()
	if uint32(args[1]) != fcntlSetOwn {
		c.continueCall()
		return
	}
	owner := int(int32(args[2]))
	switch {
	case owner == 0, owner == c.tgid, owner < 0 && -owner == pgidOf(c.tgid):
		c.continueCall()
	default:
		c.answer(-1, unix.EPERM)
		s.record(c, access.OpSignal, "", "owner "+strconv.Itoa(owner), access.RightSignal)
	}
}

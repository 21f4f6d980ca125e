//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The command before exec: what the launch thread applies to itself, in
// the only order that works, before it forks the command (which inherits
// all of it) and while wrun's other threads stay unrestricted:
//
//  1. no_new_privs, which Landlock and seccomp need, and which keeps a
//     setuid program from raising the command's privileges;
//  2. no capability (as root, the command keeps uid 0 but none of its
//     powers; ambient capabilities wrun inherited are cleared too);
//  3. the Landlock ruleset (restrict_self, this thread only);
//  4. the seccomp filter, with a listener for wrun where the mediation
//     runs. It names this thread and wrun's process by number, so the
//     command (which shares this thread's Landlock domain) cannot signal
//     them.
//
// Each step is per thread: Landlock and seccomp without TSYNC, the
// capability sets and no_new_privs are a thread's own. The Go runtime
// never starts a thread from a locked one, so nothing else of wrun
// inherits them.

// launchRestriction is what the launch thread applies.
type launchRestriction struct {
	rs       *ruleset // nil without Landlock
	auditLog bool
	seccomp  bool
	spec     seccompSpec
	// listen: the filter gets a listener (the mediation);
	// waitKillable asks for SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV.
	listen, waitKillable bool
}

// errListenerTaken: another filter of the chain holds the listener.
var errListenerTaken = errors.New("the seccomp listener is taken (another supervisor, or an enclosing wrun, holds it)")

// restrictLaunch applies r to the calling, locked thread. It returns the
// listener (-1 without one) and the number of seccomp filters the thread
// then runs under. errListenerTaken means the thread has its Landlock
// domain but no filter: it must not start the command.
func restrictLaunch(r launchRestriction) (listener, filters int, err error) {
	prep, err := prepareLaunch(r)
	if err != nil {
		return -1, 0, err
	}
	return applyLaunch(r, prep)
}

// launchPrep is steps 1 and 2 done and the filter of step 4 assembled:
// what the launch thread does while wrun still builds the ruleset.
type launchPrep struct {
	filter []bpf.RawInstruction // nil without seccomp
}

// prepareLaunch takes steps 1 and 2 on the calling, locked thread and
// assembles its filter, which names the thread; r.rs is not needed yet.
func prepareLaunch(r launchRestriction) (launchPrep, error) {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return launchPrep{}, fmt.Errorf("setting no_new_privs: %w", err)
	}
	if err := dropCapabilities(); err != nil {
		return launchPrep{}, err
	}
	if !r.seccomp {
		return launchPrep{}, nil
	}
	spec := r.spec
	spec.Self, spec.Launch = unix.Getpid(), unix.Gettid()
	raw, err := bpf.Assemble(buildFilter(spec))
	if err != nil {
		return launchPrep{}, fmt.Errorf("assembling the seccomp filter: %w", err)
	}
	return launchPrep{filter: raw}, nil
}

// applyLaunch takes steps 3 and 4 on the thread prepareLaunch prepared.
func applyLaunch(r launchRestriction, prep launchPrep) (listener, filters int, err error) {
	if r.rs != nil {
		if err := restrictSelf(r.rs, r.auditLog); err != nil {
			return -1, 0, err
		}
	}
	if !r.seccomp {
		return -1, 0, nil
	}
	fd, err := loadFilter(prep.filter, r.listen, r.waitKillable)
	if r.listen && errors.Is(err, unix.EBUSY) {
		return -1, 0, errListenerTaken
	}
	if err != nil {
		return -1, 0, err
	}
	return fd, filterCount(unix.Gettid()), nil
}

// dropCapabilities empties the calling thread's ambient, inheritable,
// permitted and effective sets, and the bounding set where it is not empty
// already (as root), so that the child gains no capability at exec: not as
// root, not from ambient capabilities wrun inherited. (With no_new_privs,
// file capabilities are ignored at exec.)
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %w", err)
	}
	// Only a holder of CAP_SETPCAP can shrink the bounding set; without
	// it (an ordinary user) the bounding set is moot under no_new_privs.
	if data[0].Effective&(1<<unix.CAP_SETPCAP) != 0 {
		last := 40
		if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				last = n
			}
		}
		for c := 0; c <= last; c++ {
			if in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); err != nil || in == 0 {
				continue // not in the bounding set (a nested wrun dropped it already)
			}
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
				return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
			}
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	data = [2]unix.CapUserData{}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("dropping capabilities: %w", err)
	}
	return nil
}

// makeUndumpable keeps the command out of wrun's memory, environment and
// descriptors. The launch thread shares the command's Landlock domain
// (the command is forked from it), so Landlock lets the command reach it
// through /proc/PPID/task/TID/{environ,mem,fd/N}, which would hand it the
// environment wrun scrubbed and the descriptors wrun holds. A process
// that is not dumpable can be inspected that way only with
// CAP_SYS_PTRACE, which the command never has. execve makes the command
// dumpable again, so wrun can still read its memory.
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

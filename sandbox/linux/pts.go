//go:build linux

package linux

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/policy"
)

// Pseudo-terminals. Shells, pty libraries and tests of interactive
// programs open /dev/ptmx for a new pair and then the pair's other end,
// /dev/pts/N. The host's /dev/pts holds every terminal of the machine
// (reading one steals its keystrokes), so the policy keeps it hidden. The
// stage instead mounts a devpts instance of the sandbox's own over
// /dev/pts in its mount namespace: /dev/ptmx (which the kernel resolves
// through the "pts" directory beside it) and /dev/pts/ptmx then make pairs
// in that instance, /dev/pts lists only those, and the rule that opens it
// to the child is attached to the new instance's root, so no terminal
// outside is reachable by any path. Terminals the child inherits (its
// stdin, stdout or stderr) keep working: their rules were attached before
// the mount. Injecting input into a terminal (TIOCSTI) stays refused by
// the seccomp filter.

// POSIX shared memory and named semaphores (shm_open, sem_open: Python's
// multiprocessing locks, Node's and Rust's shared-memory crates) are files
// in /dev/shm, which on the host holds other processes' segments. The
// stage mounts an empty tmpfs of the sandbox's own there and opens it to
// the child, the same way: nothing outside is in it, and what the child
// puts there is gone with the sandbox's mount namespace.

// privateDev gives the stage's mount namespace the sandbox's own
// pseudo-terminals and shared memory (see above). Each that cannot be
// mounted stays the host's, hidden; the errors are returned joined, for
// the caller to ignore or report.
func privateDev(rs *ruleset, handledFS uint64) error {
	return errors.Join(privatePTS(rs, handledFS), privateSHM(rs, handledFS))
}

// privateSHM mounts an empty tmpfs on /dev/shm, writable by the child
// (mode 1777, as the host's), and adds the rule that opens it.
func privateSHM(rs *ruleset, handledFS uint64) error {
	if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777"); err != nil {
		return fmt.Errorf("mounting a tmpfs on /dev/shm: %w", err)
	}
	if rs == nil {
		return nil
	}
	return rs.addPath(fsRule{Path: "/dev/shm", Access: toLandlock(shmAccess)}, handledFS)
}

// shmAccess is what the child may do in its own /dev/shm: make, read,
// write and remove files (no links, FIFOs, sockets, nor execution).
const shmAccess = policy.ReadWritePlain &^ policy.Execute

// privateDevRules are the rules privateDev adds in the stage, for the
// access model (which must not call what they allow a denial).
func privateDevRules() []policy.Rule {
	return []policy.Rule{
		{Path: "/dev/pts", Access: ptsAccess, Source: "grant", Why: "the sandbox's own pseudo-terminals (a devpts instance of its own)", Optional: true},
		{Path: "/dev/shm", Access: shmAccess, Source: "grant", Why: "the sandbox's own shared memory (a tmpfs of its own)", Optional: true},
	}
}

// ptsOptions: every mount of devpts is a new instance (since Linux 4.7;
// "newinstance" says so to older kernels); its ptmx is usable by the
// child, and a new pair's terminal belongs to its creator only (no group
// option: the tty group may not be mapped in a user namespace). The
// instance holds at most 256 pairs: the kernel's limit
// (kernel.pty.max, less the pty.reserve kept for the host's own
// instance) is shared by every other instance on the machine, which a
// sandbox could otherwise use up for all the containers and other
// sandboxes beside it.
// 256 pairs is far more than a test suite of terminal programs opens at
// once.
const ptsOptions = "newinstance,ptmxmode=0666,mode=0600,max=256"

// ptsAccess is what the child may do in its own devpts instance: list it,
// open, read, write and configure (ioctl) its terminals.
const ptsAccess = policy.Device | policy.ReadDir

// privatePTS mounts a devpts instance of the sandbox's own on /dev/pts
// and, with Landlock, adds the rule that opens it to the child to rs
// (built already, so the rules of inherited terminals under the host's
// /dev/pts are attached to those). It must run in the stage's mount
// namespace, before anything of the sandbox runs there. On error nothing
// is opened: /dev/pts stays the host's, hidden, and only new pairs made
// through /dev/ptmx exist (reached through TIOCGPTPEER, not by path).
func privatePTS(rs *ruleset, handledFS uint64) error {
	if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, ptsOptions); err != nil {
		return fmt.Errorf("mounting a devpts instance on /dev/pts: %w", err)
	}
	if rs == nil {
		return nil
	}
	return rs.addPath(fsRule{Path: "/dev/pts", Access: toLandlock(ptsAccess)}, handledFS)
}

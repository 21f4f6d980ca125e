//go:build linux

package linux

import (
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

// ptsOptions: every mount of devpts is a new instance (since Linux 4.7;
// "newinstance" says so to older kernels); its ptmx is usable by the
// child, and a new pair's terminal belongs to its creator only (no group
// option: the tty group may not be mapped in a user namespace).
const ptsOptions = "newinstance,ptmxmode=0666,mode=0600"

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

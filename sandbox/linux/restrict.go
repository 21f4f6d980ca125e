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

	"github.com/wrun-dev/wrun/policy"
)

// restriction is what a process applies to itself before it becomes the
// command. The launch thread and the second stage both apply one with
// restrict, and both get it from Plan.restriction: the second stage
// receives it, as part of its stage2Spec, through a pipe.
type restriction struct {
	// Mounts are the protected paths to bind-mount onto themselves.
	Mounts []policy.Protected `json:"mounts,omitempty"`
	// InMountNS: the process is in a mount namespace of its own already
	// (the second stage, which its parent cloned into one). Otherwise
	// restrict makes one when there are mounts.
	InMountNS bool `json:"in_mount_ns,omitempty"`

	// Landlock: the kernel has Landlock; a ruleset handling HandledFS,
	// HandledNet and Scoped, with Rules, is applied.
	Landlock   bool     `json:"landlock"`
	HandledFS  uint64   `json:"handled_fs"`
	HandledNet uint64   `json:"handled_net"`
	Scoped     uint64   `json:"scoped"`
	Rules      []fsRule `json:"rules"`
	// AuditLog asks Landlock to log the command's denials: wrun reads them.
	AuditLog bool `json:"audit_log,omitempty"`

	// Seccomp: the kernel has seccomp filter mode; Filter is loaded.
	Seccomp bool        `json:"seccomp"`
	Filter  seccompSpec `json:"filter"`
}

// restriction is what the plan's child must run under. auditLog asks
// Landlock to log the child's denials (wrun reads them).
func (pl *Plan) restriction(auditLog bool) *restriction {
	rules := pl.fsRules()
	if pl.seccomp.Mediate {
		rules = append(rules, handsExeRules()...)
	}
	return &restriction{
		Mounts:    pl.Mounts,
		Landlock:  pl.ABI > 0,
		HandledFS: pl.attr.handledFS, HandledNet: pl.attr.handledNet, Scoped: pl.attr.scoped,
		Rules:    rules,
		AuditLog: auditLog,
		Seccomp:  pl.Features.Seccomp,
		Filter:   pl.seccomp,
	}
}

// ruleset builds r's Landlock ruleset, or returns nil without Landlock.
// It changes nothing for the caller, so it may run on any thread.
func (r *restriction) ruleset() (*ruleset, error) {
	if !r.Landlock {
		return nil, nil
	}
	return buildRuleset(rulesetAttr{handledFS: r.HandledFS, handledNet: r.HandledNet, scoped: r.Scoped}, r.Rules)
}

// filter is r's seccomp program (nil without seccomp). Like ruleset, it may
// be built ahead of restrict.
func (r *restriction) filter() []bpf.Instruction {
	if !r.Seccomp {
		return nil
	}
	return buildFilter(r.Filter)
}

// restrict applies r to the calling (locked) thread, in the only order
// that works: mounts need CAP_SYS_ADMIN, so they come before capabilities
// are dropped; Landlock and seccomp need no_new_privs; the seccomp filter
// refuses mount calls, so it comes last. rs and prog are r.ruleset() and
// r.filter(), built beforehand (possibly on another thread). It returns
// the seccomp listener, or -1 when nothing observes.
func restrict(r *restriction, rs *ruleset, prog []bpf.Instruction) (listener int, err error) {
	return restrictWith(r, rs, prog, nil)
}

// restrictWith is restrict with beforeFilter called (when not nil) once
// the thread is in the command's Landlock domain and before the seccomp
// filter is loaded: the stage forks the hands there (hands.go). Where an
// enclosing filter holds the listener already, r.Filter is changed to what
// was loaded instead: no observer, no mediation, and AF_UNIX sockets
// refused where mediation would have confined them.
func restrictWith(r *restriction, rs *ruleset, prog []bpf.Instruction, beforeFilter func() error) (listener int, err error) {
	if r.InMountNS || len(r.Mounts) > 0 {
		if err := enterMountNS(!r.InMountNS); err != nil {
			return -1, err
		}
		for _, m := range r.Mounts {
			if err := protectPath(m); err != nil {
				return -1, err
			}
		}
	}
	if err := restrictThread(rs, r.AuditLog); err != nil {
		return -1, err
	}
	if beforeFilter != nil {
		if err := beforeFilter(); err != nil {
			return -1, err
		}
	}
	if !r.Seccomp {
		return -1, nil
	}
	listen := r.Filter.Observe || r.Filter.Mediate
	fd, err := loadFilter(prog, listen)
	if errors.Is(err, unix.EBUSY) && listen {
		// An enclosing filter has a listener already (the kernel allows
		// one): enforce the same filter without the observer, and refuse
		// AF_UNIX sockets rather than mediate them.
		r.Filter.Observe = false
		if r.Filter.Mediate {
			r.Filter.Mediate = false
			r.Filter.DenyUnix = true
		}
		return loadFilter(buildFilter(r.Filter), false)
	}
	return fd, err
}

// restrictThread sets no_new_privs on the calling thread, drops its
// capabilities and, with rs, puts it in a new Landlock domain made from
// rs: the Landlock part of restrict, shared with the hands' thread
// (handsLater).
func restrictThread(rs *ruleset, auditLog bool) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	// As root, or as the first process of a user namespace, the thread
	// holds capabilities the child must not inherit.
	if err := dropCapabilities(); err != nil {
		return err
	}
	if rs != nil {
		if err := restrictSelf(rs, auditLog); err != nil {
			return err
		}
	}
	return nil
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

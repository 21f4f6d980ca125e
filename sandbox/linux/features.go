//go:build linux

package linux

import (
	"errors"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Features is what this kernel and process can enforce.
type Features struct {
	Kernel      string `json:"kernel"`
	LandlockABI int    `json:"landlock_abi"`
	// LandlockErrata is the mask of Landlock errata the kernel reports
	// fixed (bit N-1 for erratum N; 0 on a kernel that predates the
	// query). See landlockErrata.
	LandlockErrata uint64 `json:"landlock_errata"`
	LandlockError  string `json:"landlock_error,omitempty"`
	Seccomp        bool   `json:"seccomp"`
	UserNotif      bool   `json:"seccomp_user_notification"`
	// UserNS: an unprivileged user namespace can be created.
	UserNS bool `json:"user_namespaces"`
	// MountNS: this process may create a mount namespace on a thread
	// (it holds CAP_SYS_ADMIN).
	MountNS bool `json:"mount_namespace"`
	// Root: wrun runs as uid 0; the child's capabilities are then dropped.
	Root bool `json:"root"`
	// NoMountAPI: the kernel lacks open_tree, move_mount or
	// mount_setattr (before Linux 5.12), which the stage's view is made
	// with. Probed by calling each with an invalid descriptor: ENOSYS
	// means missing.
	NoMountAPI bool `json:"no_mount_api,omitempty"`
	// Nested: wrun runs inside another wrun (WRUN_SANDBOX is set), whose
	// seccomp filter refuses mounts and user namespaces.
	Nested bool `json:"nested"`
	// ProcMasked: something is mounted inside /proc (a container's masked
	// paths), so a user namespace cannot mount a fresh /proc.
	ProcMasked bool `json:"proc_masked"`
	// Audit is filled by ProbeAudit for wrun doctor only: the launch path
	// asks the kernel itself, when it starts a run.
	Audit AuditStatus `json:"audit"`
}

// Probe asks the kernel what it supports. It has no side effect.
func Probe() Features {
	var f Features
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		f.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == 0:
		f.LandlockABI = int(abi)
		// A kernel that predates the query refuses the flag (EINVAL):
		// no erratum is known to be fixed there.
		errata, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_ERRATA)
		if errno == 0 {
			f.LandlockErrata = uint64(errata)
		}
	case errno == unix.ENOSYS:
		f.LandlockError = "the kernel was built without Landlock (CONFIG_SECURITY_LANDLOCK)"
	case errno == unix.EOPNOTSUPP:
		f.LandlockError = "Landlock is built in but not enabled (add landlock to the lsm= boot parameter)"
	default:
		f.LandlockError = errno.Error()
	}
	// seccomp(SECCOMP_GET_ACTION_AVAIL) tells which return actions exist.
	if actionAvail(unix.SECCOMP_RET_ERRNO) {
		f.Seccomp = true
		f.UserNotif = actionAvail(unix.SECCOMP_RET_USER_NOTIF)
	}
	f.Root = os.Geteuid() == 0
	f.MountNS = hasCapSysAdmin()
	f.UserNS = userNSAllowed()
	f.NoMountAPI = !mountAPI()
	f.ProcMasked = procMasked()
	// Inside another wrun its seccomp filter refuses new user namespaces
	// (and the child holds no capability): asking would only fail.
	if os.Getenv("WRUN_SANDBOX") != "" {
		f.Nested = true
		f.UserNS = false
	}
	return f
}

// Env is this machine's row of the support matrix.
func (f Features) Env() Env {
	return Env{Landlock: f.landlock(), Root: f.Root, SysAdmin: f.MountNS, UserNS: f.UserNS,
		MountAPI: !f.NoMountAPI, Nested: f.Nested, ProcMasked: f.ProcMasked}
}

// mountAPI reports whether the kernel has the mount calls the stage uses.
// Each is called with a descriptor that cannot be valid: a kernel that has
// the call fails with EBADF (or EINVAL), one that lacks it with ENOSYS.
func mountAPI() bool {
	for _, nr := range []uintptr{unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_MOUNT_SETATTR} {
		if _, _, errno := unix.Syscall6(nr, ^uintptr(0), 0, 0, 0, 0, 0); errno == unix.ENOSYS {
			return false
		}
	}
	return true
}

// procMasked reports whether anything is mounted below /proc other than
// binfmt_misc (which a fresh /proc allows, being on an empty directory).
func procMasked() bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := f[4]
		if strings.HasPrefix(mp, "/proc/") && mp != "/proc/sys/fs/binfmt_misc" {
			return true
		}
	}
	return false
}

// landlock is what the kernel's Landlock offers, as the table of kernel
// facts reads it.
func (f Features) landlock() landlockKernel {
	return landlockKernel{ABI: f.LandlockABI, Errata: f.LandlockErrata}
}

func actionAvail(action uint32) bool {
	const seccompGetActionAvail = 2
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, seccompGetActionAvail, 0, uintptr(unsafe.Pointer(&action)))
	return errno == 0
}

func hasCapSysAdmin() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[0].Effective&(1<<unix.CAP_SYS_ADMIN) != 0
}

// userNSAllowed reads the sysctls that gate unprivileged user namespaces;
// it does not create one.
func userNSAllowed() bool {
	read := func(p string) (string, bool) {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", !errors.Is(err, os.ErrNotExist)
		}
		return strings.TrimSpace(string(b)), true
	}
	if v, ok := read("/proc/sys/user/max_user_namespaces"); ok && v == "0" {
		return false
	}
	if v, ok := read("/proc/sys/kernel/unprivileged_userns_clone"); ok && v == "0" {
		return false
	}
	if v, ok := read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok && v == "1" {
		return false
	}
	return true
}

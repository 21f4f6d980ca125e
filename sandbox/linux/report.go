//go:build linux

package linux

import (
	"fmt"

	"github.com/wrun-dev/wrun/sandbox"
)

// Platform is the name of this enforcement, exported to the child as
// WRUN_SANDBOX.
const Platform = "landlock"

// Report says how the plan enforces its policy.
func (pl *Plan) Report() sandbox.Report {
	return sandbox.Report{
		Platform:   Platform,
		Summary:    pl.Summary(),
		ABI:        pl.ABI,
		Protection: pl.Protection,
		Gaps:       pl.Gaps,
		Notes:      pl.Notes,
		Degraded:   pl.Degraded,
		Observer:   pl.seccomp.Observe,
		// What NewPlan would choose: mounts wherever wrun can make them.
		MountProtection: pl.Features.MountNS || pl.Features.UserNS,
	}
}

// Doctor lists what this kernel and process can enforce, each with its
// consequence for wrun.
func Doctor(f Features) []sandbox.Feature {
	abi := f.LandlockABI
	feat := func(name string, ok bool, detail, yes, no string) sandbox.Feature {
		c := yes
		if !ok {
			c = no
		}
		return sandbox.Feature{Name: name, Available: ok, Detail: detail, Consequence: c}
	}
	abiDetail := func(n int) string { return fmt.Sprintf("Landlock ABI %d (%s)", n, abiKernel(n)) }
	lldetail := fmt.Sprintf("ABI %d", abi)
	if abi == 0 {
		lldetail = f.LandlockError
	}
	return []sandbox.Feature{
		{Name: "kernel", Available: true, Detail: f.Kernel, Consequence: "the kernel wrun enforces with"},
		feat("landlock", abi >= 1, lldetail,
			"file system access is restricted by the kernel",
			"wrun refuses to run (or runs degraded with --best-effort): nothing would restrict the file system"),
		feat("landlock.refer", abi >= 2, abiDetail(2),
			"files can be renamed across directories inside writable trees (git, cargo)",
			"renames across directories are always refused: git and cargo may fail"),
		feat("landlock.truncate", abi >= 3, abiDetail(3),
			"truncating files is restricted like writing them",
			"wrun refuses to run: the child could truncate any file it can read"),
		feat("landlock.tcp", abi >= 4, abiDetail(4),
			"network=off is enforced by Landlock TCP rules as well as seccomp",
			"network=off relies on the seccomp socket filter alone"),
		feat("landlock.ioctl_dev", abi >= 5, abiDetail(5),
			"ioctl on device files is restricted",
			"device ioctls are not restricted (terminal injection is still refused by seccomp)"),
		feat("landlock.scopes", abi >= 6, abiDetail(6),
			"the child cannot signal processes outside its sandbox nor reach abstract UNIX sockets outside it",
			"wrun refuses to run: the child could signal the user's other processes"),
		feat("landlock.audit", abi >= 7, abiDetail(7),
			"the kernel can write an audit record of each denial, which wrun reads to confirm what it reports",
			"denials leave no kernel audit record: they come from wrun's observer (and the child's output) alone"),
		feat("audit.read", abi >= 7 && f.Audit.Readable, auditDetail(abi, f.Audit, abiDetail(7)),
			"wrun reads the kernel's records of each run: denials are confirmed, and reads, executions and signals it does not observe are reported exactly",
			"wrun does not read audit records: write denials come from its observer, refused reads only from the child's output"),
		feat("landlock.unix_path", abi >= 9, abiDetail(9),
			"connect() to pathname UNIX sockets is confined by path",
			"with desktop=off, UNIX sockets cannot be created at all (socketpair still works), since connect() to the D-Bus bus or an ssh agent could not be confined"),
		feat("seccomp", f.Seccomp, "seccomp filter mode",
			"ptrace, io_uring, bpf, keyrings, terminal injection and, with network=off, non-UNIX sockets are refused",
			"wrun refuses to run: those calls would not be restricted"),
		feat("seccomp.user_notification", f.UserNotif, "SECCOMP_RET_USER_NOTIF",
			"an exact denial observer is possible",
			"denials can only be inferred from output"),
		feat("mount_namespace", f.MountNS, "CAP_SYS_ADMIN held by wrun",
			"paths inside writable trees (.git/config, .git/hooks) are protected by read-only bind mounts made on the launch thread; git works normally",
			"wrun needs a user namespace for those bind mounts (below)"),
		feat("user_namespaces", f.UserNS, "unprivileged user namespaces",
			"without CAP_SYS_ADMIN, protected paths are bind-mounted read-only by a second stage of wrun in a user namespace (one more exec, only under write grants)",
			"without CAP_SYS_ADMIN either, protected paths are enforced by carved Landlock rules: nothing can be created directly in the workspace root or .git under write grants"),
	}
}

func auditDetail(abi int, st AuditStatus, need string) string {
	if abi < 7 {
		return need + " writes the records"
	}
	return st.Detail
}

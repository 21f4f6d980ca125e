//go:build linux

package linux

import (
	"github.com/wrun-dev/wrun/sandbox"
)

// Platform is the name of this enforcement, exported to the child as
// WRUN_SANDBOX.
const Platform = "landlock"

// Report says how the plan enforces its policy.
func (pl *Plan) Report() sandbox.Report {
	k := pl.Features.landlock()
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
		UnixConfined:    k.rights().FS&llResolveUnix != 0,
		NetworkIPC:      k.networkIPC(pl.Policy.Network, pl.Policy.IPC, pl.Features.Seccomp),
	}
}

// Doctor lists what this kernel and process can enforce, each with its
// consequence for wrun.
func Doctor(f Features) []sandbox.Feature {
	feat := func(name string, ok bool, detail, yes, no string) sandbox.Feature {
		c := yes
		if !ok {
			c = no
		}
		return sandbox.Feature{Name: name, Available: ok, Detail: detail, Consequence: c}
	}
	k := f.landlock()
	logging := firstWith(llRights{Flags: llRestrictSelfLogNewExecOn})
	out := []sandbox.Feature{{Name: "kernel", Available: true, Detail: f.Kernel, Consequence: "the kernel wrun enforces with"}}
	out = append(out, k.doctor(f.LandlockError)...)
	return append(out,
		feat("audit.read", k.has(logging) && f.Audit.Readable, auditDetail(k.has(logging), f.Audit, abiName(logging.ABI)),
			"wrun reads the kernel's records of each run: denials are confirmed, and reads, executions and signals it does not observe are reported exactly",
			"wrun does not read audit records: write denials come from its observer, refused reads only from the child's output"),
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
	)
}

func auditDetail(logging bool, st AuditStatus, need string) string {
	if !logging {
		return need + " writes the records"
	}
	return st.Detail
}

//go:build linux

package linux

import (
	"strings"

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
		NetworkIPC:      pl.unixLine(k.networkIPC(pl.Policy.Network, pl.Policy.IPC, pl.Features.Seccomp)),
		Environment:     pl.env.Name(),
		Protections:     pl.env.Mechanisms(pl.Policy.Grant, pl.need),
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
	return append(append(out,
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
			"every run goes through the stage, in PID, IPC and mount namespaces of its own: a read-only view of the file system (writable paths bound back), protected paths bound read-only, its own /proc; the command cannot see, signal or outlive wrun",
			"wrun needs a user namespace for the stage (below)"),
		feat("user_namespaces", f.UserNS, "unprivileged user namespaces",
			"without CAP_SYS_ADMIN, the stage's namespaces are made inside a user namespace (one more exec of wrun per run)",
			"without CAP_SYS_ADMIN either, there is no stage: protected paths are carved Landlock rules (nothing new directly in the workspace root or .git under write grants), metadata outside the write scope is not restricted, and the command shares wrun's PID namespace (wrun explain names each)"),
		feat("mount_api", !f.NoMountAPI, "open_tree, move_mount, mount_setattr (Linux 5.12)",
			"the stage can make its view of the file system",
			"no stage: the view of the file system is made with these calls"),
		feat("proc_unmasked", !f.ProcMasked, "nothing mounted inside /proc",
			"the stage mounts a /proc of its own PID namespace",
			"a user namespace cannot mount a fresh /proc here: the sandbox keeps the host's, read-only, and Landlock keeps other processes out of reach"),
	), matrixRows(f.Env())...)
}

// matrixRows are doctor's rows for this machine's row of the support
// matrix: the row's name, then each grant's verdict (a writable tree
// holding a repository assumed).
func matrixRows(e Env) []sandbox.Feature {
	out := []sandbox.Feature{{Name: "matrix.row", Available: true, Detail: e.Name(), Consequence: "this machine's row of the support matrix (README, \"Support matrix\")"}}
	for _, g := range namedGrants() {
		rs := e.Refusals(g.Grant, Need{CreateBeside: true})
		f := sandbox.Feature{Name: "matrix." + g.Name, Available: len(rs) == 0, Detail: "--grant " + g.Name, Consequence: "runs in full"}
		if len(rs) > 0 {
			var parts []string
			for _, r := range rs {
				parts = append(parts, r.Protection.Key+": needs "+r.Why)
			}
			f.Consequence = "refused (exit 125; --best-effort runs DEGRADED): " + strings.Join(parts, "; ")
			if rem := e.Remedy(); rem != "" {
				f.Consequence += "; to hold it: " + rem
			}
		}
		out = append(out, f)
	}
	return out
}

func auditDetail(logging bool, st AuditStatus, need string) string {
	if !logging {
		return need + " writes the records"
	}
	return st.Detail
}

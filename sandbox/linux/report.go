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
		Platform:        Platform,
		Summary:         pl.Summary(),
		ABI:             pl.ABI,
		Protection:      pl.Protection,
		Gaps:            pl.Gaps,
		Notes:           pl.Notes,
		Degraded:        pl.Degraded,
		Observer:        pl.mediate && !pl.Options.NoObserve,
		Mediated:        pl.mediate,
		UnixConfined:    k.rights().FS&llResolveUnix != 0,
		SocketsMediated: pl.mediate && pl.Features.takesSockets(),
		NetworkIPC:      pl.unixLine(k.networkIPC(pl.Policy.Network, pl.Policy.IPC, pl.Features.Seccomp, pl.mediate)),
		Environment:     pl.Features.Name(),
		Protections:     mechanisms(pl.Holds),
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
	out = append(out,
		feat("audit.read", k.has(logging) && f.Audit.Readable, auditDetail(k.has(logging), f.Audit, abiName(logging.ABI)),
			"wrun reads the kernel's records of each run: denials are confirmed, and reads, executions and signals it does not see are reported exactly",
			"wrun does not read audit records: write denials come from its mediation, refused reads only from the child's output"),
		feat("seccomp", f.Seccomp, "seccomp filter mode",
			"ptrace, io_uring, bpf, keyrings, terminal injection and, with network=off, non-UNIX sockets are refused",
			"wrun refuses to run: those calls would not be restricted"),
		feat("seccomp.user_notification", f.UserNotif, "SECCOMP_RET_USER_NOTIF (Linux 5.0)",
			"wrun can receive the command's calls before they run: the mediation",
			"no mediation: see the matrix rows below"),
		feat("seccomp.addfd", f.AddFD, "SECCOMP_IOCTL_NOTIF_ADDFD (Linux 5.9)",
			"wrun can hand the command a descriptor it opened for it",
			"no mediation: an open wrun performs could not be handed back"),
		feat("seccomp.addfd_send", f.AddFDSend, "SECCOMP_ADDFD_FLAG_SEND (Linux 5.14)",
			"a descriptor is installed and the call answered in one step",
			"the descriptor is installed, then the call answered"),
		feat("seccomp.wait_killable", f.WaitKillable, "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (Linux 5.19)",
			"once wrun has a call, only a fatal signal interrupts the command's wait for it",
			"a call a signal restarts is answered from what wrun already did, never performed twice"),
		feat("pidfd_thread", f.PidfdThread, "pidfd_open(PIDFD_THREAD) (Linux 6.9)",
			"wrun takes a thread's own descriptor table",
			"wrun takes the descriptors of the caller's process (threads that unshare their table are rare)"),
		feat("pidfd_getfd", f.PidfdGetfd, "pidfd_getfd (Linux 5.6), allowed by the filters above wrun",
			"wrun takes the command's own sockets, so UNIX socket connects can be mediated",
			"UNIX sockets cannot be created below Landlock ABI 9 (a socket cannot be reopened through /proc; Docker's default profile allows pidfd_getfd with CAP_SYS_PTRACE)"),
		feat("proc_mem", f.ProcMem, "ptrace access to the command (Yama's kernel.yama.ptrace_scope below 2, or root)",
			"wrun reads a call's arguments from the command's memory",
			"no mediation: wrun cannot read the command's calls"),
	)
	if f.Nested {
		out = append(out, sandbox.Feature{Name: "listener", Available: false, Detail: "held by " + f.Outer,
			Consequence: "no mediation: the kernel allows one seccomp listener per filter chain"})
	}
	return append(out, doctorRows(f)...)
}

// doctorRows are doctor's rows for this machine's row of the support
// matrix: the row's name, then each grant's verdict (a writable tree
// holding a repository assumed).
func doctorRows(f Features) []sandbox.Feature {
	out := []sandbox.Feature{{Name: "matrix.row", Available: true, Detail: f.Name(), Consequence: "this machine's row of the support matrix (docs/linux.md, \"Support matrix\")"}}
	for _, g := range namedGrants() {
		rs := refused(Holds(f, g.Grant, Need{CreateBeside: true}))
		feat := sandbox.Feature{Name: "matrix." + g.Name, Available: len(rs) == 0, Detail: "--grant " + g.Name, Consequence: "runs in full"}
		if len(rs) > 0 {
			var parts []string
			for _, r := range rs {
				parts = append(parts, r.Key+": needs "+r.Refused)
			}
			feat.Consequence = "refused (exit 125; --best-effort runs DEGRADED): " + strings.Join(parts, "; ")
		}
		out = append(out, feat)
	}
	return out
}

func auditDetail(logging bool, st AuditStatus, need string) string {
	if !logging {
		return need + " writes the records"
	}
	return st.Detail
}

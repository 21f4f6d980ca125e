package escalate

import (
	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/sandbox"
)

// A refused git push under shell=verify (see verify.PushRefusedHelper):
// git's own refusal, read from the child's output, not the kernel's. The
// denial's Addr is the remote or URL. (The operations and rights the
// kernel refuses are access's: access.OpOpen, access.RightConnectTCP and
// the others.)
const (
	OpGitPush    = "git-push"
	RightGitPush = "git_push"
)

// A host wrun's proxy refused under network=hosts (proxy.Denial): the
// proxy's own decision on the name the client asked for. The denial's
// Addr is HOST:PORT.
const (
	OpConnectHost    = "connect-host"
	RightConnectHost = "connect_host"
)

// exactDenials turns what Check found missing for op into denials, one
// per Missing, marked exact. The caller fills in Time, PID and Program.
func exactDenials(op access.Op, missing []access.Missing) []sandbox.Denial {
	out := make([]sandbox.Denial, 0, len(missing))
	for _, m := range missing {
		out = append(out, sandbox.Denial{Op: op.Kind, Path: m.Path, Addr: m.Addr, Right: m.Right, Exact: true, Count: 1})
	}
	return out
}

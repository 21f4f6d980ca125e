package escalate

import (
	"math/bits"
	"strings"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// The operations an Op (and a sandbox.Denial's Op) can name: access's,
// under their names here (see access.OpOpen and the others).
const (
	OpOpen    = access.OpOpen
	OpCreate  = access.OpCreate
	OpMkdir   = access.OpMkdir
	OpMknod   = access.OpMknod
	OpSymlink = access.OpSymlink
	OpLink    = access.OpLink
	OpRename  = access.OpRename
	OpUnlink  = access.OpUnlink
	OpRmdir   = access.OpRmdir
	OpTrunc   = access.OpTrunc
	OpExec    = access.OpExec
	OpChmod   = access.OpChmod
	OpChown   = access.OpChown
	OpUtime   = access.OpUtime
	OpXattr   = access.OpXattr
	OpConnect = access.OpConnect
	OpBind    = access.OpBind
	OpSocket  = access.OpSocket
	OpSignal  = access.OpSignal
	OpIoctl   = access.OpIoctl
)

// Rights that are not file system rights, as they appear in Missing.Right
// and sandbox.Denial.Right: access's, under their names here (see
// access.RightConnectTCP and the others). File system rights use
// policy.Access names ("write_file", "make_reg", ...).
const (
	RightConnectTCP      = access.RightConnectTCP
	RightBindTCP         = access.RightBindTCP
	RightSocketInet      = access.RightSocketInet
	RightConnectUDP      = access.RightConnectUDP
	RightBindUDP         = access.RightBindUDP
	RightSocketUnix      = access.RightSocketUnix
	RightConnectUnix     = access.RightConnectUnix
	RightConnectAbstract = access.RightConnectAbstract
	RightBindAbstract    = access.RightBindAbstract
	RightSignal          = access.RightSignal
	RightMetadata        = access.RightMetadata
	RightSetID           = access.RightSetID
	RightPriority        = access.RightPriority
	RightTerminal        = access.RightTerminal
	RightSendCredentials = access.RightSendCredentials
)

// A refused git push under shell=verify (see verify.PushRefusedHelper):
// git's own refusal, read from the child's output, not the kernel's. The
// denial's Addr is the remote or URL.
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

// Op is one operation of the child, as the observer sees it or as inferred
// from output: an access.Op, with Denials.
type Op access.Op

// Missing is one right an operation lacks (see access.Missing).
type Missing = access.Missing

// Denials turns what Check found missing into denials, one per Missing,
// marked exact. The caller fills in Time, PID and Program.
func (o Op) Denials(missing []Missing) []sandbox.Denial {
	out := make([]sandbox.Denial, 0, len(missing))
	for _, m := range missing {
		out = append(out, sandbox.Denial{Op: o.Kind, Path: m.Path, Addr: m.Addr, Right: m.Right, Exact: true, Count: 1})
	}
	return out
}

// dirRights are the rights checked on the parent directory of the entry an
// operation names.
const dirRights = access.DirRights

// writeRights are the rights that change the file system.
const writeRights = access.WriteRights

// ParseRights reads a comma-joined list of right names ("write_file",
// "make_reg,refer"). Names that are not file system rights (connect_tcp)
// are ignored: they come back as 0.
func ParseRights(s string) policy.Access {
	var a policy.Access
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		for i := 0; i < bits.Len64(uint64(policy.All)); i++ {
			bit := policy.Access(1) << i
			if n := bit.Names(); len(n) == 1 && n[0] == name {
				a |= bit
			}
		}
	}
	return a
}

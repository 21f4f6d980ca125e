package escalate

import (
	"math/bits"
	"strings"

	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// The operations an Op (and a sandbox.Denial's Op) can name.
const (
	// OpOpen opens an existing file or directory; Op.Rights says for what
	// (read_file, write_file, truncate, execute; read_file on a directory
	// means listing it).
	OpOpen = "open"
	// OpCreate creates a regular file (open with O_CREAT of a missing
	// path, creat, mknod S_IFREG).
	OpCreate  = "create"
	OpMkdir   = "mkdir"
	OpMknod   = "mknod"
	OpSymlink = "symlink"
	OpLink    = "link"
	OpRename  = "rename"
	OpUnlink  = "unlink"
	OpRmdir   = "rmdir"
	OpTrunc   = "truncate"
	OpExec    = "exec"
	// OpChmod, OpChown, OpUtime and OpXattr change metadata, which Landlock
	// does not control; only a read-only mount refuses them.
	OpChmod = "chmod"
	OpChown = "chown"
	OpUtime = "utime"
	OpXattr = "setxattr"
	// OpConnect and OpBind use Op.Addr: "HOST:PORT" for TCP,
	// "udp:HOST:PORT" for UDP, "unix:/path" for a pathname UNIX socket,
	// "unix:@name" for an abstract one.
	OpConnect = "connect"
	OpBind    = "bind"
	// OpSocket creates a socket; Op.Addr is the family ("inet", "inet6",
	// "unix", "netlink", ...).
	OpSocket = "socket"
	// OpSignal sends a signal (kill, tkill, tgkill); seen only in the
	// kernel's audit records.
	OpSignal = "signal"
	// OpIoctl is an ioctl on a device; seen only in the kernel's audit
	// records.
	OpIoctl = "ioctl"
)

// Rights that are not file system rights, as they appear in Missing.Right
// and sandbox.Denial.Right. File system rights use policy.Access names
// ("write_file", "make_reg", ...).
const (
	RightConnectTCP = "connect_tcp"
	RightBindTCP    = "bind_tcp"
	// RightSocketInet is creating a socket of any family but AF_UNIX.
	RightSocketInet = "socket_inet"
	// RightSocketUnix is creating an AF_UNIX socket, refused under
	// desktop=off where the kernel cannot confine UNIX sockets (Landlock
	// ABI < 9).
	RightSocketUnix = "socket_unix"
	// RightConnectUnix is connecting to a pathname UNIX socket.
	RightConnectUnix = "connect_unix"
	// RightConnectAbstract is connecting to an abstract UNIX socket bound
	// outside the sandbox.
	RightConnectAbstract = "connect_abstract_unix"
	// RightSignal is sending a signal to a process outside the sandbox
	// (Landlock scope, ABI 6); Denial.Addr names it ("pid 42 (sleep)").
	RightSignal = "signal"
	// RightMetadata is changing a file's mode, owner, times or extended
	// attributes, refused only on a read-only mount.
	RightMetadata = "change_metadata"
)

// Op is one operation of the child, as the observer sees it or as inferred
// from output. Paths are absolute and clean, with symbolic links resolved
// (the observer resolves them relative to the calling process's dirfd or
// working directory).
type Op struct {
	// Kind is one of the Op* constants.
	Kind string
	// Path is the path the call names; for rename and link, the source.
	Path string
	// Dest is the new name of rename and link.
	Dest string
	// Dir is set when the object is (or becomes) a directory: rename,
	// unlink (as rmdir), link, open (listing).
	Dir bool
	// Replace is set when rename or link replaces an existing Dest.
	Replace bool
	// Rights are what open and create ask for (read_file, write_file,
	// truncate, execute; zero means read_file for open, write_file for
	// create) and which node mknod makes (make_fifo, make_sock, make_char,
	// make_block; zero means make_reg).
	Rights policy.Access
	// Addr is what connect, bind and socket name (see OpConnect, OpSocket).
	Addr string
}

// Missing is one right an operation lacks. For a directory right
// (make_*, remove_*, refer) the right is checked on the parent directory
// of Path; Path is still the entry the operation names.
type Missing struct {
	Path string
	Addr string
	// Right names the missing right(s), comma-joined.
	Right string
	// Access holds the missing file system rights (0 for sockets).
	Access policy.Access
	// Reason says in a few words why, when it is not simply "no rule
	// grants it": "read-only mount", "mount point", "would gain rights".
	Reason string
}

// Denials turns what Check found missing into denials, one per Missing,
// marked exact. The observer fills in Time, PID and Program.
func (o Op) Denials(missing []Missing) []sandbox.Denial {
	out := make([]sandbox.Denial, 0, len(missing))
	for _, m := range missing {
		out = append(out, sandbox.Denial{Op: o.Kind, Path: m.Path, Addr: m.Addr, Right: m.Right, Exact: true, Count: 1})
	}
	return out
}

// dirRights are the rights checked on the parent directory of the entry an
// operation names.
const dirRights = policy.MakeChar | policy.MakeDir | policy.MakeReg | policy.MakeSock |
	policy.MakeFifo | policy.MakeBlock | policy.MakeSym | policy.RemoveDir | policy.RemoveFile | policy.Refer

// writeRights are the rights that change the file system.
const writeRights = policy.Write | policy.MakeChar | policy.MakeBlock

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

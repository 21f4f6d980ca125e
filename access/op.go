package access

import "github.com/wrun-dev/wrun/policy"

// The operations an Op (and a sandbox.Denial's Op) can name.
const (
	// OpOpen opens an existing file or directory; Op.Rights says for what
	// (read_file, write_file, truncate, execute; read_file on a directory
	// means listing it).
	OpOpen = "open"
	// OpCreate creates a regular file (open with O_CREAT of a missing
	// path, creat, mknod S_IFREG).
	OpCreate = "create"
	// OpMkdir creates a directory.
	OpMkdir = "mkdir"
	// OpMknod creates a special file; Op.Rights says which.
	OpMknod = "mknod"
	// OpSymlink creates a symbolic link at Op.Path.
	OpSymlink = "symlink"
	// OpLink makes a hard link Op.Dest to Op.Path.
	OpLink = "link"
	// OpRename moves Op.Path to Op.Dest.
	OpRename = "rename"
	// OpUnlink removes a non-directory (a directory when Op.Dir is set).
	OpUnlink = "unlink"
	// OpRmdir removes a directory.
	OpRmdir = "rmdir"
	// OpTrunc truncates a file by path (truncate(2)).
	OpTrunc = "truncate"
	// OpExec executes a file.
	OpExec = "exec"
	// OpChmod, OpChown, OpUtime and OpXattr change metadata, which Landlock
	// does not control: an exactly protected path refuses them, and where
	// wrun mediates they are made only inside the write scope.
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
	// kernel's audit records, not judged by the model.
	OpSignal = "signal"
	// OpIoctl is an ioctl on a device; seen only in the kernel's audit
	// records, not judged by the model.
	OpIoctl = "ioctl"
)

// Rights that are not file system rights, as they appear in Missing.Right
// and sandbox.Denial.Right. File system rights use policy.Access names
// ("write_file", "make_reg", ...).
const (
	// RightConnectTCP is connecting a TCP socket.
	RightConnectTCP = "connect_tcp"
	// RightBindTCP is binding (listening on) a TCP port.
	RightBindTCP = "bind_tcp"
	// RightConnectUDP is sending to (or connecting) a UDP or ping
	// socket's address, refused under network=loopback and hosts unless
	// a socket of the sandbox's is bound there; Addr is "udp:HOST:PORT".
	RightConnectUDP = "connect_udp"
	// RightBindUDP is binding a UDP socket, refused under
	// network=loopback and hosts to any address but loopback.
	RightBindUDP = "bind_udp"
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
	// RightSetID is giving a file the setuid or setgid bit (chmod, or
	// creating it with them): refused under every grant, since the file
	// would run as its owner or group for any user after the run. (A
	// directory's setgid bit, which only passes its group on, is made.)
	RightSetID = "set_id"
	// RightSendCredentials is sending SCM_CREDENTIALS on a UNIX socket
	// where wrun mediates them (Landlock ABI < 9): wrun sends for the
	// caller, and the kernel accepts only the sender's own pid.
	// desktop=on (no mediation) or a kernel with ABI 9 lifts it.
	RightSendCredentials = "send_credentials"
	// RightBindAbstract is binding a chosen abstract UNIX name: outside
	// clients look for well-known ones there (X11), so a sandbox may not
	// claim one (autobind is allowed).
	RightBindAbstract = "bind_abstract_unix"
	// RightTerminal is opening a pseudo-terminal the sandbox did not make
	// (another session's: its keystrokes).
	RightTerminal = "open_terminal"
	// RightPriority is changing the priority, scheduling or resource
	// limits of a process outside the sandbox; Denial.Addr names it.
	RightPriority = "set_priority"
	// RightMetadata is changing a file's mode, owner, times or extended
	// attributes: refused on an exactly protected path and, where wrun
	// mediates, outside the write scope.
	RightMetadata = "change_metadata"
)

// DirRights are the rights checked on the parent directory of the entry
// an operation names.
const DirRights = policy.MakeChar | policy.MakeDir | policy.MakeReg | policy.MakeSock |
	policy.MakeFifo | policy.MakeBlock | policy.MakeSym | policy.RemoveDir | policy.RemoveFile | policy.Refer

// WriteRights are the rights that change the file system: what an
// exactly protected path refuses.
const WriteRights = policy.Write | policy.MakeChar | policy.MakeBlock

// nodeRights are the rights that make a node of each kind.
const nodeRights = policy.MakeReg | policy.MakeDir | policy.MakeSym | policy.MakeFifo |
	policy.MakeSock | policy.MakeChar | policy.MakeBlock

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
	// create), which node mknod makes (make_fifo, make_sock, make_char,
	// make_block; zero means make_reg), and which kind of node rename and
	// link move (make_sym, make_fifo, ...; zero means make_dir with Dir,
	// make_reg without).
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
	// Access holds the missing file system rights (0 for sockets and
	// metadata).
	Access policy.Access
	// Reason says in a few words why, when it is not simply "no rule
	// grants it": "read-only mount", "mount point", "would gain rights
	// (truncate)", "the kernel cannot grant refer".
	Reason string
	// Cause is what decided it.
	Cause Cause
}

// CauseKind names what decided that a right is missing.
type CauseKind string

// The kinds of Cause.
const (
	// CauseNoRule: no rule grants the right where it is checked. Cause.Path
	// is the deepest rule that covers that place (its rights lack it), ""
	// when none does.
	CauseNoRule CauseKind = "no-rule"
	// CauseHole: the place lies in a hole (a hidden path, or a protected
	// path carved out of a writable rule) that withholds the right.
	// Cause.Path is the hole.
	CauseHole CauseKind = "hole"
	// CauseCarved: the place is a directory above a hole, which takes the
	// hole's withheld rights from the directories on the way down to it
	// (or an entry made in such a directory after the rules were carved).
	// Cause.Path is the hole, when one is known.
	CauseCarved CauseKind = "carved"
	// CauseReadOnlyMount: the place lies in an exactly protected path
	// (the name is from the read-only bind mounts that once held them).
	// Cause.Path is the protected path.
	CauseReadOnlyMount CauseKind = "read-only-mount"
	// CauseMountPoint: the entry is an exactly protected path or a pinned
	// directory, which cannot be removed or replaced (as a mount point
	// cannot, whence the name). Cause.Path is that path.
	CauseMountPoint CauseKind = "mount-point"
	// CauseGain: a move across directories would give the moved entry
	// rights it does not have where it is (Landlock refuses it, EXDEV).
	// Cause.Path is the destination directory.
	CauseGain CauseKind = "refer-gain"
	// CauseKernel: the kernel restricts file system access but cannot
	// grant the right at all (refer before Landlock ABI 2).
	CauseKernel CauseKind = "kernel"
	// CauseNetwork: the policy's network is off.
	CauseNetwork CauseKind = "network"
	// CauseIPC: the policy's IPC rules refuse it (UNIX sockets outside
	// the sandbox).
	CauseIPC CauseKind = "ipc"
)

// Cause says what decided that a right is missing: the rule, hole or mount
// and its own words.
type Cause struct {
	Kind CauseKind
	// Path is the rule, hole or mount that decided, when there is one.
	Path string
	// Why is that policy entry's own reason, when it has one.
	Why string
}

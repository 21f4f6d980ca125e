package escalate

import (
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// inferPattern is one way programs report a refused act. Named groups:
// prog (the program, when the line names it), verb (what it tried, mapped
// through verbOps), path, dest, net, host, port, addr, errno.
type inferPattern struct {
	name string
	re   *regexp.Regexp
	// op is the operation when the pattern fixes it; "" takes it from verb.
	op string
	// pending marks a pattern that names a path without saying it was
	// refused (cargo's "failed to write X"): a later "(os error 13)" line
	// completes it.
	pending bool
}

const refusal = `(?P<errno>[Pp]ermission denied|[Oo]peration not permitted|[Rr]ead-only file system)`

// inferPatterns are tried in order on each line; the first that matches
// wins. They come from what coreutils, dash and bash, Go, Rust and cargo,
// git, npm and node, Python, ssh and curl print.
func inferPatterns() []inferPattern {
	q := `['‘"` + "`" + `]?`  // an optional opening quote
	eq := `['’"` + "`" + `]?` // an optional closing quote
	return []inferPattern{
		// git push under verify: wrun's own refusal (the git shim or the
		// remote helper verify sends pushes to), or git's when it finds
		// no such helper.
		{name: "git-push", op: OpGitPush, re: regexp.MustCompile(`^wrun: git push(?: to (?P<addr>\S+))? refused \(` + pushHelper + `\)|'remote-` + pushHelper + `' is not a git command`)},
		// git
		{name: "git-config-lock", op: opWrite, re: regexp.MustCompile(`could not (?:lock|write) config file ` + q + `(?P<path>[^'’"` + "`" + `]+?)` + eq + `: ` + refusal)},
		{name: "git-unable-create", op: access.OpCreate, re: regexp.MustCompile(`[Uu]nable to create (?:file )?` + q + `(?P<path>[^'’"` + "`" + `]+?)` + eq + `: ` + refusal)},
		{name: "git-create-dir", op: access.OpMkdir, re: regexp.MustCompile(`cannot create directory at ` + q + `(?P<path>[^'’"` + "`" + `]+?)` + eq + `: ` + refusal)},
		{name: "git-objects", op: access.OpCreate, re: regexp.MustCompile(`insufficient permission for adding an object to repository database (?P<path>\S+)`)},
		// node and npm: "EACCES: permission denied, mkdir '/x'"
		{name: "node", re: regexp.MustCompile(`E(?:ACCES|PERM|ROFS): [a-z -]+, (?P<verb>[a-z]+) '(?P<path>[^']+)'(?: -> '(?P<dest>[^']+)')?`)},
		// Python: "PermissionError: [Errno 13] Permission denied: '/x'"
		{name: "python", re: regexp.MustCompile(`(?:PermissionError|OSError): \[Errno (?:1|13|30)\] [^:]+: '(?P<path>[^']+)'(?: -> '(?P<dest>[^']+)')?`)},
		// Go: "dial tcp 1.2.3.4:443: connect: operation not permitted"
		{name: "go-dial", op: access.OpConnect, re: regexp.MustCompile(`dial (?P<net>tcp[46]?|udp[46]?|unix) (?P<addr>\S+?): (?:socket|connect): (?i:permission denied|operation not permitted)`)},
		// coreutils: "touch: cannot touch '/x': Permission denied",
		// "mv: cannot move 'a' to 'b': ...", dash's "sh: 1: cannot create /x: ..."
		{name: "coreutils", re: regexp.MustCompile(`^(?P<prog>[\w.+-]+): (?:\d+: |line \d+: )?(?:cannot|can't|failed to|unable to) (?P<verb>touch|create regular file|create directory|create symbolic link|create hard link|create fifo|create special file|create|make directory|remove|unlink|open|move|rename|overwrite|write to|write|truncate|lock) ` + q + `(?P<path>[^'’"` + "`" + `]+?)` + eq + `(?: to ` + q + `(?P<dest>[^'’"` + "`" + `]+?)` + eq + `)?: ` + refusal)},
		{name: "coreutils-meta", re: regexp.MustCompile(`^(?P<prog>[\w.+-]+): (?P<verb>changing permissions of|changing ownership of|setting times of) ` + q + `(?P<path>[^'’"` + "`" + `]+?)` + eq + `: ` + refusal)},
		// Go: "open /x: permission denied", "rename /a /b: ..."
		{name: "go", re: regexp.MustCompile(`(?:^|[\s:])(?P<verb>open|openat|creat|mkdir|mkdirat|remove|unlinkat|rmdir|rename|renameat|symlink|link|chmod|chown|truncate|write) (?P<path>[^\s'‘’"` + "`" + `]\S*?)(?: (?P<dest>/\S+?))?: ` + refusal)},
		// ssh and curl name host and port.
		{name: "ssh", op: access.OpConnect, re: regexp.MustCompile(`connect to host (?P<host>\S+) port (?P<port>\d+): (?i:permission denied|operation not permitted)`)},
		{name: "curl", op: access.OpConnect, re: regexp.MustCompile(`Failed to connect to (?P<host>\S+) port (?P<port>\d+)[^:]*: (?i:permission denied|operation not permitted)`)},
		// A failed name lookup: under network=off no socket but UNIX opens.
		{name: "resolve", op: access.OpConnect, re: regexp.MustCompile(`(?:Could not resolve host:|Couldn't resolve host name.*host:|getaddrinfo E[A-Z_]+) (?P<host>[A-Za-z0-9][A-Za-z0-9.-]*[A-Za-z0-9])`)},
		// cargo and Rust: "failed to write `/x`", completed by a later
		// "Permission denied (os error 13)".
		{name: "rust", pending: true, re: regexp.MustCompile(`failed to (?P<verb>write|open|create directory|create|remove|rename|lock|copy|link|hard link|symlink|set permissions on)(?: file)?:? ` + q + `(?P<path>/[^'’"` + "`" + `\s]+|\.{1,2}/[^'’"` + "`" + `\s]+)` + eq)},
		// Last: "prog: PATH: Permission denied" (cat, tee, a shell's
		// redirection) says nothing of the operation.
		{name: "plain", re: regexp.MustCompile(`^(?P<prog>[\w.+-]+): (?:\d+: |line \d+: )?(?P<path>/[^:]+|\.{0,2}/?[^:\s]+): ` + refusal + `$`)},
	}
}

// Operations only the heuristics use: a write to a file that may or may
// not exist yet, and listing a directory.
const (
	opWrite = "write?"
	opList  = "list?"
)

// verbOps maps what a message says was tried to an operation; "" leaves
// it open (the model picks the likeliest denied one).
func verbOps(verb string) string {
	switch verb {
	case "touch", "create regular file", "create", "creat", "overwrite":
		return access.OpCreate
	case "create directory", "make directory", "mkdir", "mkdirat":
		return access.OpMkdir
	case "create symbolic link", "symlink":
		return access.OpSymlink
	case "create hard link", "link", "hard link":
		return access.OpLink
	case "create fifo", "create special file":
		return access.OpMknod
	case "remove", "unlink", "unlinkat":
		return access.OpUnlink
	case "rmdir":
		return access.OpRmdir
	case "move", "rename", "renameat":
		return access.OpRename
	case "write to", "write", "lock", "copy":
		return opWrite
	case "truncate":
		return access.OpTrunc
	case "changing permissions of", "chmod", "set permissions on":
		return access.OpChmod
	case "changing ownership of", "chown":
		return access.OpChown
	case "setting times of", "utime":
		return access.OpUtime
	case "scandir", "opendir":
		return opList
	}
	return ""
}

// readers are programs whose refused opens are reads.
var readers = []string{"cat", "less", "more", "head", "tail", "grep", "rg", "wc", "sort", "diff", "cmp",
	"file", "od", "xxd", "md5sum", "sha1sum", "sha256sum", "ls", "find", "du", "stat", "jq", "strings"}

// Infer reads the child's output for refusals it reported (EACCES, EPERM,
// EROFS naming a path or address) and returns them as inferred denials,
// keeping only those the policy would indeed deny, so that an ordinary
// permission error (a file mode, a missing directory) is not blamed on
// the sandbox. Relative paths are taken from the child's starting
// directory. Program is the line's program when it names one, else the
// command's.
func (a *Analyzer) Infer(lines []string) []sandbox.Denial {
	pats := inferPatterns()
	type pendingPath struct {
		verb, path string
		line       int
	}
	var pending *pendingPath
	var out []sandbox.Denial
	for n, line := range lines {
		line = strings.TrimRight(line, "\r\n")
		matched := false
		for _, p := range pats {
			g := groups(p.re, line)
			if g == nil {
				continue
			}
			matched = true
			if p.pending {
				pending = &pendingPath{verb: g["verb"], path: g["path"], line: n}
				if !sameLineRE().MatchString(line) {
					break
				}
				// Refused on the same line.
				pending = nil
			}
			if d, ok := a.inferred(p, g, g["prog"]); ok {
				out = append(out, d)
			}
			break
		}
		if matched || pending == nil {
			continue
		}
		if osErrorRE().MatchString(line) && n-pending.line <= 8 {
			g := map[string]string{"verb": pending.verb, "path": pending.path}
			if d, ok := a.inferred(inferPattern{name: "rust"}, g, ""); ok {
				out = append(out, d)
			}
			pending = nil
		} else if n-pending.line > 8 {
			pending = nil
		}
	}
	return Dedup(out)
}

var (
	osErrorRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:Permission denied|Operation not permitted|Read-only file system) \(os error (?:1|13|30)\)`)
	})
	sameLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(refusal) })
)

// groups returns the named groups of re's first match in s ("" holds the
// whole match), or nil.
func groups(re *regexp.Regexp, s string) map[string]string {
	m := re.FindStringSubmatch(s)
	if m == nil {
		return nil
	}
	out := map[string]string{"": m[0]}
	for i, name := range re.SubexpNames() {
		if name != "" {
			out[name] = m[i]
		}
	}
	return out
}

// inferred turns one match into a denial the policy would make, if any.
func (a *Analyzer) inferred(p inferPattern, g map[string]string, prog string) (sandbox.Denial, bool) {
	if prog == "" || prog == "error" || prog == "fatal" || prog == "warning" {
		if argv := a.argv(); len(argv) > 0 {
			prog = filepath.Base(argv[0])
		}
	}
	op := p.op
	if op == "" {
		op = verbOps(g["verb"])
	}
	if op == OpGitPush {
		return a.gitPush(g["addr"])
	}
	if op == access.OpConnect {
		addr := g["addr"]
		switch {
		case strings.HasPrefix(g["net"], "unix"):
			addr = "unix:" + addr
		case strings.HasPrefix(g["net"], "udp"):
			addr = "udp:" + addr
		case g["host"] != "" && g["port"] != "":
			addr = net.JoinHostPort(strings.Trim(g["host"], "[]"), g["port"])
		case g["host"] != "":
			addr = g["host"]
		}
		o := access.Op{Kind: access.OpConnect, Addr: addr}
		return a.first(prog, []access.Op{o})
	}
	path := a.absPath(g["path"])
	if path == "" {
		return sandbox.Denial{}, false
	}
	dest := a.absPath(g["dest"])
	var cands []access.Op
	switch op {
	case access.OpCreate:
		if p.name == "git-objects" {
			path = filepath.Join(path, "tmp_obj_XXXXXX")
		}
		cands = []access.Op{{Kind: access.OpCreate, Path: path}, {Kind: access.OpOpen, Path: path, Rights: policy.WriteFile}}
	case opWrite:
		cands = a.writeOrCreate(path)
	case opList:
		cands = []access.Op{{Kind: access.OpOpen, Path: path, Dir: true}}
	case access.OpMkdir, access.OpMknod, access.OpUnlink, access.OpRmdir, access.OpTrunc, access.OpChmod, access.OpChown, access.OpUtime:
		cands = []access.Op{{Kind: op, Path: path}}
		if op == access.OpUnlink {
			cands = append(cands, access.Op{Kind: access.OpUnlink, Path: path, Dir: true})
		}
	case access.OpSymlink, access.OpLink:
		// "symlink OLD NEW" (Go) names the new link last.
		if dest != "" {
			path = dest
		}
		if op == access.OpSymlink {
			cands = []access.Op{{Kind: access.OpSymlink, Path: path}}
		} else {
			cands = []access.Op{{Kind: access.OpCreate, Path: path}}
		}
	case access.OpRename:
		if dest == "" {
			cands = []access.Op{{Kind: access.OpUnlink, Path: path}}
			break
		}
		cands = []access.Op{{Kind: access.OpRename, Path: path, Dest: dest}, {Kind: access.OpRename, Path: path, Dest: dest, Dir: true}}
	default:
		// The message does not say. A refused read where reading is
		// refused (a hidden path) or by a program that only reads; else
		// a write, or the creation of a missing file.
		read := access.Op{Kind: access.OpOpen, Path: path, Rights: policy.ReadFile}
		if slices.Contains(readers, prog) || a.WouldDeny(read) {
			cands = []access.Op{read}
			break
		}
		cands = a.writeOrCreate(path)
	}
	return a.first(prog, cands)
}

// writeOrCreate are the candidates for a refused write to path: writing
// the file if it exists (or existence is unknown), else creating it.
func (a *Analyzer) writeOrCreate(path string) []access.Op {
	write := access.Op{Kind: access.OpOpen, Path: path, Rights: policy.WriteFile}
	create := access.Op{Kind: access.OpCreate, Path: path}
	if a.exists(path) {
		return []access.Op{write, create}
	}
	return []access.Op{create, write}
}

// first returns the denial of the first candidate the policy denies.
func (a *Analyzer) first(prog string, cands []access.Op) (sandbox.Denial, bool) {
	for _, o := range cands {
		if miss := a.Check(o); len(miss) > 0 {
			d := exactDenials(o, miss[:1])[0]
			d.Exact = false
			d.Program = prog
			return d, true
		}
	}
	return sandbox.Denial{}, false
}

// absPath makes a reported path absolute against the child's starting
// directory; "" for nothing usable.
func (a *Analyzer) absPath(p string) string {
	p = strings.TrimSpace(p)
	if p == "" || strings.ContainsAny(p, "\x00\n") {
		return ""
	}
	if strings.HasPrefix(p, "~/") && a.facts.Home != "" {
		p = filepath.Join(a.facts.Home, p[2:])
	}
	if !filepath.IsAbs(p) {
		cwd := a.p.Cwd
		if cwd == "" {
			cwd = a.p.Workdir
		}
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

// pushHelper is verify.PushRefusedHelper (escalate does not import verify).
const pushHelper = "wrun-verify-refuses-push"

// PushRefused is the denial of a push to dest that wrun's git shim or
// refusing remote helper reported (verify.ReadPushRefusals), whatever the
// command did with git's output; false where no such refusal is set up.
func (a *Analyzer) PushRefused(dest string) (sandbox.Denial, bool) {
	d, ok := a.gitPush(dest)
	d.Exact = ok // wrun's own code refused it
	return d, ok
}

// gitPush is the denial of a push git refused because verify sent it to
// pushHelper: only under shell=verify with the workspace not writable,
// where wrun sets that up (elsewhere the message is the child's own).
func (a *Analyzer) gitPush(dest string) (sandbox.Denial, bool) {
	if a.p.Grant.Shell != grant.ShellVerify || a.p.Grant.Files == grant.FilesWrite {
		return sandbox.Denial{}, false
	}
	if dest == "" {
		dest = "the default remote"
	}
	return sandbox.Denial{Op: OpGitPush, Addr: dest, Right: RightGitPush, Program: "git", Count: 1}, true
}

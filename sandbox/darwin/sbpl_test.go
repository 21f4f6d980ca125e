package darwin

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// This file is an evaluator of the subset of SBPL (Seatbelt's profile
// language) that Generate writes, so that what a profile allows can be
// tested without a Mac. It states the semantics it assumes. Where peers'
// reports from real Macs disagree, or leave a question open, it models
// each answer (a reading) and a profile must give the same decision under
// every one of them:
//
//   - Precedence. Reading "last match": the statements are evaluated in
//     order and the last one that matches decides. Reading "specific
//     first": a statement naming the operation itself decides before any
//     statement naming a wildcard that covers it (file-write-data before
//     file-write*, that before file*, that before default), the last
//     match deciding among statements of the same rank. Several projects
//     report the second from runs on real Macs (a later (deny file-read*)
//     did not take back an earlier (allow file-read-data); a wildcard
//     allow did not override a specific deny).
//   - (subpath P) while P itself is being created: Apple's documentation
//     says subpath matches P and everything beneath it; Codex's profile
//     adds (literal P) beside it because, it says, subpath alone left
//     creating P open. Both readings are modelled.
//   - (deny default) is said (in Firefox's and Chromium's profiles) not
//     to cover process-info*, nvram*, iokit-get-properties and
//     file-map-executable: the evaluator allows those when no statement
//     matches, so a profile must deny what it means to deny of them.
//
// The rest, the same under every reading:
//
//   - A statement is (allow|deny OPERATION... FILTER... MODIFIER...). An
//     operation ending in * names every operation it prefixes; default
//     names every one. Several filters in one statement match when any of
//     them does; a statement without filters always matches.
//   - Path filters, on the path the operation names (a file, or the path
//     of a UNIX socket connected to or bound): (literal P) exactly P;
//     (subpath P) P and everything beneath it, component-wise; (regex
//     #"RE"). They never match an operation without a path (a mach
//     lookup, an IP connect, a sysctl).
//   - (require-all F...), (require-any F...), (require-not F).
//   - (vnode-type DIRECTORY): the object is a directory; (extension
//     "NAME"): the object carries that sandbox extension (a pseudo-terminal
//     made through /dev/ptmx carries com.apple.sandbox.pty); (ioctl-command
//     NAME): the ioctl request; (target same-sandbox): the signal's or
//     process-info's target is in this sandbox; (global-name N) and
//     (local-name N): a mach service; (ipc-posix-name N) and
//     (ipc-posix-name-prefix P): a POSIX IPC name; (sysctl-name N) and
//     (sysctl-name-prefix P): a sysctl; (preference-domain D): a
//     preferences domain; (socket-domain AF_X) and (socket-protocol N): a
//     socket being made; (control-name N): a kernel control socket
//     connected to; (remote ip): any IP destination; (local ip): binding
//     or accepting on an IP address. (param "NAME") is the value
//     sandbox-exec got as -D NAME=VALUE (undefined: an error).
//   - (with message "M") only tags the report of a denial.
//
// Anything else makes the evaluator fail: a generator change that leaves
// the subset shows up here.
//
// One more property is required of every decision, under every reading
// (decide checks it): a request that is denied matches no allow
// statement. A protection then never depends on a deny outranking an
// allow, which is the question the readings disagree on.

// sexp is one parsed element: an atom (symbol, string or regex) or a list.
type sexp struct {
	list  []sexp
	isLst bool
	atom  string
	kind  byte // 's' symbol, '"' string, '#' regex
}

func parseSBPL(text string) ([]sexp, error) {
	var stack [][]sexp
	var top []sexp
	i := 0
	push := func(e sexp) {
		if len(stack) == 0 {
			top = append(top, e)
			return
		}
		stack[len(stack)-1] = append(stack[len(stack)-1], e)
	}
	readString := func() (string, error) {
		var b strings.Builder
		i++ // opening quote
		for i < len(text) {
			c := text[i]
			switch c {
			case '"':
				i++
				return b.String(), nil
			case '\\':
				if i+1 >= len(text) {
					return "", fmt.Errorf("unterminated escape")
				}
				b.WriteByte(text[i+1])
				i += 2
			case '\n':
				return "", fmt.Errorf("newline in string")
			default:
				b.WriteByte(c)
				i++
			}
		}
		return "", fmt.Errorf("unterminated string")
	}
	for i < len(text) {
		c := text[i]
		switch {
		case c == ';':
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case c == ' ' || c == '\n' || c == '\t':
			i++
		case c == '(':
			stack = append(stack, nil)
			i++
		case c == ')':
			if len(stack) == 0 {
				return nil, fmt.Errorf("unbalanced ) at %d", i)
			}
			l := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			push(sexp{list: l, isLst: true})
			i++
		case c == '"':
			s, err := readString()
			if err != nil {
				return nil, err
			}
			push(sexp{atom: s, kind: '"'})
		case c == '#' && i+1 < len(text) && text[i+1] == '"':
			i++
			s, err := readString()
			if err != nil {
				return nil, err
			}
			push(sexp{atom: s, kind: '#'})
		default:
			j := i
			for j < len(text) && !strings.ContainsRune(" \n\t()\";", rune(text[j])) {
				j++
			}
			push(sexp{atom: text[i:j], kind: 's'})
			i = j
		}
	}
	if len(stack) != 0 {
		return nil, fmt.Errorf("unbalanced (")
	}
	return top, nil
}

// request is one operation the evaluator decides.
type request struct {
	op   string
	path string // the file, or the UNIX socket's path; "" for none
	dir  bool   // the object is a directory
	// sameSandbox: the target of a signal or process-info is in this sandbox.
	sameSandbox bool
	mach        string // mach service looked up
	machLocal   bool   // ... by its local name
	ipc         string // POSIX IPC name
	sysctl      string // sysctl name
	pref        string // preferences domain
	ioctl       string // ioctl request, by name
	ext         []string
	domain      string // socket domain of a socket being made (AF_UNIX)
	protocol    int    // and its protocol
	control     string // kernel control name connected to
	remoteIP    string // IP destination of network-outbound
	localIP     bool   // binding or accepting on an IP address
}

// String names r by the fields it sets, for test failures.
func (r request) String() string {
	parts := []string{r.op}
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("path", r.path)
	if r.dir {
		parts = append(parts, "dir")
	}
	if r.sameSandbox {
		parts = append(parts, "same-sandbox")
	}
	add("mach", r.mach)
	if r.machLocal {
		parts = append(parts, "local")
	}
	add("ipc", r.ipc)
	add("sysctl", r.sysctl)
	add("pref", r.pref)
	add("ioctl", r.ioctl)
	add("ext", strings.Join(r.ext, ","))
	add("domain", r.domain)
	if r.protocol != 0 {
		parts = append(parts, "protocol="+strconv.Itoa(r.protocol))
	}
	add("control", r.control)
	add("remote", r.remoteIP)
	if r.localIP {
		parts = append(parts, "local-ip")
	}
	return strings.Join(parts, " ")
}

type statement struct {
	allow   bool
	ops     []string
	filters []sexp
	message string
}

// reading is one answer to each question the semantics leave open.
type reading struct {
	name string
	// specificFirst: a statement on the operation itself decides before
	// one on a wildcard (see the file comment).
	specificFirst bool
	// subpathSkipsCreated: (subpath P) does not match creating P itself.
	subpathSkipsCreated bool
}

// readings are every combination the evaluator decides under.
var readings = []reading{
	{name: "last match"},
	{name: "specific first", specificFirst: true},
	{name: "last match, subpath without its root on create", subpathSkipsCreated: true},
	{name: "specific first, subpath without its root on create", specificFirst: true, subpathSkipsCreated: true},
}

// stragglers are the operations (deny default) is said not to cover.
var stragglers = []string{"process-info", "nvram", "iokit-get-properties", "file-map-executable"}

// profileEval is a parsed profile with its parameters.
type profileEval struct {
	stmts  []statement
	params map[string]string
}

func newEval(t testing.TB, p Profile) *profileEval {
	t.Helper()
	top, err := parseSBPL(p.Text)
	if err != nil {
		t.Fatalf("parsing the profile: %v\n%s", err, p.Text)
	}
	e := &profileEval{params: map[string]string{}}
	for _, pr := range p.Params {
		if _, dup := e.params[pr.Name]; dup {
			t.Fatalf("parameter %s given twice", pr.Name)
		}
		e.params[pr.Name] = pr.Value
	}
	for _, s := range top {
		if !s.isLst || len(s.list) == 0 || s.list[0].isLst {
			t.Fatalf("not a statement: %+v", s)
		}
		head := s.list[0].atom
		if head == "version" {
			if len(s.list) != 2 || s.list[1].atom != "1" {
				t.Fatalf("want (version 1)")
			}
			continue
		}
		if head != "allow" && head != "deny" {
			t.Fatalf("statement %q outside the subset", head)
		}
		st := statement{allow: head == "allow"}
		for _, a := range s.list[1:] {
			switch {
			case !a.isLst && a.kind == 's':
				if len(st.filters) > 0 {
					t.Fatalf("operation %q after a filter", a.atom)
				}
				st.ops = append(st.ops, a.atom)
			case a.isLst && len(a.list) > 0 && a.list[0].atom == "with":
				if len(a.list) != 3 || a.list[1].atom != "message" || a.list[2].kind != '"' {
					t.Fatalf("modifier outside the subset: %+v", a)
				}
				st.message = a.list[2].atom
			case a.isLst:
				if !st.allow {
					checkNoRequireNot(t, a)
				}
				st.filters = append(st.filters, a)
			default:
				t.Fatalf("unexpected atom %q in a statement", a.atom)
			}
		}
		if len(st.ops) == 0 {
			t.Fatalf("statement without an operation")
		}
		for _, f := range st.filters {
			if _, err := e.match(readings[0], f, request{op: "file-read-data", path: "/x"}); err != nil {
				t.Fatalf("filter outside the subset: %v", err)
			}
		}
		e.stmts = append(e.stmts, st)
	}
	if len(e.stmts) == 0 || e.stmts[0].allow || len(e.stmts[0].ops) != 1 || e.stmts[0].ops[0] != "default" {
		t.Fatalf("the profile must begin with (deny default)")
	}
	return e
}

// checkNoRequireNot fails on require-not inside a deny statement: reports
// say sandbox-exec aborts on it, so Generate never writes one.
func checkNoRequireNot(t testing.TB, f sexp) {
	t.Helper()
	if !f.isLst {
		return
	}
	if len(f.list) > 0 && f.list[0].atom == "require-not" {
		t.Fatalf("require-not inside a deny statement")
	}
	for _, c := range f.list {
		checkNoRequireNot(t, c)
	}
}

// opRank says how specifically pattern names op: -1 not at all, 0 as
// default, 1+len(prefix) as a wildcard, more than any wildcard as itself.
func opRank(pattern, op string) int {
	switch {
	case pattern == "default":
		for _, s := range stragglers {
			if strings.HasPrefix(op, s) {
				return -1
			}
		}
		return 0
	case strings.HasSuffix(pattern, "*"):
		if p := strings.TrimSuffix(pattern, "*"); strings.HasPrefix(op, p) {
			return 1 + len(p)
		}
		return -1
	case pattern == op:
		return 1 << 20
	}
	return -1
}

// value is a string argument: a literal string or (param "NAME").
func (e *profileEval) value(a sexp) (string, error) {
	if !a.isLst && a.kind == '"' {
		return a.atom, nil
	}
	if a.isLst && len(a.list) == 2 && a.list[0].atom == "param" && a.list[1].kind == '"' {
		v, ok := e.params[a.list[1].atom]
		if !ok {
			return "", fmt.Errorf("undefined parameter %q", a.list[1].atom)
		}
		return v, nil
	}
	return "", fmt.Errorf("not a string or param: %+v", a)
}

func (e *profileEval) match(rd reading, f sexp, r request) (bool, error) {
	if !f.isLst || len(f.list) == 0 {
		return false, fmt.Errorf("filter is not a list: %+v", f)
	}
	args := f.list[1:]
	one := func() (string, error) {
		if len(args) != 1 {
			return "", fmt.Errorf("%s wants one argument", f.list[0].atom)
		}
		return e.value(args[0])
	}
	symbol := func() (string, error) {
		if len(args) != 1 || args[0].isLst || args[0].kind != 's' {
			return "", fmt.Errorf("%s wants one symbol", f.list[0].atom)
		}
		return args[0].atom, nil
	}
	switch f.list[0].atom {
	case "literal":
		v, err := one()
		return err == nil && r.path != "" && r.path == v, err
	case "subpath":
		v, err := one()
		if err != nil || r.path == "" {
			return false, err
		}
		if rd.subpathSkipsCreated && r.op == "file-write-create" && r.path == v {
			return false, nil
		}
		return r.path == v || v == "/" || strings.HasPrefix(r.path, v+"/"), nil
	case "regex":
		if len(args) != 1 || args[0].kind != '#' {
			return false, fmt.Errorf("regex wants #\"...\"")
		}
		re, err := regexp.Compile(args[0].atom)
		if err != nil {
			return false, err
		}
		return r.path != "" && re.MatchString(r.path), nil
	case "require-all", "require-any":
		all := f.list[0].atom == "require-all"
		if len(args) == 0 {
			return false, fmt.Errorf("empty %s", f.list[0].atom)
		}
		res := all
		for _, a := range args {
			m, err := e.match(rd, a, r)
			if err != nil {
				return false, err
			}
			if all {
				res = res && m
			} else {
				res = res || m
			}
		}
		return res, nil
	case "require-not":
		if len(args) != 1 {
			return false, fmt.Errorf("require-not wants one filter")
		}
		m, err := e.match(rd, args[0], r)
		return !m, err
	case "vnode-type":
		if len(args) != 1 || args[0].atom != "DIRECTORY" {
			return false, fmt.Errorf("vnode-type: only DIRECTORY is in the subset")
		}
		return r.path != "" && r.dir, nil
	case "extension":
		v, err := one()
		for _, x := range r.ext {
			if x == v {
				return err == nil, err
			}
		}
		return false, err
	case "ioctl-command":
		v, err := symbol()
		return err == nil && r.ioctl == v, err
	case "target":
		if len(args) != 1 || args[0].atom != "same-sandbox" {
			return false, fmt.Errorf("target: only same-sandbox is in the subset")
		}
		return r.sameSandbox, nil
	case "global-name", "local-name":
		v, err := one()
		return err == nil && r.mach == v && r.machLocal == (f.list[0].atom == "local-name"), err
	case "ipc-posix-name":
		v, err := one()
		return err == nil && r.ipc != "" && r.ipc == v, err
	case "ipc-posix-name-prefix":
		v, err := one()
		return err == nil && r.ipc != "" && strings.HasPrefix(r.ipc, v), err
	case "sysctl-name":
		v, err := one()
		return err == nil && r.sysctl != "" && r.sysctl == v, err
	case "sysctl-name-prefix":
		v, err := one()
		return err == nil && r.sysctl != "" && strings.HasPrefix(r.sysctl, v), err
	case "preference-domain":
		v, err := one()
		return err == nil && r.pref != "" && r.pref == v, err
	case "socket-domain":
		v, err := symbol()
		if err == nil && !strings.HasPrefix(v, "AF_") {
			err = fmt.Errorf("socket-domain %q: not an AF_ name", v)
		}
		return err == nil && r.domain == v, err
	case "socket-protocol":
		if len(args) != 1 || args[0].isLst || args[0].kind != 's' {
			return false, fmt.Errorf("socket-protocol wants a number")
		}
		n, err := strconv.Atoi(args[0].atom)
		return err == nil && r.domain != "" && r.protocol == n, err
	case "control-name":
		v, err := one()
		return err == nil && r.control != "" && r.control == v, err
	case "remote":
		if len(args) != 1 || args[0].atom != "ip" {
			return false, fmt.Errorf("remote: only (remote ip) is in the subset")
		}
		return r.remoteIP != "", nil
	case "local":
		if len(args) != 1 || args[0].atom != "ip" {
			return false, fmt.Errorf("local: only (local ip) is in the subset")
		}
		return r.localIP, nil
	}
	return false, fmt.Errorf("filter %q outside the subset", f.list[0].atom)
}

// matches reports whether st matches r, and how specifically it names r's
// operation (-1: it does not).
func (e *profileEval) matches(rd reading, st statement, r request) (int, error) {
	rank := -1
	for _, o := range st.ops {
		rank = max(rank, opRank(o, r.op))
	}
	if rank < 0 {
		return -1, nil
	}
	m := len(st.filters) == 0
	for _, f := range st.filters {
		ok, err := e.match(rd, f, r)
		if err != nil {
			return -1, err
		}
		m = m || ok
	}
	if !m {
		return -1, nil
	}
	return rank, nil
}

// eval decides r under one reading: whether it is allowed, the deciding
// statement's message, and the index of an allow statement that matches
// r (-1: none).
func (e *profileEval) eval(rd reading, r request) (allowed bool, msg string, anAllow int, err error) {
	best := -1
	anAllow = -1
	for _, s := range stragglers {
		if strings.HasPrefix(r.op, s) {
			allowed = true // no statement matching: (deny default) does not cover it
		}
	}
	for i, st := range e.stmts {
		rank, err := e.matches(rd, st, r)
		if err != nil {
			return false, "", -1, err
		}
		if rank < 0 {
			continue
		}
		if st.allow {
			anAllow = i
		}
		if rd.specificFirst && rank < best {
			continue
		}
		best = rank
		allowed, msg = st.allow, st.message
	}
	return allowed, msg, anAllow, nil
}

// decide returns whether r is allowed and the message of the deciding
// statement. It fails the test when the readings disagree on r, or when r
// is denied while an allow statement matches it: a protection that holds
// only because a deny outranks that allow.
func (e *profileEval) decide(t testing.TB, r request) (bool, string) {
	t.Helper()
	var first bool
	var firstMsg string
	for i, rd := range readings {
		allowed, msg, anAllow, err := e.eval(rd, r)
		if err != nil {
			t.Fatalf("%v", err)
		}
		if !allowed && anAllow >= 0 {
			t.Errorf("%v: denied under %q although allow statement %d matches it (the protection depends on a deny outranking an allow)", r, rd.name, anAllow)
		}
		if i == 0 {
			first, firstMsg = allowed, msg
		} else if allowed != first {
			t.Errorf("%v: allowed=%v under %q, %v under %q", r, first, readings[0].name, allowed, rd.name)
		}
	}
	return first, firstMsg
}

// The evaluator's own semantics, on hand-written profiles.
func TestSBPLEvaluatorSemantics(t *testing.T) {
	prof := Profile{Text: `(version 1)
(deny default (with message "wrun-T"))
; comment (with a paren
(allow file-read-data (require-all (subpath (param "A")) (require-not (subpath (param "B")))))
(allow file-read-data (require-all (subpath (param "B")) (require-not (literal (param "B"))) (vnode-type DIRECTORY)))
(allow file-write* (regex #"^/w/[a-z]+$"))
(allow mach-lookup (global-name "com.example.one") (local-name "com.example.local"))
(allow signal (target same-sandbox))
(deny process-info* (with message "wrun-T"))
(allow process-info* (target same-sandbox))
(allow network-outbound (remote ip) (literal "/var/run/ok.sock") (control-name "com.example.ctl"))
(allow sysctl-read (sysctl-name "hw.ncpu") (sysctl-name-prefix "hw.optional."))
(allow file-ioctl (require-all (regex #"^/dev/ttys[0-9]+$") (require-not (ioctl-command TIOCSTI))))
(allow file-read-data (require-all (regex #"^/dev/ttys[0-9]+$") (extension "com.apple.sandbox.pty")))
(allow system-socket (socket-domain AF_UNIX) (require-all (socket-domain AF_SYSTEM) (socket-protocol 2)))
(allow user-preference-read (preference-domain "kCFPreferencesAnyApplication"))
(allow ipc-posix-shm-read-data (ipc-posix-name-prefix "apple.cfprefs."))
`, Params: []Param{{"A", "/a"}, {"B", "/a/b"}}}
	e := newEval(t, prof)
	cases := []struct {
		r    request
		want bool
	}{
		{request{op: "file-read-data", path: "/a"}, true},
		{request{op: "file-read-data", path: "/a/x"}, true},
		{request{op: "file-read-data", path: "/ab"}, false},    // component-wise
		{request{op: "file-read-data", path: "/a/b"}, false},   // carved out of A
		{request{op: "file-read-data", path: "/a/b/c"}, false}, // and beneath it
		{request{op: "file-read-data", path: "/a/b/c", dir: true}, true},
		{request{op: "file-read-data", path: "/a/b", dir: true}, false}, // require-not literal
		{request{op: "file-write-create", path: "/w/abc"}, true},        // file-write* prefix
		{request{op: "file-write-create", path: "/w/abc/d"}, false},
		{request{op: "file-read-metadata", path: "/a"}, false}, // only what is named
		{request{op: "mach-lookup", mach: "com.example.one"}, true},
		{request{op: "mach-lookup", mach: "com.example.one", machLocal: true}, false},
		{request{op: "mach-lookup", mach: "com.example.local", machLocal: true}, true},
		{request{op: "mach-lookup", mach: "com.example.two"}, false},
		{request{op: "signal", sameSandbox: true}, true},
		{request{op: "signal"}, false},
		{request{op: "process-info-pidinfo", sameSandbox: true}, true},
		{request{op: "process-info-pidinfo"}, false}, // denied explicitly: default does not cover it
		{request{op: "nvram-get"}, true},             // nor this, and nothing denies it
		{request{op: "network-outbound", remoteIP: "192.0.2.1:443"}, true},
		{request{op: "network-outbound", path: "/var/run/ok.sock"}, true},
		{request{op: "network-outbound", path: "/var/run/x.sock"}, false},
		{request{op: "network-outbound", control: "com.example.ctl"}, true},
		{request{op: "network-outbound", control: "com.example.other"}, false},
		{request{op: "network-outbound"}, false},
		{request{op: "sysctl-read", sysctl: "hw.ncpu"}, true},
		{request{op: "sysctl-read", sysctl: "hw.optional.arm.FEAT_AES"}, true},
		{request{op: "sysctl-read", sysctl: "kern.procargs2"}, false},
		{request{op: "sysctl-read", path: "/a"}, false}, // path filters never name a sysctl
		{request{op: "file-ioctl", path: "/dev/ttys001", ioctl: "TIOCGWINSZ"}, true},
		{request{op: "file-ioctl", path: "/dev/ttys001", ioctl: "TIOCSTI"}, false},
		{request{op: "file-read-data", path: "/dev/ttys001"}, false},
		{request{op: "file-read-data", path: "/dev/ttys001", ext: []string{"com.apple.sandbox.pty"}}, true},
		{request{op: "system-socket", domain: "AF_UNIX"}, true},
		{request{op: "system-socket", domain: "AF_SYSTEM", protocol: 2}, true},
		{request{op: "system-socket", domain: "AF_SYSTEM", protocol: 1}, false},
		{request{op: "user-preference-read", pref: "kCFPreferencesAnyApplication"}, true},
		{request{op: "user-preference-read", pref: "com.example.app"}, false},
		{request{op: "ipc-posix-shm-read-data", ipc: "apple.cfprefs.501"}, true},
	}
	for _, c := range cases {
		if got, _ := e.decide(t, c.r); got != c.want {
			t.Errorf("%v: allowed %v, want %v", c.r, got, c.want)
		}
	}
	if _, msg := e.decide(t, request{op: "file-read-data", path: "/a/b"}); msg != "wrun-T" {
		t.Errorf("denial message %q, want wrun-T", msg)
	}
	// Strings end at an unescaped quote; escapes are taken literally.
	top, err := parseSBPL(`(literal "a\"b\\c")`)
	if err != nil || top[0].list[1].atom != `a"b\c` {
		t.Errorf("string escapes: %v %+v", err, top)
	}
}

// The readings differ where issue 29 says real Macs differ from the
// documentation, and decide catches a profile that depends on the
// difference. The control: a profile built the old way, a specific
// allow followed by a wildcard deny of a protected path, protects it
// under "last match" only.
func TestSBPLReadingsDiffer(t *testing.T) {
	old := Profile{Text: `(version 1)
(deny default)
(allow file-write-data file-write-create (subpath (param "W")))
(deny file-write* (literal (param "P")) (subpath (param "P")))
`, Params: []Param{{"W", "/w"}, {"P", "/w/.git/config"}}}
	e := newEval(t, old)
	r := request{op: "file-write-data", path: "/w/.git/config"}
	for _, rd := range readings {
		allowed, _, anAllow, err := e.eval(rd, r)
		if err != nil {
			t.Fatal(err)
		}
		if allowed != rd.specificFirst {
			t.Errorf("%s: writing the protected path allowed=%v, want %v", rd.name, allowed, rd.specificFirst)
		}
		if !allowed && anAllow < 0 {
			t.Errorf("%s: the denial should be one a deny wins against an allow", rd.name)
		}
	}
	// decide reports both faults of that profile.
	ft := &fakeT{}
	e.decide(ft, r)
	if len(ft.errs) < 2 {
		t.Errorf("decide reported %q, want the disagreement and the deny outranking an allow", ft.errs)
	}
	// Creating a directory that (subpath P) alone carves out: open under
	// the reading where subpath does not name P while P is made.
	carved := Profile{Text: `(version 1)
(deny default)
(allow file-write-create (require-all (subpath (param "W")) (require-not (subpath (param "P")))))
`, Params: []Param{{"W", "/w"}, {"P", "/w/.codex"}}}
	e = newEval(t, carved)
	mk := request{op: "file-write-create", path: "/w/.codex", dir: true}
	for _, rd := range readings {
		allowed, _, _, _ := e.eval(rd, mk)
		if allowed != rd.subpathSkipsCreated {
			t.Errorf("%s: creating the carved directory allowed=%v, want %v", rd.name, allowed, rd.subpathSkipsCreated)
		}
	}
}

// fakeT collects what decide reports instead of failing the test.
type fakeT struct {
	testing.TB
	errs []string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
func (f *fakeT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

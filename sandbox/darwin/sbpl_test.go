package darwin

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// This file is an evaluator of the subset of SBPL (Seatbelt's profile
// language) that Generate writes, so that what a profile allows can be
// tested without a Mac. It documents the semantics it assumes; each is
// Seatbelt's behaviour as Apple's own profiles and public reverse
// engineering describe it, not verified here on a Mac:
//
//   - A profile is a list of statements, evaluated for each operation
//     in order; the last statement that matches decides (last match
//     wins). "(deny default)" first makes everything else denied.
//   - A statement is (allow|deny OPERATION... FILTER... MODIFIER...).
//     An operation name ending in * names every operation it prefixes
//     (file-write* is file-write-data, file-write-create, ...); default
//     names every operation. Several filters in one statement match when
//     any of them does; a statement without filters always matches.
//   - Filters: (literal P) matches exactly the path P; (subpath P)
//     matches P and everything beneath it (component-wise, so /a/bc is
//     not beneath /a/b); (regex #"RE") matches the path against RE;
//     (require-all F...) all of F, (require-any F...) any of F,
//     (require-not F) not F; (vnode-type DIRECTORY) the object is a
//     directory; (param "NAME") is the value sandbox-exec got as
//     -D NAME=VALUE (undefined: an error, no match); path filters never
//     match an operation without a path (a mach lookup, a TCP connect).
//   - (target same-sandbox) matches a signal or process-info target in
//     the same sandbox; (global-name N) a mach service; (ipc-posix-name
//     N) a POSIX IPC name; (remote ip) any IP destination; (local ip)
//     binding or accepting on an IP address.
//   - (with message "M") only tags the report of a denial.
//
// Anything else makes the evaluator fail: a generator change that leaves
// the subset shows up here.

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
	path string // "" for an operation without a path
	dir  bool   // the object is a directory
	// sameSandbox: the target of a signal or process-info is in this sandbox.
	sameSandbox bool
	name        string // mach service or POSIX IPC name
	remoteIP    string // IP destination of network-outbound
	localIP     bool   // binding or accepting on an IP address
}

type statement struct {
	allow   bool
	ops     []string
	filters []sexp
	message string
}

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
			if _, err := e.match(f, request{op: "file-read-data", path: "/x"}); err != nil {
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

func opMatches(pattern, op string) bool {
	if pattern == "default" {
		return true
	}
	if strings.HasSuffix(pattern, "*") {
		return strings.HasPrefix(op, strings.TrimSuffix(pattern, "*"))
	}
	return pattern == op
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

func (e *profileEval) match(f sexp, r request) (bool, error) {
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
	switch f.list[0].atom {
	case "literal":
		v, err := one()
		return err == nil && r.path != "" && r.path == v, err
	case "subpath":
		v, err := one()
		if err != nil || r.path == "" {
			return false, err
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
			m, err := e.match(a, r)
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
		m, err := e.match(args[0], r)
		return !m, err
	case "vnode-type":
		if len(args) != 1 || args[0].atom != "DIRECTORY" {
			return false, fmt.Errorf("vnode-type: only DIRECTORY is in the subset")
		}
		return r.path != "" && r.dir, nil
	case "target":
		if len(args) != 1 || args[0].atom != "same-sandbox" {
			return false, fmt.Errorf("target: only same-sandbox is in the subset")
		}
		return r.sameSandbox, nil
	case "global-name", "ipc-posix-name":
		v, err := one()
		return err == nil && r.name == v, err
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

// decide returns whether r is allowed and the message of the deciding
// statement.
func (e *profileEval) decide(t testing.TB, r request) (bool, string) {
	t.Helper()
	allowed, msg := false, ""
	for _, st := range e.stmts {
		opOK := false
		for _, o := range st.ops {
			if opMatches(o, r.op) {
				opOK = true
			}
		}
		if !opOK {
			continue
		}
		m := len(st.filters) == 0
		for _, f := range st.filters {
			ok, err := e.match(f, r)
			if err != nil {
				t.Fatalf("%v", err)
			}
			m = m || ok
		}
		if m {
			allowed, msg = st.allow, st.message
		}
	}
	return allowed, msg
}

// The evaluator's own semantics, on hand-written profiles.
func TestSBPLEvaluatorSemantics(t *testing.T) {
	prof := Profile{Text: `(version 1)
(deny default (with message "wrun-T"))
; comment (with a paren
(allow file-read-data (subpath (param "A")))
(deny file-read-data (literal (param "B")) (with message "wrun-T"))
(allow file-read-data (require-all (subpath (param "B")) (require-not (literal (param "B"))) (vnode-type DIRECTORY)))
(allow file-write* (regex #"^/w/[a-z]+$"))
(allow mach-lookup (global-name "com.example.one"))
(allow signal (target same-sandbox))
(allow network-outbound (remote ip))
`, Params: []Param{{"A", "/a"}, {"B", "/a/b"}}}
	e := newEval(t, prof)
	cases := []struct {
		r    request
		want bool
	}{
		{request{op: "file-read-data", path: "/a"}, true},
		{request{op: "file-read-data", path: "/a/x"}, true},
		{request{op: "file-read-data", path: "/ab"}, false},   // component-wise
		{request{op: "file-read-data", path: "/a/b"}, false},  // the later deny wins
		{request{op: "file-read-data", path: "/a/b/c"}, true}, // beneath A: the deny names only B itself
		{request{op: "file-read-data", path: "/a/b/c", dir: true}, true},
		{request{op: "file-read-data", path: "/a/b", dir: true}, false}, // require-not literal
		{request{op: "file-write-create", path: "/w/abc"}, true},        // file-write* prefix
		{request{op: "file-write-create", path: "/w/abc/d"}, false},
		{request{op: "file-read-metadata", path: "/a"}, false}, // only what is named
		{request{op: "mach-lookup", name: "com.example.one"}, true},
		{request{op: "mach-lookup", name: "com.example.two"}, false},
		{request{op: "signal", sameSandbox: true}, true},
		{request{op: "signal"}, false},
		{request{op: "network-outbound", remoteIP: "192.0.2.1:443"}, true},
		{request{op: "network-outbound", path: "/var/run/x.sock"}, false},
	}
	for _, c := range cases {
		if got, _ := e.decide(t, c.r); got != c.want {
			t.Errorf("%+v: allowed %v, want %v", c.r, got, c.want)
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

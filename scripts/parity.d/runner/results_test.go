package main

import (
	"reflect"
	"testing"
)

func TestParseCargo(t *testing.T) {
	out := `   Compiling fnv v1.0.7
     Running unittests src/lib.rs (target/debug/deps/fnv-0123456789abcdef)

running 2 tests
test tests::a ... ok
test tests::b ... FAILED

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

     Running tests/it.rs (target/debug/deps/it-fedcba9876543210)
test c ... ignored
test result: ok. 0 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s
   Doc-tests fnv
test src/lib.rs - (line 3) ... ok
test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
`
	r := parseCargo(out)
	want := map[string]outcome{"fnv::tests::a": "pass", "fnv::tests::b": "fail", "it::c": "skip", "doc:fnv::src/lib.rs - (line 3)": "pass"}
	if !reflect.DeepEqual(r.tests, want) || len(r.broken) != 0 {
		t.Errorf("got %v broken %v, want %v", r.tests, r.broken, want)
	}
	r = parseCargo("   Compiling x v0.1.0\nerror[E0433]: failed to resolve\nerror: could not compile `x`\n")
	if len(r.broken) != 2 || len(r.tests) != 0 {
		t.Errorf("a failed build: got %v broken %v", r.tests, r.broken)
	}
}

func TestParseGoJSON(t *testing.T) {
	out := `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"fail","Package":"p","Test":"TestB/sub"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"fail","Package":"p"}
{"Action":"output","Package":"q","Output":"q.go:1: undefined: x\n"}
{"Action":"fail","Package":"q"}
{"Action":"skip","Package":"r","Test":"TestC"}
`
	r := parseGoJSON(out)
	want := map[string]outcome{"p.TestA": "pass", "p.TestB/sub": "fail", "p.TestB": "fail", "r.TestC": "skip"}
	if !reflect.DeepEqual(r.tests, want) || !reflect.DeepEqual(r.broken, []string{"q"}) {
		t.Errorf("got %v broken %v", r.tests, r.broken)
	}
}

func TestClassify(t *testing.T) {
	tree := "/w/verify"
	inTree := denial{Op: "open", Path: "/w/verify/testdata/x.golden", Summary: "wrun: denied write (files=read keeps the workspace read-only). Try: write it under $TMPDIR instead"}
	inTree.WithheldBy.Rule = "workspace-read-only"
	inTree.Alternatives = []struct {
		ID   string `json:"id"`
		Kind string `json:"kind"`
	}{{"d1.use-tmpdir", "route"}, {"d1.allow-write", "allow-write"}}
	unix := denial{Op: "socket", Addr: "AF_UNIX", Right: "socket_unix"}
	unix.WithheldBy.Rule = "unix-sockets-unconfined"
	outside := denial{Op: "open", Path: "/etc/passwd"}
	outside.WithheldBy.Rule = "system-read-only"
	for _, c := range []struct {
		name  string
		ds    []denial
		want  string
		altOK bool
	}{
		{"none", nil, verdictNoTrace, false},
		{"source tree", []denial{inTree}, verdictKeep, true},
		{"unix", []denial{unix}, verdictUnix, false},
		{"unix and the tree", []denial{unix, inTree}, verdictUnix, false},
		{"elsewhere", []denial{inTree, outside}, verdictBreak, false},
	} {
		got, alt := classify(c.ds, tree)
		if got != c.want || alt != c.altOK {
			t.Errorf("%s: got %q %v, want %q %v", c.name, got, alt, c.want, c.altOK)
		}
	}
}

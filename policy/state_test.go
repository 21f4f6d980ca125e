package policy

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestStateKey: private state is shared only by runs of the same workspace
// under the same authority; any difference in what the child may do (the
// grant, wider or narrower; extra paths; kept variables) gives another key.
func TestStateKey(t *testing.T) {
	h := Host{Workdir: "/w/ws"}
	verify := mustGrant(t, "verify")
	base := StateKey(verify, h, Options{})
	if again := StateKey(verify, h, Options{}); again != base {
		t.Fatalf("the key is not stable: %s, %s", base, again)
	}
	differ := map[string]string{
		"write":                  StateKey(mustGrant(t, "write"), h, Options{}),
		"verify,network=off":     StateKey(mustGrant(t, "verify,network=off"), h, Options{}),
		"--allow-write /x":       StateKey(verify, h, Options{AllowWrite: []string{"/x"}}),
		"--allow-read /x":        StateKey(verify, h, Options{AllowRead: []string{"/x"}}),
		"--keep-env TOKEN":       StateKey(verify, h, Options{KeepEnv: []string{"TOKEN"}}),
		"another workspace":      StateKey(verify, Host{Workdir: "/w/other"}, Options{}),
		"read vs write, same /x": StateKey(verify, h, Options{AllowRead: []string{"/x"}, AllowWrite: []string{"/y"}}),
		"write vs read, same /x": StateKey(verify, h, Options{AllowRead: []string{"/y"}, AllowWrite: []string{"/x"}}),
	}
	seen := map[string]string{base: "verify"}
	for what, k := range differ {
		if prev, ok := seen[k]; ok {
			t.Errorf("%s and %s share the state key %s", what, prev, k)
		}
		seen[k] = what
	}
	// The same authority however it is spelled.
	a := StateKey(verify, h, Options{AllowWrite: []string{"/a", "/b/"}})
	b := StateKey(verify, h, Options{AllowWrite: []string{"/b", "/a", "/a"}})
	if a != b {
		t.Errorf("the same --allow-write paths in another order give another key: %s, %s", a, b)
	}
	// One workspace's state stays together: the workspace's hash first.
	ws, _, _ := strings.Cut(base, "-")
	other, _, _ := strings.Cut(differ["write"], "-")
	if ws != other || len(base) != 33 {
		t.Errorf("keys %s and %s: want <workspace hash>-<authority hash>", base, differ["write"])
	}
}

// TestVerifyInputStateDir: the private state dir is keyed by the
// authority, and a grant that can write wrun's state directory keeps none
// and gets the state directory protected.
func TestVerifyInputStateDir(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	state := filepath.Join(home, ".cache", "wrun")
	h := Host{Workdir: ws, Home: home, StateDir: state, TempDir: filepath.Join(home, "tmp")}
	v := VerifyInput(mustGrant(t, "verify"), h, Options{})
	w := VerifyInput(mustGrant(t, "write"), h, Options{})
	if v.StateDir == "" || w.StateDir == "" || v.StateDir == w.StateDir {
		t.Fatalf("verify and write must have state dirs of their own: %q, %q", v.StateDir, w.StateDir)
	}
	if v.StateRoot != state || filepath.Dir(v.StateDir) != filepath.Join(state, "ws") {
		t.Errorf("state dir %q (root %q), want one beneath %s/ws", v.StateDir, v.StateRoot, state)
	}
	for _, tc := range []struct {
		spec string
		o    Options
	}{
		{"verify,shell=full", Options{}},
		{"verify", Options{AllowWrite: []string{filepath.Join(home, ".cache")}}},
	} {
		g := mustGrant(t, tc.spec)
		if in := VerifyInput(g, h, tc.o); in.StateDir != "" {
			t.Errorf("%s %v: the child can write wrun's state directory, yet the run keeps state at %s", tc.spec, tc.o, in.StateDir)
		}
		p, err := Compute(g, h, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(p.Protected, func(pr Protected) bool { return pr.Path == state && pr.Dir }) {
			t.Errorf("%s %v: wrun's state directory is not protected: %+v", tc.spec, tc.o, p.Protected)
		}
	}
	// files=write of a workspace holding the state directory.
	hh := h
	hh.Workdir = home
	if in := VerifyInput(mustGrant(t, "write"), hh, Options{}); in.StateDir != "" {
		t.Errorf("files=write of %s: the run keeps state at %s", home, in.StateDir)
	}
	p, err := Compute(mustGrant(t, "verify"), h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(p.Protected, func(pr Protected) bool { return pr.Path == state }) {
		t.Errorf("verify cannot write wrun's state directory, yet it is protected")
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		path, base string
		want       bool
	}{
		{"/a/b", "/a", true}, {"/a", "/a", true}, {"/ab", "/a", false}, {"/a", "/a/b", false},
		{"/", "/", true}, {"/x", "/", true}, {"/a/b/c", "/a/b", true}, {"/a/bc", "/a/b", false}, {"", "/a", false},
	} {
		if got := Within(tc.path, tc.base); got != tc.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tc.path, tc.base, got, tc.want)
		}
	}
}

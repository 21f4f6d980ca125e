package escalate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// These tests run the analysis on policies policy.Compute really made, on
// a small tree made on disk (the other tests use fixture's policies).

type realHost struct {
	root, home, ws, tmp string
	env                 []string
}

func makeHost(t *testing.T) realHost {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := realHost{root: root, home: filepath.Join(root, "home/u"), tmp: filepath.Join(root, "tmp/wrun-1")}
	h.ws = filepath.Join(h.home, "proj")
	for _, d := range []string{h.tmp, h.ws + "/.git/hooks", h.ws + "/.git/objects", h.ws + "/src", h.home + "/.ssh",
		h.home + "/.cargo/registry", h.home + "/.cache", h.home + "/.config/git"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{h.ws + "/.git/HEAD", h.ws + "/.git/config", h.ws + "/Cargo.toml", h.ws + "/src/main.rs",
		h.home + "/.bashrc", h.home + "/.gitconfig", h.home + "/.ssh/id_ed25519"} {
		if err := os.WriteFile(f, []byte("[package]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.env = []string{"HOME=" + h.home, "PATH=/usr/bin"}
	return h
}

func (h realHost) policy(t *testing.T, spec string, o policy.Options) *policy.Policy {
	t.Helper()
	g, err := grant.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Compute(g, policy.Host{Workdir: h.ws, Home: h.home, Env: h.env, TempDir: h.tmp}, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// TestCheckOnComputedPolicies runs the access model on policies Compute
// made, carved as on a machine without a mount namespace.
func TestCheckOnComputedPolicies(t *testing.T) {
	h := makeHost(t)
	tests := []struct {
		grant string
		op    access.Op
		deny  bool
	}{
		{"inspect", access.Op{Kind: access.OpOpen, Path: h.ws + "/src/main.rs"}, false},
		{"inspect", access.Op{Kind: access.OpOpen, Path: h.ws + "/src/main.rs", Rights: policy.WriteFile}, true},
		{"inspect", access.Op{Kind: access.OpCreate, Path: h.tmp + "/x"}, false},
		{"inspect", access.Op{Kind: access.OpOpen, Path: h.home + "/.ssh/id_ed25519"}, true},
		{"inspect", access.Op{Kind: access.OpOpen, Path: h.home + "/.bashrc"}, true}, // the home is hidden but for what toolchains need
		{"inspect", access.Op{Kind: access.OpOpen, Path: h.home + "/.gitconfig"}, false},
		{"inspect", access.Op{Kind: access.OpOpen, Path: h.home + "/.cargo/config.toml"}, false},
		{"inspect", access.Op{Kind: access.OpConnect, Addr: "127.0.0.1:80"}, true},
		// cargo builds in a target dir of its own (here, without a state
		// directory, in the private temp dir); the workspace's stays
		// read-only: an unsandboxed cargo runs what it finds there.
		{"verify", access.Op{Kind: access.OpMkdir, Path: h.tmp + "/cargo-target/debug"}, false},
		{"verify", access.Op{Kind: access.OpMkdir, Path: h.ws + "/target/debug"}, true},
		{"verify", access.Op{Kind: access.OpCreate, Path: h.ws + "/src/gen.rs"}, true},
		{"verify", access.Op{Kind: access.OpCreate, Path: h.home + "/.cargo/registry/x"}, true},
		{"verify", access.Op{Kind: access.OpConnect, Addr: "127.0.0.1:80"}, false},
		{"write", access.Op{Kind: access.OpCreate, Path: h.ws + "/src/gen.rs"}, false},
		{"write", access.Op{Kind: access.OpCreate, Path: h.ws + "/new.txt"}, true}, // the root is carved around .git/config and .git/hooks
		{"write", access.Op{Kind: access.OpCreate, Path: h.ws + "/.git/hooks/pre-commit"}, true},
		{"write", access.Op{Kind: access.OpOpen, Path: h.ws + "/.git/config", Rights: policy.WriteFile}, true},
		{"write", access.Op{Kind: access.OpCreate, Path: h.ws + "/.git/objects/ab"}, false},
		{"write", access.Op{Kind: access.OpRename, Path: h.ws + "/.git", Dest: h.ws + "/g", Dir: true}, true},
		{"full", access.Op{Kind: access.OpCreate, Path: h.home + "/.cargo/registry/x"}, false},
		{"full", access.Op{Kind: access.OpCreate, Path: h.home + "/.cargo/bin/x"}, true},
		{"full", access.Op{Kind: access.OpOpen, Path: h.home + "/.bashrc", Rights: policy.WriteFile}, true},
	}
	for _, tc := range tests {
		p := h.policy(t, tc.grant, policy.Options{})
		a, err := New(p, Facts{Home: h.home, Env: h.env, Exists: exists})
		if err != nil {
			t.Fatal(err)
		}
		if got := a.WouldDeny(tc.op); got != tc.deny {
			t.Errorf("%s: WouldDeny(%+v) = %v, want %v (missing %s)", tc.grant, tc.op, got, tc.deny, render(a.Check(tc.op)))
		}
		if tc.deny {
			ds := exactDenials(tc.op, a.Check(tc.op))
			req := a.Request(runEnd, ds)
			b, _ := req.JSON()
			if err := validateRequest(b); err != nil {
				t.Errorf("%s %+v: %v", tc.grant, tc.op, err)
			}
			checkAlternatives(t, a, req.Denials[0].Alternatives)
		}
	}
}

// TestToolCacheFromComputedPolicy: the tool caches a denial is classified
// by are those policy.Compute lists, wherever the environment puts them.
func TestToolCacheFromComputedPolicy(t *testing.T) {
	h := makeHost(t)
	cargo := filepath.Join(h.root, "opt/cargo")
	for _, tc := range []struct {
		env        []string
		path, want string
	}{
		{nil, h.home + "/.cargo/registry/cache/x.crate", h.home + "/.cargo"},
		{[]string{"CARGO_HOME=" + cargo}, cargo + "/registry/x", cargo},
		{[]string{"CARGO_HOME=" + cargo}, h.home + "/.cargo/registry/x", ""},
		{[]string{"GOCACHE=/var/gocache"}, "/var/gocache/ab/x", "/var/gocache"},
		{nil, h.home + "/.cache/go-build/ab/x", h.home + "/.cache/go-build"},
	} {
		h := h
		h.env = append(slices.Clone(h.env), tc.env...)
		p := h.policy(t, "verify", policy.Options{})
		a, err := New(p, Facts{Home: h.home, Env: h.env, Exists: exists})
		if err != nil {
			t.Fatal(err)
		}
		by := a.Classify(sandbox.Denial{Op: access.OpCreate, Path: tc.path, Right: "make_reg"})
		if tc.want == "" {
			if by.Rule == "tool-cache" {
				t.Errorf("env %q: %s classified as a tool cache: %+v", tc.env, tc.path, by)
			}
			continue
		}
		if by.Rule != "tool-cache" || by.Path != tc.want {
			t.Errorf("env %q: %s: %+v, want rule tool-cache at %s", tc.env, tc.path, by, tc.want)
		}
	}
}

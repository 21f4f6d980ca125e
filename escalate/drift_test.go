package escalate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
)

// These tests hold this package to what policy.Compute really produces,
// on a small tree made on disk: the catalogue's copies of policy's lists
// (protected paths, tool caches) must not drift from the originals.

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

// TestProtectedPatternsMatchPolicy: every path policy protects is one the
// catalogue's patterns recognize, with the same reason.
func TestProtectedPatternsMatchPolicy(t *testing.T) {
	h := makeHost(t)
	p := h.policy(t, "write", policy.Options{AllowWrite: []string{h.home}})
	a, err := New(p, Facts{Home: h.home, Env: h.env, Exists: exists})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Protected) < 10 {
		t.Fatalf("the policy protects only %d paths; the test tree is wrong", len(p.Protected))
	}
	for _, pr := range p.Protected {
		if pr.Pin {
			continue // the gitdir itself: matched through the policy, it is pinned, not patterned
		}
		path, why := a.protectedPattern(pr.Path, policy.WriteFile)
		if path != pr.Path || why != pr.Why {
			t.Errorf("policy protects %s (%s); the catalogue says %q (%q)", pr.Path, pr.Why, path, why)
		}
	}
}

// TestToolCachesMatchPolicy: what this package believes shell=full makes
// writable is what policy grants under shell=full.
func TestToolCachesMatchPolicy(t *testing.T) {
	h := makeHost(t)
	for _, env := range [][]string{
		h.env,
		append(slices.Clone(h.env), "CARGO_HOME=/opt/cargo", "GOCACHE=/var/gocache", "GOPATH=/go1:/go2", "XDG_CACHE_HOME=/xdg"),
		append(slices.Clone(h.env), "GOMODCACHE=/mods"),
	} {
		h.env = env
		p := h.policy(t, "full", policy.Options{})
		var want []string
		for _, r := range p.Rules {
			if strings.HasPrefix(r.Source, "full:") {
				want = append(want, r.Path)
			}
		}
		a, err := New(p, Facts{Home: h.home, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range a.caches {
			for _, f := range c.Full {
				if !slices.Contains(got, f) {
					got = append(got, f)
				}
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		// The user's default GOCACHE lies in the XDG cache, which policy
		// grants whole; this package names it on its own.
		got = slices.DeleteFunc(got, func(p string) bool {
			return !slices.Contains(want, p) && slices.ContainsFunc(want, func(w string) bool { return policy.Within(p, w) })
		})
		if !slices.Equal(got, want) {
			t.Errorf("env %q:\n shell=full caches here %q\n policy grants        %q", env, got, want)
		}
	}
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

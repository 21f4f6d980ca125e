//go:build linux

package linux

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// TestSeccompDenyPlant: without Landlock, links and FIFOs are refused
// everywhere; regular files are not. Each refused call has a control
// without the filter.
func TestSeccompDenyPlant(t *testing.T) {
	plant := &seccompSpec{DenyPlant: true}
	mk := func(mode uint32) func(dir, _ string) error {
		return func(dir, _ string) error { return unix.Mknod(filepath.Join(dir, "n"), mode|0o644, 0) }
	}
	link := func(dir, _ string) error { return unix.Symlink("/etc/passwd", filepath.Join(dir, "l")) }
	runCases(t, []kcase{
		{name: "symlink without the filter", seccomp: &seccompSpec{}, op: link},
		{name: "symlink refused", seccomp: plant, op: link, want: unix.EPERM},
		{name: "mkfifo without the filter", seccomp: &seccompSpec{}, op: mk(unix.S_IFIFO)},
		{name: "mkfifo refused", seccomp: plant, op: mk(unix.S_IFIFO), want: unix.EPERM},
		{name: "socket node refused", seccomp: plant, op: mk(unix.S_IFSOCK), want: unix.EPERM},
		{name: "regular file by mknod allowed", seccomp: plant, op: mk(unix.S_IFREG)},
	})
}

// TestNewPlanMasks: through the stage, a hidden path with no rule beneath
// it is masked, not carved (no sibling rules); one a rule reaches into is
// carved; without the stage every hidden path is carved; without Landlock
// the stage covers the latter with a view keeping the rules beneath it.
func TestNewPlanMasks(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"a/secret", "a/s1", "a/s2", "b/f", "home/.ssh/id", "home/.gitconfig"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	abs := func(p string) string { return filepath.Join(dir, p) }
	pol := &policy.Policy{
		Rules: []policy.Rule{{Path: "/", Access: policy.ReadExec},
			{Path: abs("home/.gitconfig"), Access: policy.ReadExec, Optional: true}},
		Hidden: []policy.Hole{{Path: abs("a/secret"), Withheld: policy.All &^ policy.ReadDir},
			{Path: abs("home"), Withheld: policy.All &^ policy.ReadDir}},
	}
	rulePaths := func(pl *Plan) []string {
		var out []string
		for _, r := range pl.Rules {
			out = append(out, r.Path)
		}
		return out
	}
	tests := []struct {
		name               string
		f                  Features
		masks, views       []string
		carvedSecret       bool // a/s1 got a sibling rule
		carvedHome, denyPl bool
	}{
		{"root, ABI 7", Features{LandlockABI: 7, LandlockErrata: errataFixed, Seccomp: true, Root: true, MountNS: true},
			[]string{abs("a/secret")}, nil, false, true, false},
		{"user namespaces, ABI 7", Features{LandlockABI: 7, LandlockErrata: errataFixed, Seccomp: true, UserNS: true},
			[]string{abs("a/secret")}, nil, false, true, false},
		{"no namespaces, ABI 7", Features{LandlockABI: 7, LandlockErrata: errataFixed, Seccomp: true},
			nil, nil, true, true, false},
		{"root, ABI 0", Features{Seccomp: true, Root: true, MountNS: true},
			[]string{abs("a/secret")}, []string{abs("home")}, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := NewPlan(pol, tt.f, sandbox.Options{BestEffort: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := pl.maskPaths(); !slices.Equal(got, tt.masks) {
				t.Errorf("masks %q, want %q", got, tt.masks)
			}
			var views []string
			for _, v := range pl.Views {
				views = append(views, v.Path)
				if len(v.Keep) != 1 || v.Keep[0].Path != abs("home/.gitconfig") {
					t.Errorf("view %s keeps %+v, want only the .gitconfig rule", v.Path, v.Keep)
				}
			}
			if !slices.Equal(views, tt.views) {
				t.Errorf("views %q, want %q", views, tt.views)
			}
			rules := rulePaths(pl)
			if got := slices.Contains(rules, abs("a/s1")); got != tt.carvedSecret {
				t.Errorf("a sibling rule beside the secret: %v, want %v (rules %q)", got, tt.carvedSecret, rules)
			}
			// Carving the home gives its sibling b/ a rule of its own.
			if got := slices.Contains(rules, abs("b")); got != tt.carvedHome {
				t.Errorf("home carved (a rule on its sibling): %v, want %v (rules %q)", got, tt.carvedHome, rules)
			}
			if pl.seccomp.DenyPlant != tt.denyPl {
				t.Errorf("DenyPlant %v, want %v", pl.seccomp.DenyPlant, tt.denyPl)
			}
		})
	}
}

// TestPlainRules: a writable rule without links and FIFOs needs seccomp's
// refusal without Landlock, unless a rule above it allows them.
func TestPlainRules(t *testing.T) {
	tests := []struct {
		name  string
		rules []policy.Rule
		want  bool
	}{
		{"read only", []policy.Rule{{Path: "/", Access: policy.ReadExec}}, false},
		{"plain build output", []policy.Rule{{Path: "/", Access: policy.ReadExec}, {Path: "/w/target", Access: policy.ReadWritePlain}}, true},
		{"plain inside a writable workspace", []policy.Rule{{Path: "/w", Access: policy.ReadWrite}, {Path: "/w/target", Access: policy.ReadWritePlain}}, false},
		{"a file written in place", []policy.Rule{{Path: "/w/.git/index", Access: policy.ReadFile | policy.WriteExisting}}, false},
	}
	for _, tt := range tests {
		if got := plainRules(tt.rules); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestMaskHiddenRefusesLinks: a hidden path whose parent became a symbolic
// link after the plan was made is refused, not masked where the link
// leads (which would leave the real file readable); one that vanished is
// skipped; the mask covers a real one. Run in a throwaway mount namespace,
// as root.
func TestMaskHiddenRefusesLinks(t *testing.T) {
	if !probed().MountNS {
		t.Skip("needs CAP_SYS_ADMIN (mount namespaces)")
	}
	dir := t.TempDir()
	for _, p := range []string{"real/secret", "other/secret", "kept/secret"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte("s"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "other"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	in := func(paths ...string) error {
		return onThrowawayThread(func() error {
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				return err
			}
			if err := enterMountNS(false); err != nil {
				return err
			}
			if err := maskHidden(paths); err != nil {
				return err
			}
			var st unix.Stat_t
			if err := unix.Stat(filepath.Join(dir, "kept/secret"), &st); err != nil {
				return err
			}
			if st.Size != 0 || st.Mode&0o777 != 0 {
				return fmt.Errorf("kept/secret is not masked: size %d mode %o", st.Size, st.Mode&0o777)
			}
			return nil
		})
	}
	if err := in(filepath.Join(dir, "kept/secret"), filepath.Join(dir, "gone/secret")); err != nil {
		t.Fatalf("masking a real path beside a vanished one: %v", err)
	}
	err := in(filepath.Join(dir, "kept/secret"), filepath.Join(dir, "link/secret"))
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("a hidden path through a link: %v, want a refusal naming the link", err)
	}
}

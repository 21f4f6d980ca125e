//go:build linux

package linux

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

func TestToLandlock(t *testing.T) {
	// Each right maps to the kernel's bit of the same meaning
	// (<linux/landlock.h>), written out here rather than taken from
	// accessMap.
	tests := []struct {
		p  policy.Access
		ll uint64
	}{
		{policy.Execute, 1 << 0}, {policy.WriteFile, 1 << 1}, {policy.ReadFile, 1 << 2},
		{policy.ReadDir, 1 << 3}, {policy.RemoveDir, 1 << 4}, {policy.RemoveFile, 1 << 5},
		{policy.MakeChar, 1 << 6}, {policy.MakeDir, 1 << 7}, {policy.MakeReg, 1 << 8},
		{policy.MakeSock, 1 << 9}, {policy.MakeFifo, 1 << 10}, {policy.MakeBlock, 1 << 11},
		{policy.MakeSym, 1 << 12}, {policy.Refer, 1 << 13}, {policy.Truncate, 1 << 14},
		{policy.IoctlDev, 1 << 15},
		{0, 0},
		{policy.Read, 1<<2 | 1<<3},
		{policy.Device, 1<<2 | 1<<1 | 1<<14 | 1<<15},
	}
	var all uint64
	for _, tt := range tests {
		if got := toLandlock(tt.p); got != tt.ll {
			t.Errorf("toLandlock(%s) = %#x, want %#x", tt.p, got, tt.ll)
		}
		all |= tt.ll
	}
	if got := toLandlock(policy.All); got != all {
		t.Errorf("toLandlock(All) = %#x, want %#x", got, all)
	}
	// Every right the policy can name is one ABI 5 can handle.
	if got := toLandlock(policy.All); got&^handledFS(5) != 0 {
		t.Errorf("rights beyond ABI 5: %#x", got&^handledFS(5))
	}
	if got := toLandlock(policy.FileRights); got != llFileRights {
		t.Errorf("toLandlock(FileRights) = %#x, want llFileRights %#x", got, uint64(llFileRights))
	}
}

func TestHandledFS(t *testing.T) {
	const v1 = 1<<13 - 1 // execute .. make_sym
	tests := []struct {
		abi  int
		want uint64
	}{
		{0, 0},
		{1, v1},
		{2, v1 | llRefer},
		{3, v1 | llRefer | llTruncate},
		{4, v1 | llRefer | llTruncate},
		{5, v1 | llRefer | llTruncate | llIoctlDev},
		{6, v1 | llRefer | llTruncate | llIoctlDev},
		{7, v1 | llRefer | llTruncate | llIoctlDev},
		{9, v1 | llRefer | llTruncate | llIoctlDev | llResolveUnix},
	}
	for _, tt := range tests {
		if got := handledFS(tt.abi); got != tt.want {
			t.Errorf("handledFS(%d) = %#x, want %#x", tt.abi, got, tt.want)
		}
	}
	// The kernel agrees: a ruleset handling exactly handledFS(abi) is
	// accepted, one more right is not.
	if abi := kernelABI(); abi > 0 && abi < 9 {
		h := handledFS(abi)
		next := uint64(1) << bits.Len64(h) // the first right of a later ABI
		for _, tt := range []struct {
			h    uint64
			want error
		}{{h, nil}, {h | next, unix.EINVAL}} {
			rs, err := buildRuleset(rulesetAttr{handledFS: tt.h}, nil)
			if !errors.Is(err, tt.want) {
				t.Errorf("kernel ABI %d, handled %#x: got %v, want %v", abi, tt.h, err, tt.want)
			}
			rs.close()
		}
	}
}

// TestNewPlanGaps checks what NewPlan reports for each Landlock ABI: which
// gaps there are, which are essential, and that an essential one refuses
// the run unless BestEffort.
func TestNewPlanGaps(t *testing.T) {
	const (
		landlock = "Landlock"
		refer    = "REFER"
		truncate = "truncate"
		ioctl    = "ioctl"
		signal   = "signal"
		seccomp  = "seccomp"
	)
	// What each row refuses without namespaces (a user without user
	// namespaces); with them (the stage) nothing is refused: without
	// Landlock the stage's view holds the files, hidden paths masked.
	const (
		hidden   = "hidden"
		write    = "no write"
		trunc    = "truncation"
		metadata = "chmod"
		prot     = "protected paths"
		sig      = "no signal"
		procs    = "other processes'"
		checks   = "checks after the run"
		stage    = "the stage"
	)
	tests := []struct {
		name      string
		f         Features
		info      []string // substrings of the non-essential gaps' What, in order
		essential []string // without namespaces
		staged    []string // with them
	}{
		{"no Landlock", Features{Seccomp: true, LandlockError: "not enabled"}, []string{landlock},
			[]string{write, hidden, trunc, metadata, prot, sig, procs, checks, stage}, nil},
		{"ABI 1", Features{LandlockABI: 1, LandlockErrata: errataFixed, Seccomp: true}, []string{refer, truncate, ioctl, signal}, []string{trunc, metadata, sig, checks, stage}, nil},
		{"ABI 2", Features{LandlockABI: 2, LandlockErrata: errataFixed, Seccomp: true}, []string{truncate, ioctl, signal}, []string{trunc, metadata, sig, checks, stage}, nil},
		{"ABI 3", Features{LandlockABI: 3, LandlockErrata: errataFixed, Seccomp: true}, []string{ioctl, signal}, []string{metadata, sig, checks, stage}, nil},
		{"ABI 4", Features{LandlockABI: 4, LandlockErrata: errataFixed, Seccomp: true}, []string{ioctl, signal}, []string{metadata, sig, checks, stage}, nil},
		{"ABI 5", Features{LandlockABI: 5, LandlockErrata: errataFixed, Seccomp: true}, []string{signal}, []string{metadata, sig, checks, stage}, nil},
		{"ABI 6", Features{LandlockABI: 6, LandlockErrata: errataFixed, Seccomp: true}, nil, []string{metadata, checks, stage}, nil},
		{"ABI 7", Features{LandlockABI: 7, LandlockErrata: errataFixed, Seccomp: true}, nil, []string{metadata, checks, stage}, nil},
		{"ABI 7 without seccomp", Features{LandlockABI: 7, LandlockErrata: errataFixed}, nil, []string{seccomp, metadata, checks, stage}, []string{seccomp}},
		// Erratum 2 unfixed: signals are not scoped (threads of wrun
		// could not signal each other).
		{"ABI 6 without the errata", Features{LandlockABI: 6, Seccomp: true}, []string{signal}, []string{metadata, sig, checks, stage}, nil},
		{"ABI 7, erratum 2 unfixed", Features{LandlockABI: 7, LandlockErrata: errataFixed &^ 0b10, Seccomp: true}, []string{signal}, []string{metadata, sig, checks, stage}, nil},
		{"ABI 7, erratum 1 unfixed", Features{LandlockABI: 7, LandlockErrata: errataFixed &^ 0b01, Seccomp: true}, nil, []string{metadata, checks, stage}, nil},
	}
	for _, tc := range tests {
		for _, ns := range []bool{false, true} {
			tt := tc
			tt.f.UserNS = ns
			if ns {
				tt.essential = tc.staged
			}
			t.Run(fmt.Sprintf("%s, user namespaces %v", tt.name, ns), func(t *testing.T) {
				planGapsCase(t, tt.f, tt.info, tt.essential)
			})
		}
	}
}

// planGapsCase checks one row of TestNewPlanGaps: the gaps NewPlan lists
// for features f (info: what Landlock lacks; essential: what the support
// matrix refuses), its error, and --best-effort.
func planGapsCase(t *testing.T, f Features, info, essentialWant []string) {
	tt := struct {
		f         Features
		essential []string
	}{f, essentialWant}
	{
		{
			p := &policy.Policy{}
			pl, err := NewPlan(p, tt.f, sandbox.Options{})
			if pl == nil {
				t.Fatalf("no plan (error %v); explain needs one even when the run is refused", err)
			}
			var gaps, essential []string
			for _, g := range pl.Gaps {
				if g.Essential {
					essential = append(essential, g.What)
				} else {
					gaps = append(gaps, g.What)
				}
				if g.Need == "" || g.Consequence == "" {
					t.Errorf("gap %q does not say what it needs and what follows", g.What)
				}
			}
			match := func(kind string, got, want []string) {
				ok := len(got) == len(want)
				for i := 0; ok && i < len(got); i++ {
					ok = strings.Contains(got[i], want[i])
				}
				if !ok {
					t.Errorf("%s: got %q, want %q", kind, got, want)
				}
			}
			match("gaps", gaps, info)
			match("essential gaps", essential, tt.essential)

			var ue *sandbox.UnenforceableError
			switch {
			case len(tt.essential) == 0 && err != nil:
				t.Errorf("unexpected error %v", err)
			case len(tt.essential) > 0 && !errors.As(err, &ue):
				t.Errorf("got error %v, want *sandbox.UnenforceableError", err)
			case len(tt.essential) > 0:
				for _, w := range tt.essential {
					if !strings.Contains(ue.Error(), w) {
						t.Errorf("the error does not name %q: %s", w, ue)
					}
				}
				if !strings.Contains(ue.Error(), "--best-effort") {
					t.Errorf("the error does not name --best-effort: %s", ue)
				}
			}
			if pl.Degraded {
				t.Error("degraded without BestEffort")
			}

			// With BestEffort the same plan runs, marked degraded when an
			// essential gap is left.
			pl, err = NewPlan(p, tt.f, sandbox.Options{BestEffort: true})
			if err != nil {
				t.Fatalf("BestEffort: %v", err)
			}
			if want := len(tt.essential) > 0; pl.Degraded != want {
				t.Errorf("BestEffort: degraded %v, want %v", pl.Degraded, want)
			}
			if want := len(tt.essential) > 0; strings.HasPrefix(pl.Summary(), "DEGRADED") != want {
				t.Errorf("BestEffort: summary %q", pl.Summary())
			}
		}
	}
}

// TestNewPlanEnforcement checks the ruleset attributes and seccomp spec
// NewPlan derives from the policy's network and IPC fields, per ABI.
func TestNewPlanEnforcement(t *testing.T) {
	type want struct {
		net, scoped  uint64
		resolveUnix  bool
		denyInet     bool
		denyUnix     bool
		unixSockNote bool
	}
	const both = llNetBindTCP | llNetConnectTCP
	const scopes = llScopeSignal | llScopeAbstractUnix
	off, on := policy.Network{}, policy.Network{Allow: true}
	desktop := policy.IPC{AbstractUnixOutside: true, PathUnixOutside: true}
	tests := []struct {
		name string
		abi  int
		net  policy.Network
		ipc  policy.IPC
		want want
	}{
		{"ABI 3, network off", 3, off, policy.IPC{}, want{denyInet: true, denyUnix: true, unixSockNote: true}},
		{"ABI 4, network off", 4, off, policy.IPC{}, want{net: both, denyInet: true, denyUnix: true, unixSockNote: true}},
		{"ABI 4, network on", 4, on, policy.IPC{}, want{denyUnix: true, unixSockNote: true}},
		{"ABI 6, network off", 6, off, policy.IPC{}, want{net: both, scoped: scopes, denyInet: true, denyUnix: true, unixSockNote: true}},
		{"ABI 7, network on", 7, on, policy.IPC{}, want{scoped: scopes, denyUnix: true, unixSockNote: true}},
		{"ABI 7, desktop", 7, on, desktop, want{scoped: llScopeSignal}},
		{"ABI 7, network off, desktop", 7, off, desktop, want{net: both, scoped: llScopeSignal, denyInet: true}},
		{"ABI 9, network off", 9, off, policy.IPC{}, want{net: both, scoped: scopes, resolveUnix: true, denyInet: true}},
		{"ABI 9, desktop", 9, on, desktop, want{scoped: llScopeSignal}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &policy.Policy{Network: tt.net, IPC: tt.ipc}
			pl, err := NewPlan(p, Features{LandlockABI: tt.abi, LandlockErrata: errataFixed, Seccomp: true}, sandbox.Options{BestEffort: true})
			if err != nil {
				t.Fatal(err)
			}
			wantFS := handledFS(tt.abi)
			if !tt.want.resolveUnix {
				wantFS &^= llResolveUnix
			}
			if pl.attr.handledFS != wantFS {
				t.Errorf("handled fs %#x, want %#x", pl.attr.handledFS, wantFS)
			}
			if pl.attr.handledNet != tt.want.net {
				t.Errorf("handled net %#x, want %#x", pl.attr.handledNet, tt.want.net)
			}
			if pl.attr.scoped != tt.want.scoped {
				t.Errorf("scoped %#x, want %#x", pl.attr.scoped, tt.want.scoped)
			}
			if pl.seccomp.DenyInet != tt.want.denyInet || pl.seccomp.DenyUnix != tt.want.denyUnix {
				t.Errorf("seccomp %+v, want DenyInet=%v DenyUnix=%v", pl.seccomp, tt.want.denyInet, tt.want.denyUnix)
			}
			note := slices.ContainsFunc(pl.Notes, func(n string) bool { return strings.Contains(n, "UNIX sockets cannot be created") })
			if note != tt.want.unixSockNote {
				t.Errorf("UNIX socket note %v, want %v: %q", note, tt.want.unixSockNote, pl.Notes)
			}
		})
	}
}

// TestNewPlanProtection checks how protected paths are enforced: bind
// mounts with a mount namespace, carved rules without, a sweep for paths
// that must not appear.
func TestNewPlanProtection(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	gitdir := filepath.Join(ws, ".git")
	for _, d := range []string{"hooks", "objects"} {
		if err := os.MkdirAll(filepath.Join(gitdir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(gitdir, "config"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p := &policy.Policy{
		Rules: []policy.Rule{{Path: ws, Access: policy.ReadWrite}},
		Protected: []policy.Protected{
			{Path: filepath.Join(gitdir, "hooks"), Dir: true, Exists: true, Within: ws},
			{Path: filepath.Join(gitdir, "config"), Exists: true, Within: ws},
			{Path: gitdir, Dir: true, Exists: true, Pin: true, Within: ws},
			{Path: filepath.Join(ws, ".envrc"), Within: ws},
			{Path: filepath.Join(gitdir, "info"), Dir: true, Create: policy.CreateDir, Within: ws},
		},
	}
	f := Features{LandlockABI: 7, LandlockErrata: errataFixed, Seccomp: true}

	t.Run("mount namespace", func(t *testing.T) {
		f := f
		f.MountNS = true
		pl, err := NewPlan(p, f, sandbox.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var mounts []string
		for _, m := range pl.Mounts {
			mounts = append(mounts, strings.TrimPrefix(m.Path, ws))
		}
		if want := []string{"/.git", "/.git/config", "/.git/hooks", "/.git/info"}; !slices.Equal(mounts, want) {
			t.Errorf("mounts %q, want %q (parents first)", mounts, want)
		}
		if len(pl.Sweep) != 1 || pl.Sweep[0].Path != filepath.Join(ws, ".envrc") {
			t.Errorf("sweep %v, want .envrc", pl.Sweep)
		}
		if len(pl.Create) != 1 || pl.Create[0].Path != filepath.Join(gitdir, "info") || !pl.Create[0].Dir {
			t.Errorf("create %v, want .git/info as a directory", pl.Create)
		}
		// The workspace rule stays whole.
		if len(pl.Rules) != 1 || pl.Rules[0].Access != policy.ReadWrite {
			t.Errorf("rules %v, want the workspace alone", pl.Rules)
		}
		if !strings.Contains(pl.Protection, "mount namespace") {
			t.Errorf("protection %q", pl.Protection)
		}
	})
	t.Run("user namespace", func(t *testing.T) {
		f := f
		f.UserNS = true
		pl, err := NewPlan(p, f, sandbox.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pl.Mounts) != 4 || !pl.viaUserNS || !strings.Contains(pl.Protection, "user namespace") {
			t.Errorf("mounts %d, via user namespace %v, protection %q; want 4 mounts made in a user namespace", len(pl.Mounts), pl.viaUserNS, pl.Protection)
		}
	})
	t.Run("carved", func(t *testing.T) {
		// Without namespaces the support matrix refuses the grant
		// (metadata, wrun's checks): carved rules run with --best-effort.
		if _, err := NewPlan(p, f, sandbox.Options{}); err == nil {
			t.Error("without namespaces the grant ran in full")
		}
		pl, err := NewPlan(p, f, sandbox.Options{BestEffort: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(pl.Mounts) != 0 {
			t.Errorf("mounts %v without a mount namespace", pl.Mounts)
		}
		got := map[string]policy.Access{}
		for _, r := range pl.Rules {
			got[strings.TrimPrefix(r.Path, ws)] = r.Access
		}
		// hooks and config lose every write right; the gitdir and the
		// workspace root keep only what no hole beneath them withholds.
		for path, acc := range got {
			switch path {
			case "/.git/hooks", "/.git/config":
				t.Errorf("%s has a rule (%s); a hole gets none", path, acc)
			case "", "/.git":
				if acc&policy.Write != 0 {
					t.Errorf("%s keeps write rights %s above a protected path", path, acc&policy.Write)
				}
			}
		}
		// A sibling of the holes gets the write rights back (reading
		// comes from the workspace rule above it).
		if acc := got["/.git/objects"]; acc != policy.Write {
			t.Errorf(".git/objects: %s, want %s", acc, policy.Write)
		}
		if !strings.Contains(pl.Protection, "carved") {
			t.Errorf("protection %q", pl.Protection)
		}
	})
}

// TestCarvedRulesUnderLandlock enforces plans with holes for real: a hole
// under a read rule is unreadable (also through a symbolic link) while its
// siblings and its ancestors' other entries stay readable, and a protected
// path under a write rule cannot be written while its siblings can.
func TestCarvedRulesUnderLandlock(t *testing.T) {
	requireABI(t, 1)
	// home/.ssh/id  home/.bashrc  home/proj/src/main.c  home/sshlink -> .ssh
	// repo/.git/config  repo/.git/objects/  repo/src/a.c
	setup := func(t *testing.T, dir string) string {
		for _, d := range []string{"home/.ssh", "home/proj/src", "repo/.git/objects", "repo/src"} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range []string{"home/.ssh/id", "home/.bashrc", "home/proj/src/main.c", "repo/.git/config", "repo/src/a.c"} {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(".ssh", filepath.Join(dir, "home/sshlink")); err != nil {
			t.Fatal(err)
		}
		return ""
	}
	plan := func(t testing.TB, dir string) (rulesetAttr, []fsRule) {
		repo := filepath.Join(dir, "repo")
		p := &policy.Policy{
			Rules: []policy.Rule{
				{Path: dir, Access: policy.ReadExec},
				{Path: repo, Access: policy.ReadWrite, Beneath: repo},
			},
			Hidden: []policy.Hole{{Path: filepath.Join(dir, "home/.ssh"), Withheld: policy.All &^ policy.ReadDir}},
			Protected: []policy.Protected{
				{Path: filepath.Join(repo, ".git/config"), Exists: true, Within: repo},
			},
		}
		// No mount namespace: protection by carving, the case to test.
		pl, err := NewPlan(p, Features{LandlockABI: kernelABI(), LandlockErrata: probed().LandlockErrata, Seccomp: true}, sandbox.Options{BestEffort: true})
		if err != nil {
			t.Fatal(err)
		}
		return pl.attr, pl.fsRules()
	}
	read := func(rel string) func(dir, _ string) error {
		return func(dir, _ string) error { return openFile(filepath.Join(dir, rel), unix.O_RDONLY) }
	}
	list := func(rel string) func(dir, _ string) error {
		return func(dir, _ string) error {
			return openFile(filepath.Join(dir, rel), unix.O_RDONLY|unix.O_DIRECTORY)
		}
	}
	write := func(rel string) func(dir, _ string) error {
		return func(dir, _ string) error { return openFile(filepath.Join(dir, rel), unix.O_WRONLY) }
	}
	create := func(rel string) func(dir, _ string) error {
		return func(dir, _ string) error {
			return openFile(filepath.Join(dir, rel), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL)
		}
	}
	c := func(name string, op func(dir, _ string) error, want unix.Errno) kcase {
		return kcase{name: name, landlock: plan, setup: setup, op: op, want: want}
	}
	runCases(t, []kcase{
		c("the hole is unreadable", read("home/.ssh/id"), unix.EACCES),
		c("the hole is unreadable through a symlink", read("home/sshlink/id"), unix.EACCES),
		c("the hole's names can be listed", list("home/.ssh"), 0),
		c("a sibling file is readable", read("home/.bashrc"), 0),
		c("a sibling tree is readable", read("home/proj/src/main.c"), 0),
		c("the hole's parent can be listed", list("home"), 0),
		c("a protected file is unwritable", write("repo/.git/config"), unix.EACCES),
		c("a protected file stays readable", read("repo/.git/config"), 0),
		c("a sibling of the protected file is writable", create("repo/.git/objects/ab"), 0),
		c("the workspace's files are writable", write("repo/src/a.c"), 0),
		c("new files in the workspace's subdirectories", create("repo/src/b.c"), 0),
		// The documented price of carving: nothing new directly in a
		// directory that holds a protected path.
		c("no new entry beside a protected path", create("repo/.git/new"), unix.EACCES),
		c("read rule is not a write rule", write("home/.bashrc"), unix.EACCES),
	})
}

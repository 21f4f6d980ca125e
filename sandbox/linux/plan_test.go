//go:build linux

package linux

import (
	"errors"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/grant"
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

// full is a machine with everything the mediation uses, at Landlock ABI
// abi with every erratum fixed.
func full(abi int) Features {
	return Features{LandlockABI: abi, LandlockErrata: errataFixed, Seccomp: true, UserNotif: true, AddFD: true,
		AddFDSend: true, WaitKillable: true, PidfdThread: true, PidfdGetfd: true, ProcMem: true}
}

// mustGrant parses a grant spec.
func mustGrant(t testing.TB, spec string) grant.Grant {
	t.Helper()
	g, err := grant.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestNewPlanGaps checks what NewPlan refuses for each kind of machine:
// the protections nothing holds are essential gaps, which refuse the run
// unless BestEffort, and then mark it degraded.
func TestNewPlanGaps(t *testing.T) {
	noMed := func(abi int) Features {
		f := full(abi)
		f.UserNotif, f.AddFD, f.AddFDSend = false, false, false
		return f
	}
	tests := []struct {
		name      string
		f         Features
		essential []string // keys of the protections refused, for --grant write
	}{
		{"no Landlock", full(0), []string{"files.write", "files.hidden", "files.plain", "files.truncate", "files.metadata", "files.protected", "files.create", "shell.signals", "shell.processes"}},
		{"ABI 1", full(1), nil},
		{"ABI 2", full(2), nil},
		{"ABI 5", full(5), nil},
		{"ABI 6", full(6), nil},
		{"ABI 7", full(7), nil},
		{"ABI 7 without the mediation", noMed(7), []string{"files.metadata", "files.create"}},
		{"ABI 5 without the mediation", noMed(5), []string{"files.metadata", "files.create", "shell.signals", "shell.wrun"}},
		{"ABI 2 without the mediation", noMed(2), []string{"files.truncate", "files.metadata", "files.create", "shell.signals", "shell.wrun"}},
		{"ABI 7 without seccomp", Features{LandlockABI: 7, LandlockErrata: errataFixed}, []string{"files.metadata", "files.create", "shell.priority", "shell.processes", "shell.wrun", "shell.ipc", "network.off", "desktop.unix", "desktop.abstract"}},
		{"ABI 7, erratum 2 unfixed, without the mediation", func() Features { f := noMed(7); f.LandlockErrata = errataFixed &^ 0b10; return f }(),
			[]string{"files.metadata", "files.create", "shell.signals", "shell.wrun"}},
		{"ABI 7 inside another wrun", func() Features { f := full(7); f.Nested, f.Outer = true, OuterWrun; return f }(), []string{"files.create"}},
		{"ABI 7 under another supervisor", func() Features { f := full(7); f.Nested, f.Outer = true, OuterOther; return f }(), []string{"files.metadata", "files.create"}},
	}
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".git/hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &policy.Policy{Grant: mustGrant(t, "write"),
				Rules:     []policy.Rule{{Path: ws, Access: policy.ReadWrite}},
				Protected: []policy.Protected{{Path: filepath.Join(ws, ".git/hooks"), Dir: true, Exists: true, Within: ws}}}
			pl, err := NewPlan(p, tt.f, sandbox.Options{})
			if pl == nil {
				t.Fatalf("no plan (error %v); explain needs one even when the run is refused", err)
			}
			var essential []string
			for _, h := range refused(pl.Holds) {
				essential = append(essential, h.Key)
			}
			if !slices.Equal(essential, tt.essential) {
				t.Errorf("refused %q, want %q", essential, tt.essential)
			}
			var ue *sandbox.UnenforceableError
			switch {
			case len(tt.essential) == 0 && err != nil:
				t.Errorf("unexpected error %v", err)
			case len(tt.essential) > 0 && !errors.As(err, &ue):
				t.Errorf("got error %v, want *sandbox.UnenforceableError", err)
			case len(tt.essential) > 0 && !strings.Contains(ue.Error(), "--best-effort"):
				t.Errorf("the error does not name --best-effort: %s", ue)
			}
			for _, g := range pl.Gaps {
				if g.Need == "" || g.Consequence == "" {
					t.Errorf("gap %q does not say what it needs and what follows", g.What)
				}
			}
			pl, err = NewPlan(p, tt.f, sandbox.Options{BestEffort: true})
			if err != nil {
				t.Fatalf("BestEffort: %v", err)
			}
			if want := len(tt.essential) > 0; pl.Degraded != want || strings.HasPrefix(pl.Summary(), "DEGRADED") != want {
				t.Errorf("BestEffort: degraded %v, summary %q; want degraded %v", pl.Degraded, pl.Summary(), want)
			}
		})
	}
}

// TestNewPlanEnforcement checks the ruleset attributes and seccomp spec
// NewPlan derives from the policy's network and IPC fields and the
// machine.
func TestNewPlanEnforcement(t *testing.T) {
	type want struct {
		net, scoped       uint64
		resolveUnix       bool
		denyInet          bool
		denyUnix, sockets bool
		truncate, signals bool
		unix              UnixMechanism
	}
	const both = llNetBindTCP | llNetConnectTCP
	const scopes = llScopeSignal | llScopeAbstractUnix
	off, on := policy.Network{}, policy.Network{Allow: true}
	desktop := policy.IPC{AbstractUnixOutside: true, PathUnixOutside: true}
	noGetfd := full(7)
	noGetfd.PidfdGetfd = false
	tests := []struct {
		name string
		f    Features
		net  policy.Network
		ipc  policy.IPC
		want want
	}{
		{"ABI 2, network off", full(2), off, policy.IPC{}, want{denyInet: true, sockets: true, truncate: true, signals: true, unix: UnixMediated}},
		{"ABI 4, network off", full(4), off, policy.IPC{}, want{net: both, denyInet: true, sockets: true, signals: true, unix: UnixMediated}},
		{"ABI 6, network off", full(6), off, policy.IPC{}, want{net: both, scoped: scopes, denyInet: true, sockets: true, unix: UnixMediated}},
		{"ABI 7, network on", full(7), on, policy.IPC{}, want{scoped: scopes, sockets: true, unix: UnixMediated}},
		{"ABI 7, no pidfd_getfd", noGetfd, on, policy.IPC{}, want{scoped: scopes, denyUnix: true, unix: UnixRefused}},
		{"ABI 7, desktop", full(7), on, desktop, want{scoped: llScopeSignal, unix: UnixOpen}},
		{"ABI 7, network off, desktop", full(7), off, desktop, want{net: both, scoped: llScopeSignal, denyInet: true, unix: UnixOpen}},
		{"ABI 9, network off", full(9), off, policy.IPC{}, want{net: both, scoped: scopes, resolveUnix: true, denyInet: true, unix: UnixLandlock}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &policy.Policy{Network: tt.net, IPC: tt.ipc}
			pl, err := NewPlan(p, tt.f, sandbox.Options{BestEffort: true})
			if err != nil {
				t.Fatal(err)
			}
			wantFS := handledFS(tt.f.LandlockABI)
			if !tt.want.resolveUnix {
				wantFS &^= llResolveUnix
			}
			if pl.attr.handledFS != wantFS || pl.attr.handledNet != tt.want.net || pl.attr.scoped != tt.want.scoped {
				t.Errorf("handled fs %#x net %#x scoped %#x, want %#x %#x %#x", pl.attr.handledFS, pl.attr.handledNet, pl.attr.scoped,
					wantFS, tt.want.net, tt.want.scoped)
			}
			s := pl.seccomp
			if s.DenyInet != tt.want.denyInet || s.DenyUnix != tt.want.denyUnix || s.Sockets != tt.want.sockets ||
				s.Truncate != tt.want.truncate || s.Signals != tt.want.signals || !s.Mediate {
				t.Errorf("seccomp %+v, want %+v", s, tt.want)
			}
			if pl.Unix != tt.want.unix {
				t.Errorf("UNIX sockets %s, want %s", pl.Unix, tt.want.unix)
			}
		})
	}
}

// TestCarvedDirs: the directories the mediation watches are those on the
// way from a writable rule down to a hole beneath it; a hole at the rule
// itself, a hole beneath a read-only rule and a rule inside a hole make
// none.
func TestCarvedDirs(t *testing.T) {
	rw, ro := policy.ReadWrite, policy.ReadExec
	tests := []struct {
		name  string
		rules []policy.Rule
		holes []policy.Hole
		want  []string
	}{
		{"protected files of a repository", []policy.Rule{{Path: "/ws", Access: rw}},
			[]policy.Hole{{Path: "/ws/.git/config", Withheld: policy.Write}, {Path: "/ws/.git/hooks", Withheld: policy.Write}, {Path: "/ws/.wrun.toml", Withheld: policy.Write}},
			[]string{"/ws", "/ws/.git"}},
		{"a deep protected path", []policy.Rule{{Path: "/ws", Access: rw}},
			[]policy.Hole{{Path: "/ws/a/b/c", Withheld: policy.Write}}, []string{"/ws", "/ws/a", "/ws/a/b"}},
		{"a hole at the rule", []policy.Rule{{Path: "/ws", Access: rw}}, []policy.Hole{{Path: "/ws", Withheld: policy.Write}}, nil},
		{"beneath a read-only rule", []policy.Rule{{Path: "/", Access: ro}}, []policy.Hole{{Path: "/home/u/.ssh", Withheld: policy.All}}, nil},
		{"a rule inside the hole", []policy.Rule{{Path: "/home/u/.cache", Access: rw}}, []policy.Hole{{Path: "/home/u", Withheld: policy.All}}, nil},
		{"a hidden path in a writable tree", []policy.Rule{{Path: "/home/u", Access: rw}}, []policy.Hole{{Path: "/home/u/.ssh", Withheld: policy.All}}, []string{"/home/u"}},
		{"the root", []policy.Rule{{Path: "/", Access: rw}}, []policy.Hole{{Path: "/x", Withheld: policy.Write}}, []string{"/"}},
	}
	for _, tt := range tests {
		if got := carvedDirs(tt.rules, tt.holes); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestNewPlanProtection checks how protected paths are enforced: carved
// out of the command's rules (their directories watched by the
// mediation), the writable tree whole for the performers, a sweep for
// paths that must not appear.
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
		Grant: mustGrant(t, "write"),
		Rules: []policy.Rule{{Path: ws, Access: policy.ReadWrite}},
		Protected: []policy.Protected{
			{Path: filepath.Join(gitdir, "hooks"), Dir: true, Exists: true, Within: ws},
			{Path: filepath.Join(gitdir, "config"), Exists: true, Within: ws},
			{Path: gitdir, Dir: true, Exists: true, Pin: true, Within: ws},
			{Path: filepath.Join(ws, ".envrc"), Within: ws},
			{Path: filepath.Join(gitdir, "info"), Dir: true, Create: policy.CreateDir, Within: ws},
		},
	}
	check := func(t *testing.T, pl *Plan) {
		if len(pl.Sweep) != 1 || pl.Sweep[0].Path != filepath.Join(ws, ".envrc") {
			t.Errorf("sweep %v, want .envrc", pl.Sweep)
		}
		if len(pl.Create) != 1 || pl.Create[0].Path != filepath.Join(gitdir, "info") || !pl.Create[0].Dir {
			t.Errorf("create %v, want .git/info as a directory", pl.Create)
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
		if acc := got["/.git/objects"]; acc != policy.Write {
			t.Errorf(".git/objects: %s, want %s", acc, policy.Write)
		}
		if want := []string{ws, gitdir}; !slices.Equal(pl.Mediated, want) {
			t.Errorf("mediated %q, want %q", pl.Mediated, want)
		}
	}
	t.Run("mediation", func(t *testing.T) {
		pl, err := NewPlan(p, full(7), sandbox.Options{})
		if err != nil {
			t.Fatal(err)
		}
		check(t, pl)
		if len(pl.perfRules) == 0 || pl.perfRules[0].Path != ws || pl.perfRules[0].Access != policy.ReadWrite {
			t.Errorf("performer rules %+v, want the workspace whole first", pl.perfRules)
		}
		if !strings.Contains(pl.Protection, "performing") {
			t.Errorf("protection %q", pl.Protection)
		}
	})
	t.Run("carved only", func(t *testing.T) {
		f := full(7)
		f.UserNotif, f.AddFD = false, false
		if _, err := NewPlan(p, f, sandbox.Options{}); err == nil {
			t.Error("without the mediation --grant write ran in full")
		}
		pl, err := NewPlan(p, f, sandbox.Options{BestEffort: true})
		if err != nil {
			t.Fatal(err)
		}
		check(t, pl)
		if !strings.Contains(pl.Protection, "carved") || pl.mediate {
			t.Errorf("protection %q, mediate %v", pl.Protection, pl.mediate)
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
		// The command's own rules: protection by carving, the case to
		// test (the mediation is not in play here).
		pl, err := NewPlan(p, Features{LandlockABI: kernelABI(), LandlockErrata: probed().LandlockErrata, Seccomp: true}, sandbox.Options{BestEffort: true})
		if err != nil {
			t.Fatal(err)
		}
		return pl.attr, fsRules(pl.Rules)
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

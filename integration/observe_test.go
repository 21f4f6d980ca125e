//go:build linux

package integration

import (
	"path/filepath"
	"strings"
	"testing"
)

type observed struct {
	ExitCode int
	Denials  []observedDenial
}

type observedDenial struct {
	Op, Path, Addr, Right, Program string
	Exact                          bool
	Count                          int
}

// runObserved runs wrun --json and returns the denials of its request, or
// of a run that succeeded (and so asked for nothing) the denials it
// recorded, and the expected ones either way.
func runObserved(t *testing.T, o runOpts, args ...string) (observed, result) {
	t.Helper()
	s, req, r := runJSON(t, o, args...)
	ob := observed{ExitCode: s.ExitCode}
	rd := recordedOf(t, r)
	if req != nil && s.ExitCode == 0 || s.ExitCode != 0 && len(rd.Ignored) > 0 {
		t.Errorf("request %v with exit status %d and %d ignored denials", req != nil, s.ExitCode, len(rd.Ignored))
	}
	all := append(rd.Ignored, rd.Expected...)
	if req != nil {
		all = append(req.Denials, all...)
	}
	for _, d := range all {
		ob.Denials = append(ob.Denials, observedDenial{Op: d.Op, Path: d.Path, Addr: d.Addr, Right: d.Right,
			Program: d.Program, Exact: d.Evidence == "exact", Count: d.Count})
	}
	return ob, r
}

func TestObserverReportsExactDenials(t *testing.T) {
	requireABI(t, 3)
	if !bins.features.UserNotif {
		t.Skip("needs seccomp user notification (Linux 5.0)")
	}
	ws := workspace(t)
	outside := filepath.Join(workspace(t), "out.txt")
	ob, r := runObserved(t, runOpts{dir: ws}, "--grant", "inspect", "--", "sh", "-c",
		"echo x > "+outside+"; echo y > "+outside+"; mkdir "+filepath.Join(ws, "d")+"; echo ok > $TMPDIR/fine")
	if r.code != 0 {
		t.Fatalf("%s", r)
	}
	want := map[string]bool{
		"create " + outside + " make_reg 2":               false,
		"mkdir " + filepath.Join(ws, "d") + " make_dir 1": false,
	}
	for _, d := range ob.Denials {
		key := d.Op + " " + d.Path + " " + d.Right + " " + string(rune('0'+d.Count))
		if _, ok := want[key]; ok {
			want[key] = true
		} else {
			t.Errorf("unexpected denial %+v", d)
		}
		if wantProg := map[string]string{"create": "sh", "mkdir": "mkdir"}[d.Op]; !d.Exact || d.Program != wantProg {
			t.Errorf("denial %+v: want exact, program %s", d, wantProg)
		}
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("missing denial %q in %+v", k, ob.Denials)
		}
	}
	// Control: with the observer off the kernel still refuses (Landlock
	// holds the write; --observe=off silences the records, not the
	// refusal), and nothing exact is reported.
	ob, _ = runObserved(t, runOpts{dir: ws}, "--observe=off", "--", "sh", "-c", "echo x > "+outside)
	if exists(outside) {
		t.Fatal("without the observer the write went through")
	}
	for _, d := range ob.Denials {
		if d.Exact {
			t.Errorf("an exact denial reported with --observe=off: %+v", d)
		}
	}
}

func TestObserverReportsProtectedAndNetworkDenials(t *testing.T) {
	requireABI(t, 3)
	if !bins.features.UserNotif {
		t.Skip("needs seccomp user notification (Linux 5.0)")
	}
	ws := workspace(t)
	newRepo(t, ws)
	ob, _ := runObserved(t, runOpts{dir: ws}, "--grant", "write", "--", "sh", "-c", "echo evil > .git/hooks/pre-commit")
	hook := filepath.Join(ws, ".git", "hooks", "pre-commit")
	if len(ob.Denials) != 1 || ob.Denials[0].Path != hook || ob.Denials[0].Op != "create" {
		t.Fatalf("want one create denial for %s, got %+v", hook, ob.Denials)
	}
	if exists(hook) {
		t.Fatal("the hook was created")
	}
	ob, _ = runObserved(t, runOpts{dir: ws}, "--grant", "verify,network=off", "--", bins.probe, "tcp", "127.0.0.1:9")
	if len(ob.Denials) != 1 || ob.Denials[0].Op != "socket" || ob.Denials[0].Addr != "AF_INET" {
		t.Fatalf("want one socket denial, got %+v", ob.Denials)
	}
}

func TestObserverSeesThroughProcMagicLinks(t *testing.T) {
	requireABI(t, 3)
	if !bins.features.UserNotif {
		t.Skip("needs seccomp user notification (Linux 5.0)")
	}
	ws := workspace(t)
	// stdout is a pipe here: reopening it through /dev/stdout or
	// /proc/self/fd is not a path Landlock checks, so nothing is denied.
	ob, r := runObserved(t, runOpts{dir: ws}, "--", "sh", "-c", "echo a > /dev/stdout; echo b > /proc/self/fd/1")
	if r.code != 0 || !strings.Contains(r.stdout, "a\nb") {
		t.Fatalf("%s", r)
	}
	if len(ob.Denials) != 0 {
		t.Errorf("false denials through magic links: %+v", ob.Denials)
	}
	// /proc/self is the child's, not wrun's.
	ob, _ = runObserved(t, runOpts{dir: ws}, "--", "sh", "-c", "echo 0 > /proc/self/oom_score_adj")
	if len(ob.Denials) != 1 || !strings.HasPrefix(ob.Denials[0].Path, "/proc/") || !strings.HasSuffix(ob.Denials[0].Path, "/oom_score_adj") || strings.Contains(ob.Denials[0].Path, "self") {
		t.Errorf("want one denial on /proc/PID/oom_score_adj, got %+v", ob.Denials)
	}
}

// TestCreatingWhatExistsIsNoDenial: mkdir, mknod, symlink and link of a
// name that exists fail with EEXIST before the kernel asks Landlock, so
// `mkdir -p` walking up through /tmp (cmake, make) reports no denial,
// while the same calls for a new name outside the grant are reported.
func TestCreatingWhatExistsIsNoDenial(t *testing.T) {
	requireABI(t, 3)
	if !bins.features.UserNotif {
		t.Skip("needs seccomp user notification (Linux 5.0)")
	}
	requireTool(t, "sh", "mkdir", "ln", "mkfifo")
	ws := workspace(t)
	out := workspace(t)
	f := filepath.Join(out, "f")
	mustWrite(t, f, "x")
	existing := "mkdir " + out + "; mkdir -p " + out + "; mkfifo " + f + "; ln -s x " + f + "; ln " + f + " " + f + "; true"
	ob, r := runObserved(t, runOpts{dir: ws}, "--grant", "verify", "--", "sh", "-c", existing+" 2>/dev/null")
	if r.code != 0 {
		t.Fatalf("%s", r)
	}
	for _, d := range ob.Denials {
		if strings.HasPrefix(d.Path, out) {
			t.Errorf("a create of a name that exists reported as a denial: %+v", d)
		}
	}
	// Control: the same calls for new names are refused and reported.
	fresh := "mkdir " + out + "/d; mkfifo " + out + "/p; ln -s x " + out + "/s; ln " + f + " " + out + "/h; true"
	ob, _ = runObserved(t, runOpts{dir: ws}, "--grant", "verify", "--", "sh", "-c", fresh+" 2>/dev/null")
	seen := map[string]bool{}
	for _, d := range ob.Denials {
		seen[d.Path] = true
	}
	for _, n := range []string{"d", "p", "s", "h"} {
		if p := filepath.Join(out, n); !seen[p] || exists(p) {
			t.Errorf("control: %s was not refused and reported (reported: %v)", p, ob.Denials)
		}
	}
}

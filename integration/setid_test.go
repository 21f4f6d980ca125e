//go:build linux

package integration

import (
	"encoding/json"
	"github.com/wrun-dev/wrun/sandbox/linux"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSetgidDirectory: a directory's setgid bit (new entries inherit its
// group) is harmless and test suites set it (filepath-securejoin's
// MkdirAll tests): under verify it is made, by chmod and by fchmod, in the
// private TMPDIR and (files=write) in the workspace. A file's setuid or
// setgid bit stays refused, also through a symbolic link to the file,
// and the refusal is a denial wrun reports. Each act is the control bare.
func TestSetgidDirectory(t *testing.T) {
	if !linux.Mediates(matrixFeatures(runOpts{})) {
		t.Skip("a directory's setgid bit is made by the mediation (seccomp user notification); without it every setgid chmod is refused")
	}
	ws := workspace(t)
	// One script, run bare (TMPDIR a fresh directory) and under verify
	// (the private TMPDIR), prints one line per act.
	script := `P=` + bins.probe + `
cd "$TMPDIR"
mkdir d e && touch f && ln -s f l && ln -s d ld
echo "chmod-dir $($P chmod d 2755)"
echo "fchmod-dir $($P fchmod e 2775)"
echo "chmod-dir-link $($P chmod ld 2700)"
echo "chmod-file $($P chmod f 2755)"
echo "chmod-file-link $($P chmod l 2755)"
echo "setuid-dir $($P chmod d 4755)"
echo "plain $($P chmod f 0600)"
`
	want := map[string]string{
		"chmod-dir": "ok", "fchmod-dir": "ok", "chmod-dir-link": "ok", "plain": "ok",
		"chmod-file": "err EPERM", "chmod-file-link": "err EPERM", "setuid-dir": "err EPERM",
	}
	tmp := t.TempDir()
	ctl := run(t, runOpts{dir: ws, env: []string{"TMPDIR=" + tmp}}, "sh", "-c", script)
	for act := range want {
		if !strings.Contains(ctl.stdout, act+" ok") {
			t.Fatalf("control: %s without wrun did not succeed:\n%s", act, ctl)
		}
	}
	sumPath := filepath.Join(t.TempDir(), "summary.json")
	sum, err := os.Create(sumPath)
	if err != nil {
		t.Fatal(err)
	}
	defer sum.Close()
	r := wrun(t, runOpts{dir: ws, files: []*os.File{sum}}, "--grant", "verify", "--json-fd", "3", "--", "sh", "-c", script)
	for act, w := range want {
		if !strings.Contains(r.stdout, act+" "+w) {
			t.Errorf("%s under verify: want %q\n%s", act, w, r)
		}
	}
	// Every refusal is reported: a denial of the right set_id naming the
	// file, classified as the sandbox's boundary.
	type denial struct {
		Op, Path, Right string
		WithheldBy      struct{ Field, Rule string } `json:"withheld_by"`
	}
	// The command's exit status is 0: its denials are listed as ignored.
	var s struct {
		Denials []denial `json:"denials"`
		Ignored []denial `json:"denials_ignored"`
	}
	if err := json.Unmarshal([]byte(mustRead(t, sumPath)), &s); err != nil {
		t.Fatalf("decoding the summary: %v", err)
	}
	var refused []string
	for _, d := range append(s.Denials, s.Ignored...) {
		if d.Right == "set_id" {
			refused = append(refused, d.Op+" "+filepath.Base(d.Path)+" "+d.WithheldBy.Rule)
		}
	}
	slices.Sort(refused)
	if got := strings.Join(refused, ", "); got != "chmod d setid-file, chmod f setid-file" {
		t.Errorf("denials of set_id: %q, want chmod of f (directly and through l) and of d (setuid); summary:\n%s", got, mustRead(t, sumPath))
	}

	// files=write: the workspace's directory keeps its bit after the run,
	// the file does not get one.
	t.Run("workspace", func(t *testing.T) {
		ws := workspace(t)
		dir, file := filepath.Join(ws, "shared"), filepath.Join(ws, "tool")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, file, "#!/bin/sh\n")
		r := wrun(t, runOpts{dir: ws}, "--grant", "write", "--", "sh", "-c",
			bins.probe+" chmod "+dir+" 2775; "+bins.probe+" chmod "+file+" 2755")
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSetgid == 0 {
			t.Errorf("the workspace directory has no setgid bit after chmod 2775 under write (%v):\n%s", fi.Mode(), r)
		}
		fi, err = os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&(os.ModeSetgid|os.ModeSetuid) != 0 {
			t.Errorf("a file in the workspace got a setid bit (%v):\n%s", fi.Mode(), r)
		}
		if !strings.Contains(r.stdout, "err EPERM") {
			t.Errorf("chmod 2755 of a file under write: want EPERM:\n%s", r)
		}
		// Control: bare, the file takes the bit.
		if got := bare(t, runOpts{dir: ws}, "chmod", file, "2755"); got != "ok" {
			t.Errorf("control: chmod 2755 of the file bare: %s", got)
		}
	})
}

// TestOpenat2IsPerformed: openat2 keeps its flags and mode in memory,
// where a filter cannot read them: wrun performs it with its own copy,
// under the command's own Landlock rules, so it works as bare (a read, a
// create in the workspace under write) and is refused where the kernel
// would refuse the command (a write outside), and a setuid mode is
// refused with a denial. Controls: the same calls bare.
func TestOpenat2IsPerformed(t *testing.T) {
	ws := workspace(t)
	target := filepath.Join(ws, "file")
	mustWrite(t, target, "x")
	if got := bare(t, runOpts{dir: ws}, "openat2", target); got != "ok" {
		t.Skipf("openat2 does not work bare here: %s", got)
	}
	if got := probe(t, runOpts{dir: ws}, "verify", "openat2", target); got != "ok" {
		t.Errorf("openat2 of a readable file under verify: %s, want ok", got)
	}
	if !bins.features.UserNotif {
		return
	}
	made := filepath.Join(ws, "made")
	if got := bare(t, runOpts{dir: ws}, "openat2-create", made, "6755"); got != "ok" {
		t.Skipf("control: openat2-create bare: %s", got)
	}
	os.Remove(made)
	r := wrun(t, runOpts{dir: ws}, "--grant", "write", "--", bins.probe, "openat2-create", made, "6755")
	if fi, err := os.Stat(made); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
		t.Errorf("ESCAPE: a setid file was made by openat2: %v\n%s", fi.Mode(), r)
	}
	if !strings.Contains(r.stdout, "err EPERM") {
		t.Errorf("openat2 with a setid mode: %s, want EPERM", r)
	}
	// A plain create in the workspace root (which the mediation makes),
	// and one outside the write scope (which the kernel refuses).
	if got := probe(t, runOpts{dir: ws}, "write", "openat2-create", filepath.Join(ws, "plain"), "644"); got != "ok" || !exists(filepath.Join(ws, "plain")) {
		t.Errorf("openat2 create in the workspace under write: %s", got)
	}
	out := filepath.Join(workspace(t), "out")
	if got := probe(t, runOpts{dir: ws}, "write", "openat2-create", out, "644"); !strings.HasPrefix(got, "err EACCES") || exists(out) {
		t.Errorf("openat2 create outside the write scope: %s, want EACCES", got)
	}
}

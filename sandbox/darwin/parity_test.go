package darwin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
)

// host builds, on disk under root, a user's home with a git clone as the
// workspace, and returns the facts policy.Compute takes about it. The
// paths are what vary between runs; the profile text must not.
func host(t testing.TB, root string) policy.Host {
	t.Helper()
	home := filepath.Join(root, "home")
	ws := filepath.Join(home, "proj")
	tmp := filepath.Join(root, "tmp", "wrun-1")
	for _, d := range []string{ws + "/.git/hooks", ws + "/.git/objects", ws + "/.git/refs/heads", ws + "/src",
		home + "/.ssh", home + "/.cache", home + "/.config/git", tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, body := range map[string]string{
		ws + "/.git/config":  "[core]\n\tbare = false\n",
		ws + "/.git/HEAD":    "ref: refs/heads/main\n",
		ws + "/src/main.go":  "package main\n",
		ws + "/go.mod":       "module example.com/p\n",
		home + "/.ssh/id_ed": "secret\n",
		home + "/.bashrc":    "# rc\n",
	} {
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return policy.Host{
		Workdir: ws, Home: home, TempDir: tmp,
		Env:      []string{"HOME=" + home, "PATH=/usr/bin:/bin", "LANG=C.UTF-8"},
		StateDir: filepath.Join(home, ".cache", "wrun"),
		Sandbox:  Platform,
		Roots:    policy.SystemRoots("darwin"),
	}
}

func compute(t testing.TB, spec string, h policy.Host) *policy.Policy {
	t.Helper()
	g, err := grant.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Compute(g, h, policy.Options{})
	if err != nil {
		t.Fatalf("compute %s: %v", spec, err)
	}
	return p
}

// The grants every parity and golden test covers: each preset, and the
// fields that change the profile.
var specs = []string{"inspect", "verify", "write", "full", "files=none", "write,desktop=on", "verify,network=off"}

// probe is one operation, asked of both the profile (as Seatbelt checks
// it) and the Linux policy's access model.
type probe struct {
	name string
	op   access.Op
}

// requests are the Seatbelt operations op needs, every one of them
// allowed; canon maps a Linux path onto the name Seatbelt matches.
func requests(op access.Op, canon func(string) string) []request {
	p, d := canon(op.Path), canon(op.Dest)
	switch op.Kind {
	case access.OpOpen:
		switch {
		case op.Dir:
			return []request{{op: "file-read-data", path: p, dir: true}}
		case op.Rights&policy.WriteFile != 0:
			return []request{{op: "file-write-data", path: p}}
		}
		return []request{{op: "file-read-data", path: p}}
	case access.OpExec:
		return []request{{op: "process-exec", path: p}, {op: "process-exec-interpreter", path: p}}
	case access.OpCreate:
		return []request{{op: "file-write-create", path: p}, {op: "file-write-data", path: p}}
	case access.OpMkdir:
		return []request{{op: "file-write-create", path: p, dir: true}}
	case access.OpUnlink, access.OpRmdir:
		return []request{{op: "file-write-unlink", path: p, dir: op.Dir}}
	case access.OpRename:
		return []request{{op: "file-write-unlink", path: p, dir: op.Dir}, {op: "file-write-create", path: d, dir: op.Dir}}
	case access.OpConnect:
		if rest, ok := strings.CutPrefix(op.Addr, "unix:"); ok {
			return []request{{op: "network-outbound", path: canon(rest)}}
		}
		return []request{{op: "network-outbound", remoteIP: op.Addr}}
	}
	panic("no Seatbelt mapping for " + op.Kind)
}

func probes(h policy.Host) []probe {
	ws, home, tmp := h.Workdir, h.Home, h.TempDir
	git := ws + "/.git"
	open := func(name, path string, rights policy.Access) probe {
		return probe{name, access.Op{Kind: access.OpOpen, Path: path, Rights: rights}}
	}
	kind := func(name, k, path string) probe { return probe{name, access.Op{Kind: k, Path: path}} }
	list := func(name, path string) probe {
		return probe{name, access.Op{Kind: access.OpOpen, Path: path, Dir: true}}
	}
	rename := func(name, from, to string, dir bool) probe {
		return probe{name, access.Op{Kind: access.OpRename, Path: from, Dest: to, Dir: dir}}
	}
	connect := func(name, addr string) probe { return probe{name, access.Op{Kind: access.OpConnect, Addr: addr}} }
	return []probe{
		open("read a workspace file", ws+"/src/main.go", policy.ReadFile),
		list("list the workspace", ws),
		list("list a workspace dir", ws+"/src"),
		open("write a workspace file", ws+"/src/main.go", policy.WriteFile),
		kind("create a file in a workspace dir", access.OpCreate, ws+"/src/new.go"),
		kind("make a dir in a workspace dir", access.OpMkdir, ws+"/src/sub"),
		kind("remove a workspace file", access.OpUnlink, ws+"/src/main.go"),
		rename("rename a workspace file", ws+"/src/main.go", ws+"/src/other.go", false),
		rename("move a workspace file to TMPDIR", ws+"/src/main.go", tmp+"/main.go", false),
		rename("move a TMPDIR file into the workspace", tmp+"/f", ws+"/src/f", false),
		kind("remove the workspace itself", access.OpRmdir, ws),
		open("read git config", git+"/config", policy.ReadFile),
		open("write git config", git+"/config", policy.WriteFile),
		kind("remove git config", access.OpUnlink, git+"/config"),
		{"replace git config", access.Op{Kind: access.OpRename, Path: ws + "/src/main.go", Dest: git + "/config", Replace: true}},
		rename("move git config away", git+"/config", ws+"/src/config", false),
		kind("create a git hook", access.OpCreate, git+"/hooks/pre-commit"),
		kind("remove the hooks dir", access.OpRmdir, git+"/hooks"),
		kind("create git's commondir", access.OpCreate, git+"/commondir"),
		kind("create config.worktree", access.OpCreate, git+"/config.worktree"),
		rename("rename .git", git, ws+"/git-old", true),
		open("write HEAD", git+"/HEAD", policy.WriteFile),
		kind("create a ref", access.OpCreate, git+"/refs/heads/topic"),
		kind("create a file in the private temp dir", access.OpCreate, tmp+"/x"),
		kind("make a dir in the private temp dir", access.OpMkdir, tmp+"/d"),
		open("write a file in the private temp dir", tmp+"/f", policy.WriteFile),
		kind("remove a file in the private temp dir", access.OpUnlink, tmp+"/f"),
		kind("remove the private temp dir", access.OpRmdir, tmp),
		open("read an SSH key", home+"/.ssh/id_ed", policy.ReadFile),
		list("list ~/.ssh", home+"/.ssh"),
		kind("create in ~/.ssh", access.OpCreate, home+"/.ssh/authorized_keys"),
		open("write ~/.bashrc", home+"/.bashrc", policy.WriteFile),
		kind("create in ~/.cache", access.OpCreate, home+"/.cache/tool/x"),
		kind("create in the home dir", access.OpCreate, home+"/.profile"),
		open("read /usr/bin/env", "/usr/bin/env", policy.ReadFile),
		kind("execute /usr/bin/env", access.OpExec, "/usr/bin/env"),
		open("read /etc/hosts", "/etc/hosts", policy.ReadFile),
		list("list /", "/"),
		open("write /etc/hosts", "/etc/hosts", policy.WriteFile),
		kind("create in /usr/local", access.OpCreate, "/usr/local/x"),
		open("write /dev/null", "/dev/null", policy.WriteFile),
		open("read /dev/urandom", "/dev/urandom", policy.ReadFile),
		open("read a disk", "/dev/disk0", policy.ReadFile),
		open("read another terminal", "/dev/ttys003", policy.ReadFile),
		connect("connect to a TCP port on loopback", "127.0.0.1:8080"),
		connect("connect to a TCP port outside", "192.0.2.1:443"),
		connect("connect to the docker socket", "unix:/var/run/docker.sock"),
		connect("connect to an agent socket in the home dir", "unix:"+home+"/.ssh/agent.sock"),
	}
}

// difference says why the profile and the Linux model may answer op
// differently, or "" when they must agree. Each is a consequence of
// Seatbelt matching paths where Landlock follows files, and each is on
// the stricter side or a Landlock artefact Seatbelt does not need:
func difference(m *access.Model, p *policy.Policy, op access.Op, sbAllowed bool) string {
	missing := m.Check(op)
	if sbAllowed && len(missing) > 0 {
		// Landlock takes a hole's rights from every directory on the
		// way down to it (a carved rule); Seatbelt names the hole alone.
		for _, ms := range missing {
			if ms.Cause.Kind != access.CauseCarved {
				return ""
			}
		}
		return "carved: Landlock narrows the directories above a hole"
	}
	if !sbAllowed && len(missing) == 0 {
		for _, pr := range p.Protected {
			// A protected path that does not exist: Linux cannot keep the
			// child from creating it and removes it after the run;
			// Seatbelt refuses its creation.
			if !pr.Exists && pr.Create == policy.CreateNone && policy.Within(op.Path, pr.Path) {
				return "seatbelt refuses creating a protected path Linux sweeps after the run"
			}
			if op.Kind == access.OpRename && policy.Within(op.Dest, pr.Path) && !pr.Exists {
				return "seatbelt refuses creating a protected path Linux sweeps after the run"
			}
			// A directory above a protected path: a read-only mount moves
			// with it on Linux; Seatbelt's protection stays with the path.
			if (op.Kind == access.OpRename || op.Kind == access.OpRmdir || op.Kind == access.OpUnlink) &&
				op.Path != pr.Path && policy.Within(pr.Path, op.Path) {
				return "seatbelt keeps directories above a protected path in place"
			}
		}
	}
	return ""
}

// mismatches returns the probes on which prof and the Linux model of p
// disagree for no listed reason, and how many agree.
func mismatches(t *testing.T, p *policy.Policy, prof Profile, h policy.Host) (bad []string, agree int) {
	t.Helper()
	canon := func(p string) string { return Canonical(p, nil) }
	e := newEval(t, prof)
	m := access.New(p, access.Platform{Protection: access.ProtectExact, UnixConfined: true})
	for _, pb := range probes(h) {
		sb := true
		for _, r := range requests(pb.op, canon) {
			if ok, _ := e.decide(t, r); !ok {
				sb = false
			}
		}
		linux := len(m.Check(pb.op)) == 0
		if sb == linux {
			agree++
			continue
		}
		if why := difference(m, p, pb.op, sb); why != "" {
			t.Logf("%s: seatbelt allows=%v, linux allows=%v: %s", pb.name, sb, linux, why)
			continue
		}
		bad = append(bad, fmt.Sprintf("%s: seatbelt allows=%v, linux allows=%v (%+v)", pb.name, sb, linux, m.Check(pb.op)))
	}
	return bad, agree
}

// One grant, one meaning: for every grant and probe, the generated
// profile (evaluated as Seatbelt would) and the Linux policy's access
// model give the same answer, but for the listed, stricter differences.
func TestParityWithLinuxModel(t *testing.T) {
	h := host(t, t.TempDir())
	for _, spec := range specs {
		t.Run(spec, func(t *testing.T) {
			p := compute(t, spec, h)
			prof, err := Generate(Input{Policy: p, RunID: "T"})
			if err != nil {
				t.Fatal(err)
			}
			bad, agree := mismatches(t, p, prof, h)
			for _, b := range bad {
				t.Error(b)
			}
			if agree < 40 {
				t.Errorf("only %d probes agree", agree)
			}
		})
	}
}

// The parity test can fail: a profile whose allows no longer carve out the
// protected paths, or the hidden ones, disagrees with the Linux model.
func TestParityCatchesWeakerProfile(t *testing.T) {
	h := host(t, t.TempDir())
	p := compute(t, "write", h)
	prof, err := Generate(Input{Policy: p, RunID: "T"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []string{`(param "PROTECT_`, `(require-not (subpath (param "HIDE_`} {
		var kept []string
		for _, l := range strings.Split(prof.Text, "\n") {
			if !strings.Contains(l, cut) {
				kept = append(kept, l)
			}
		}
		weak := Profile{Text: strings.Join(kept, "\n"), Params: prof.Params}
		if bad, _ := mismatches(t, p, weak, h); len(bad) == 0 {
			t.Errorf("without %q the profile still agrees with the Linux model", cut)
		}
	}
}

// Hidden paths inside the writable workspace (a file only its owner may
// read, as the private-file scan finds them): not readable, not removed
// or renamed, nor the directory above them; on both systems.
func TestParityHiddenInWorkspace(t *testing.T) {
	h := host(t, t.TempDir())
	secret := h.Workdir + "/src/private.pem"
	if err := os.WriteFile(secret, []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := compute(t, "write", h)
	p.Hidden = append(p.Hidden, policy.Hole{Path: secret, Withheld: policy.All &^ policy.ReadDir, Why: "readable by its owner only"})
	prof, err := Generate(Input{Policy: p, RunID: "T"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEval(t, prof)
	m := access.New(p, access.Platform{Protection: access.ProtectExact, UnixConfined: true})
	canon := func(p string) string { return Canonical(p, nil) }
	for _, c := range []struct {
		name string
		op   access.Op
		want bool
	}{
		{"read it", access.Op{Kind: access.OpOpen, Path: secret, Rights: policy.ReadFile}, false},
		{"remove it", access.Op{Kind: access.OpUnlink, Path: secret}, false},
		{"move it out", access.Op{Kind: access.OpRename, Path: secret, Dest: h.TempDir + "/k"}, false},
		{"move its directory", access.Op{Kind: access.OpRename, Path: h.Workdir + "/src", Dest: h.Workdir + "/src2", Dir: true}, false},
		{"write beside it (control)", access.Op{Kind: access.OpOpen, Path: h.Workdir + "/src/main.go", Rights: policy.WriteFile}, true},
	} {
		sb := true
		for _, r := range requests(c.op, canon) {
			if ok, _ := e.decide(t, r); !ok {
				sb = false
			}
		}
		linux := len(m.Check(c.op)) == 0
		if sb != c.want || linux != c.want {
			t.Errorf("%s: seatbelt allows=%v, linux allows=%v, want %v", c.name, sb, linux, c.want)
		}
	}
}

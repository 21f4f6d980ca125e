//go:build linux

package integration

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/escalate"
)

// The harness contract, on real tools: for each scenario the command fails
// under its grant with a request whose first denial (the likeliest cause)
// is the scenario's; every alternative of it a harness can apply (the
// --allow-write or --grant of `args`, the wrun command lines of a route's
// `commands`) is applied exactly as a harness would, on the same fixture
// made afresh, and the denial does not come back; and the harness loop
// (apply the first applicable alternative of the first denial, rerun,
// again) makes the command succeed, or, where nothing may be widened, the
// first alternative says why (asking the parent, with the reason).

// scenario is one real command under one grant that a denial makes fail.
type scenario struct {
	name  string
	tools []string
	grant string
	// setup makes the fixture in dir (empty) and returns the directory to
	// run in and the command; it is called again before each alternative
	// is applied, on the same path.
	setup func(t *testing.T, dir string) (cwd string, argv []string)
	env   []string
	// flags, if set, are wrun flags the command line starts with.
	flags func(dir string) []string
	// denial recognises the scenario's denial.
	rule string
	path func(dir string) string // the denied path
	// first is the catalogue id of the first alternative inside the
	// ceiling (advice and asking the parent included).
	first string
	// succeeds: the harness loop makes the command succeed. When false
	// nothing may be widened, and the first alternative asks the parent.
	succeeds bool
}

// scenarioSummary is what a scenario reads of the --json summary.
type scenarioSummary struct {
	ExitCode int                  `json:"exit_code"`
	Request  *escalate.Request    `json:"request"`
	Ignored  []escalate.DeniedAct `json:"denials_ignored"`
	Expected []escalate.DeniedAct `json:"denials_expected"`
}

// harnessRun is one command line a harness builds: grant, extra flags,
// command.
type harnessRun struct {
	grant string
	flags []string
	argv  []string
}

func (h harnessRun) args() []string {
	out := append([]string{"--json", "--grant", h.grant}, h.flags...)
	return append(append(out, "--"), h.argv...)
}

// runScenario runs wrun with the command line and reads its summary,
// checking any request against the schema.
func runScenario(t *testing.T, o runOpts, h harnessRun) (scenarioSummary, result) {
	t.Helper()
	r := wrun(t, o, h.args()...)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	var s scenarioSummary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
		t.Fatalf("--json summary of %q: %v\n%s", h.args(), err, r)
	}
	if s.Request != nil {
		raw := struct {
			Request json.RawMessage `json:"request"`
		}{}
		json.Unmarshal([]byte(lines[len(lines)-1]), &raw)
		if err := validateRequest(raw.Request); err != nil {
			t.Fatalf("the request is not valid against the schema: %v\n%s", err, raw.Request)
		}
	}
	return s, r
}

// applicable reports whether a harness can apply alt mechanically.
func applicable(alt escalate.Alternative) bool {
	return alt.WithinCeiling && (alt.Kind == escalate.KindAllowWrite || alt.Kind == escalate.KindGrant ||
		alt.Kind == escalate.KindRoute && len(alt.Commands) > 0)
}

// apply applies alt to h as a harness does: args are added (a --grant
// replaces the grant); a route's commands but the last run first, each
// must succeed, and its last becomes the command line (keeping the
// --allow-write flags added so far).
func apply(t *testing.T, o runOpts, h harnessRun, alt escalate.Alternative) harnessRun {
	t.Helper()
	h.flags = slices.Clone(h.flags)
	switch alt.Kind {
	case escalate.KindAllowWrite:
		h.flags = append(h.flags, alt.Args...)
	case escalate.KindGrant:
		if len(alt.Args) != 2 || alt.Args[0] != "--grant" {
			t.Fatalf("%s: args %q", alt.ID, alt.Args)
		}
		h.grant = alt.Args[1]
	case escalate.KindRoute:
		for i, cmd := range alt.Commands {
			sep := slices.Index(cmd, "--")
			if cmd[0] != "wrun" || len(cmd) < 5 || cmd[1] != "--grant" || sep != 3 {
				t.Fatalf("%s: command %q is not `wrun --grant SPEC -- CMD`", alt.ID, cmd)
			}
			if i == len(alt.Commands)-1 {
				h.grant, h.argv = cmd[2], cmd[sep+1:]
				break
			}
			if r := wrun(t, o, append(append([]string{"--grant", cmd[2]}, h.flags...), cmd[3:]...)...); r.code != 0 {
				t.Fatalf("%s: route command %q failed: %s", alt.ID, cmd, r)
			}
		}
	default:
		t.Fatalf("%s: a %s alternative cannot be applied", alt.ID, alt.Kind)
	}
	return h
}

// recurs reports whether s was refused d's act again.
func recurs(s scenarioSummary, d escalate.DeniedAct) bool {
	var all []escalate.DeniedAct
	if s.Request != nil {
		all = append(all, s.Request.Denials...)
	}
	all = append(all, s.Ignored...)
	for _, e := range all {
		if e.Op == d.Op && e.Path == d.Path && e.Addr == d.Addr {
			return true
		}
	}
	return false
}

func scenarioNonce() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// resetDir empties dir (made again, same path).
func resetDir(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// xSysRequire is the golang.org/x/sys requirement of wrun's own module,
// in the module cache of whoever built wrun: its version, the go directive
// of wrun's go.mod and the go.sum lines.
func xSysRequire(t *testing.T) (version, goLine, sums string) {
	t.Helper()
	mod := mustRead(t, filepath.Join("..", "go.mod"))
	for _, l := range strings.Split(mod, "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "golang.org/x/sys" {
			version = f[1]
		}
		if strings.HasPrefix(l, "go ") {
			goLine = l
		}
	}
	sc := bufio.NewScanner(strings.NewReader(mustRead(t, filepath.Join("..", "go.sum"))))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "golang.org/x/sys "+version+" ") || strings.HasPrefix(sc.Text(), "golang.org/x/sys "+version+"/go.mod ") {
			sums += sc.Text() + "\n"
		}
	}
	if version == "" || sums == "" || goLine == "" {
		t.Fatal("golang.org/x/sys is not in wrun's go.mod and go.sum")
	}
	return version, goLine, sums
}

// gitRepoPair makes a bare repository with one commit and a clone of it
// (identity set in the clone), and returns the clone.
func gitRepoPair(t *testing.T, dir string) (remote, clone string) {
	remote, clone = filepath.Join(dir, "remote.git"), filepath.Join(dir, "ws")
	gitCmd(t, dir, "init", "-q", "--bare", "-b", "main", remote)
	gitCmd(t, dir, "clone", "-q", remote, clone)
	gitCmd(t, clone, "config", "user.name", "t")
	gitCmd(t, clone, "config", "user.email", "t@example.com")
	mustWrite(t, filepath.Join(clone, "a.txt"), "a\n")
	gitCmd(t, clone, "add", "a.txt")
	gitCmd(t, clone, "commit", "-q", "-m", "a")
	gitCmd(t, clone, "push", "-q", "origin", "main")
	return remote, clone
}

func scenarios(t *testing.T) []scenario {
	home, _ := os.UserHomeDir()
	cacheHome := filepath.Join(home, ".cache")
	if x := os.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(x) {
		cacheHome = x
	}
	nonce := scenarioNonce()
	goEnv := []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off", "GOTOOLCHAIN=local"}
	return []scenario{
		{
			name: "missing Cargo.lock", tools: []string{"cargo"}, grant: "verify",
			setup: func(t *testing.T, dir string) (string, []string) {
				cargoWorkspace(t, dir)
				// cargo check: the lock file is handled as by cargo test,
				// without linking test binaries each time.
				return dir, []string{"cargo", "check", "--offline"}
			},
			rule: "lockfile", path: func(dir string) string { return filepath.Join(dir, "Cargo.lock") },
			first: "cargo-generate-lockfile", succeeds: true,
		},
		{
			name: "stale Cargo.lock", tools: []string{"cargo"}, grant: "verify",
			setup: func(t *testing.T, dir string) (string, []string) {
				cargoWorkspace(t, dir)
				if r := run(t, runOpts{dir: dir}, "cargo", "generate-lockfile", "--offline"); r.code != 0 {
					t.Fatalf("cargo generate-lockfile: %s", r)
				}
				// A new path dependency the lock file does not list yet.
				mustWrite(t, filepath.Join(dir, "mul", "Cargo.toml"), "[package]\nname = \"mul\"\nversion = \"0.1.0\"\nedition = \"2021\"\n")
				mustWrite(t, filepath.Join(dir, "mul", "src", "lib.rs"), "pub fn mul(a: i64, b: i64) -> i64 {\n    a * b\n}\n")
				mustWrite(t, filepath.Join(dir, "Cargo.toml"), "[workspace]\nmembers = [\"adder\", \"app\", \"mul\"]\nresolver = \"2\"\n")
				return dir, []string{"cargo", "check", "--offline"}
			},
			rule: "lockfile", path: func(dir string) string { return filepath.Join(dir, "Cargo.lock") },
			first: "allow-write-lockfile", succeeds: true,
		},
		{
			name: "go.sum update under -mod=mod", tools: []string{"go"}, grant: "verify", env: goEnv,
			setup: func(t *testing.T, dir string) (string, []string) {
				v, goLine, _ := xSysRequire(t)
				mustWrite(t, filepath.Join(dir, "go.mod"), "module example.com/sum"+nonce+"\n\n"+goLine+"\n\nrequire golang.org/x/sys "+v+"\n")
				mustWrite(t, filepath.Join(dir, "go.sum"), "")
				mustWrite(t, filepath.Join(dir, "p.go"), "package sum\n\nimport \"golang.org/x/sys/unix\"\n\n// PID is the process id.\nfunc PID() int { return unix.Getpid() }\n")
				mustWrite(t, filepath.Join(dir, "p_test.go"), "package sum\n\nimport \"testing\"\n\nfunc TestPID(t *testing.T) {\n\tif PID() <= 0 {\n\t\tt.Fatal(\"no pid\")\n\t}\n}\n")
				return dir, []string{"go", "test", "-mod=mod", "./..."}
			},
			rule: "lockfile", path: func(dir string) string { return filepath.Join(dir, "go.sum") },
			first: "allow-write-lockfile", succeeds: true,
		},
		{
			name: "go mod tidy rewrites go.mod", tools: []string{"go"}, grant: "verify", env: goEnv,
			setup: func(t *testing.T, dir string) (string, []string) {
				// No go directive: tidy writes one.
				mustWrite(t, filepath.Join(dir, "go.mod"), "module example.com/tidy"+nonce+"\n")
				mustWrite(t, filepath.Join(dir, "p.go"), "// Package tidy is tidy.\npackage tidy\n")
				return dir, []string{"go", "mod", "tidy"}
			},
			rule: "workspace-read-only", path: func(dir string) string { return filepath.Join(dir, "go.mod") },
			first: "allow-write", succeeds: true,
		},
		{
			name: "npm's cache", tools: []string{"npm"}, grant: "inspect",
			setup: func(t *testing.T, dir string) (string, []string) {
				mustWrite(t, filepath.Join(dir, "package.json"), `{"name": "scenario", "version": "1.0.0"}`+"\n")
				os.MkdirAll(filepath.Join(home, ".npm"), 0o755)
				return dir, []string{"npm", "cache", "verify"}
			},
			rule: "tool-cache", path: func(string) string { return filepath.Join(home, ".npm") },
			first: "npm-private-cache", succeeds: true,
		},
		{
			name: "git commit under verify", tools: []string{"git"}, grant: "verify",
			setup: func(t *testing.T, dir string) (string, []string) {
				_, clone := gitRepoPair(t, dir)
				mustWrite(t, filepath.Join(clone, "a.txt"), "b\n")
				return clone, []string{"git", "commit", "-q", "-am", "b"}
			},
			rule: "workspace-read-only", path: func(dir string) string { return filepath.Join(dir, "ws", ".git", "index.lock") },
			first: "allow-write", succeeds: true,
		},
		{
			name: "git pull under verify", tools: []string{"git"}, grant: "verify",
			setup: func(t *testing.T, dir string) (string, []string) {
				remote, clone := gitRepoPair(t, dir)
				other := filepath.Join(dir, "other")
				gitCmd(t, dir, "clone", "-q", remote, other)
				mustWrite(t, filepath.Join(other, "b.txt"), "b\n")
				gitCmd(t, other, "add", "b.txt")
				gitCmd(t, other, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "b")
				gitCmd(t, other, "push", "-q", "origin", "main")
				return clone, []string{"git", "pull", "-q", "--ff-only", "origin", "main"}
			},
			// The remote, a path outside the workspace, is read only when
			// named.
			flags: func(dir string) []string { return []string{"--allow-read", filepath.Join(dir, "remote.git")} },
			rule:  "workspace-read-only", path: nil, // the first write git is refused
			first: "allow-write", succeeds: true,
		},
		{
			name: "a workspace write under inspect", tools: []string{"sh"}, grant: "inspect",
			setup: func(t *testing.T, dir string) (string, []string) {
				return dir, []string{"sh", "-c", "echo x > out.txt"}
			},
			rule: "workspace-read-only", path: func(dir string) string { return filepath.Join(dir, "out.txt") },
			first: "use-tmpdir", succeeds: true,
		},
		{
			name: "a linked worktree's .git file", tools: []string{"git", "sh"}, grant: "verify",
			setup: func(t *testing.T, dir string) (string, []string) {
				_, clone := gitRepoPair(t, dir)
				wt := filepath.Join(dir, "wt")
				gitCmd(t, clone, "worktree", "add", "-q", wt, "-b", "wt")
				return wt, []string{"sh", "-c", "echo gitdir: /tmp > .git"}
			},
			rule: "protected", path: func(dir string) string { return filepath.Join(dir, "wt", ".git") },
			first: "ask-parent", succeeds: false,
		},
		{
			name: "the cargo registry", tools: []string{"sh"}, grant: "verify",
			setup: func(t *testing.T, dir string) (string, []string) {
				reg := filepath.Join(cargoHomeDir(), "registry")
				os.MkdirAll(reg, 0o755)
				own := filepath.Join(reg, "wrun-scenario-"+nonce)
				os.RemoveAll(own) // what the control or an alternative made
				t.Cleanup(func() { os.RemoveAll(own) })
				return dir, []string{"sh", "-c", "mkdir " + own}
			},
			rule: "tool-cache", path: func(string) string { return filepath.Join(cargoHomeDir(), "registry", "wrun-scenario-"+nonce) },
			first: "allow-write-cache", succeeds: true,
		},
		{
			name: "a write to ~/.cache", tools: []string{"sh"}, grant: "verify",
			setup: func(t *testing.T, dir string) (string, []string) {
				own := filepath.Join(cacheHome, "wrun-scenario-"+nonce)
				os.RemoveAll(own)
				os.MkdirAll(own, 0o755)
				t.Cleanup(func() { os.RemoveAll(own) })
				return dir, []string{"sh", "-c", "echo x > " + filepath.Join(own, "f")}
			},
			rule: "tool-cache", path: func(string) string { return filepath.Join(cacheHome, "wrun-scenario-"+nonce, "f") },
			first: "allow-write-cache", succeeds: true,
		},
	}
}

func TestScenarios(t *testing.T) {
	requireABI(t, 3)
	for _, sc := range scenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			requireTool(t, sc.tools...)
			dir := workspace(t)
			fresh := func() (runOpts, harnessRun) {
				resetDir(t, dir)
				cwd, argv := sc.setup(t, dir)
				var flags []string
				if sc.flags != nil {
					flags = sc.flags(dir)
				}
				return runOpts{dir: cwd, env: sc.env}, harnessRun{grant: sc.grant, flags: flags, argv: argv}
			}
			// Control: without the sandbox the command works, so the
			// sandbox's refusal is why it fails under it. Not for what
			// must never be done (rewriting the .git file).
			if sc.succeeds {
				o, h := fresh()
				if r := run(t, o, h.argv...); r.code != 0 {
					t.Fatalf("control: %q without wrun: %s", h.argv, r)
				}
			}
			o, h := fresh()
			s, r := runScenario(t, o, h)
			if s.ExitCode == 0 || s.Request == nil || len(s.Request.Denials) == 0 {
				t.Fatalf("%q under %s: want a failure with a request:\n%s", h.argv, h.grant, r)
			}
			d := s.Request.Denials[0]
			if d.WithheldBy.Rule != sc.rule || sc.path != nil && !strings.HasPrefix(d.Path, sc.path(dir)) {
				var got []string
				for _, e := range s.Request.Denials {
					got = append(got, e.ID+" "+e.Op+" "+e.Path+e.Addr+" "+e.WithheldBy.Rule)
				}
				want := "any path"
				if sc.path != nil {
					want = sc.path(dir)
				}
				t.Fatalf("the first denial (the likeliest cause) is not the %s of %s:\n%s\n%s", sc.rule, want, strings.Join(got, "\n"), r.stderr)
			}
			var in []escalate.Alternative
			for _, alt := range d.Alternatives {
				if alt.WithinCeiling {
					in = append(in, alt)
				}
			}
			if len(in) == 0 || strings.TrimPrefix(in[0].ID, d.ID+".") != sc.first {
				t.Errorf("first alternative inside the ceiling: %+v, want %s", in, sc.first)
			}
			for _, alt := range in {
				// The human line shows nothing the caller's shell would
				// expand: no $VAR inside an assignment.
				if strings.Contains(alt.Try, `="$`) {
					t.Errorf("%s: try %q expands in the caller's shell", alt.ID, alt.Try)
				}
			}
			if !sc.succeeds {
				for _, alt := range in {
					if applicable(alt) {
						t.Errorf("%s offers %s, which wrun would refuse or which must not be done", d.ID, alt.ID)
					}
				}
				if in[0].Kind != escalate.KindAskParent || !strings.Contains(in[0].Description, d.WithheldBy.Why) {
					t.Errorf("the first alternative does not say why nothing may be widened: %+v", in[0])
				}
				return
			}

			// Every applicable alternative makes this denial go away,
			// applied each on the fixture made afresh; the first last, so
			// that the fixture is as it left it for the harness loop.
			var apps []escalate.Alternative
			for _, alt := range in {
				if applicable(alt) {
					apps = append(apps, alt)
				}
			}
			if len(apps) == 0 {
				t.Fatalf("%s offers nothing a harness can apply: %+v", d.ID, in)
			}
			for i := len(apps) - 1; i >= 0; i-- {
				o, h = fresh()
				h = apply(t, o, h, apps[i])
				s, r = runScenario(t, o, h)
				if recurs(s, d) {
					t.Errorf("%s applied (%q): %s %s is refused again:\n%s", apps[i].ID, h.args(), d.Op, d.Path, r)
				}
			}

			// The harness loop: from the first applicable alternative of
			// the first denial, the first applicable alternative of the
			// next first denial, until the command succeeds.
			steps := []string{apps[0].ID}
			for round := 1; s.ExitCode != 0; round++ {
				if s.Request == nil || len(s.Request.Denials) == 0 || round == 5 {
					t.Fatalf("the harness loop ends without success after %v:\n%s", steps, r)
				}
				cur := s.Request.Denials[0]
				var next *escalate.Alternative
				for i, alt := range cur.Alternatives {
					if applicable(alt) {
						next = &cur.Alternatives[i]
						break
					}
				}
				if next == nil {
					t.Fatalf("the harness loop is stuck after %v at %s %s: %+v", steps, cur.Op, cur.Path, cur.Alternatives)
				}
				steps = append(steps, next.ID)
				h = apply(t, o, h, *next)
				s, r = runScenario(t, o, h)
			}
			t.Logf("succeeded after %v: wrun %s", steps, strings.Join(h.args(), " "))
		})
	}
}

//go:build linux

package integration

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/verify"
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
	role  []string // --role and the like: route commands under the run's own grant carry them
	argv  []string
}

func (h harnessRun) args() []string {
	out := append([]string{"--json", "--grant", h.grant}, h.flags...)
	out = append(out, h.role...)
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
	if err := validateSummary([]byte(lines[len(lines)-1])); err != nil {
		t.Fatalf("the summary of %q is not valid against its schema: %v\n%s", h.args(), err, lines[len(lines)-1])
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
	case escalate.KindAllowWrite, escalate.KindAllowRead:
		h.flags = append(h.flags, alt.Args...)
	case escalate.KindGrant:
		if len(alt.Args) != 2 || alt.Args[0] != "--grant" {
			t.Fatalf("%s: args %q", alt.ID, alt.Args)
		}
		h.grant = alt.Args[1]
	case escalate.KindRoute:
		// Each command is a whole wrun command line, the run's own flags
		// included (--allow-write added so far, --keep-env, ...): run as
		// it stands; the last becomes the harness's command line.
		for i, cmd := range alt.Commands {
			sep := slices.Index(cmd, "--")
			if cmd[0] != "wrun" || len(cmd) < 5 || cmd[1] != "--grant" || sep < 3 {
				t.Fatalf("%s: command %q is not `wrun --grant SPEC [FLAGS] -- CMD`", alt.ID, cmd)
			}
			if !slices.Equal(cmd[3:sep], h.flags) && !slices.Equal(cmd[3:sep], append(slices.Clone(h.flags), h.role...)) {
				t.Errorf("%s: command %q does not carry the run's own flags %q", alt.ID, cmd, h.flags)
			}
			if i == len(alt.Commands)-1 {
				h.grant, h.argv = cmd[2], cmd[sep+1:]
				break
			}
			if r := wrun(t, o, cmd[1:]...); r.code != 0 {
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
			// No --allow-write of .git, a directory above its config and
			// hooks (issue 24): files=write, which keeps them protected.
			rule: "workspace-read-only", path: func(dir string) string { return filepath.Join(dir, "ws", ".git", "index.lock") },
			first: "files-write", succeeds: true,
		},
		{
			// A worker's own worktree (issue 25, item 1): its git state lies
			// in the main repository's git dir, outside the workspace, and
			// files=write opens it (for this worktree and its branch alone),
			// not --allow-write of the main .git nor asking the parent.
			name: "git commit in a linked worktree under verify", tools: []string{"git"}, grant: "verify",
			setup: func(t *testing.T, dir string) (string, []string) {
				_, clone := gitRepoPair(t, dir)
				wt := filepath.Join(dir, "wt")
				gitCmd(t, clone, "worktree", "add", "-q", wt, "-b", "work")
				mustWrite(t, filepath.Join(wt, "a.txt"), "b\n")
				return wt, []string{"git", "commit", "-q", "-am", "b"}
			},
			rule: "worktree-git-state", path: func(dir string) string { return filepath.Join(dir, "ws", ".git", "worktrees", "wt", "index.lock") },
			first: "files-write", succeeds: true,
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
			first: "files-write", succeeds: true, // not --allow-write .git: see above
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
			// Under write the policy protects the .git file inside the
			// writable workspace: that is what withheld it.
			name: "a linked worktree's .git file", tools: []string{"git", "sh"}, grant: "write",
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
			// Under verify the grant never opened the workspace: the
			// read-only workspace withheld it, and nothing is offered but
			// asking the parent, since any grant that opened it would
			// protect it.
			name: "a linked worktree's .git file under verify", tools: []string{"git", "sh"}, grant: "verify",
			setup: func(t *testing.T, dir string) (string, []string) {
				_, clone := gitRepoPair(t, dir)
				wt := filepath.Join(dir, "wt")
				gitCmd(t, clone, "worktree", "add", "-q", wt, "-b", "wt")
				return wt, []string{"sh", "-c", "echo gitdir: /tmp > .git"}
			},
			rule: "workspace-read-only", path: func(dir string) string { return filepath.Join(dir, "wt", ".git") },
			first: "ask-parent", succeeds: false,
		},
		{
			// Objects beside the sources need files=write (issue 25, item
			// 3): the first refused is the first make builds.
			name: "make writing objects beside the sources", tools: []string{"make", "cc"}, grant: "verify",
			setup: func(t *testing.T, dir string) (string, []string) {
				makeProject(t, dir, true, false)
				return dir, []string{"make"}
			},
			rule: "workspace-read-only", path: func(dir string) string { return filepath.Join(dir, "t.o") },
			first: "use-tmpdir", succeeds: true,
		},
		{
			// A build directory the repository does not ignore is not one
			// verify makes.
			name: "cmake -B build not ignored", tools: []string{"cmake", "cc", "sh"}, grant: "verify",
			setup: func(t *testing.T, dir string) (string, []string) {
				return dir, cmakeProject(t, dir, true, false)
			},
			rule: "workspace-read-only", path: func(dir string) string { return filepath.Join(dir, "build") },
			first: "use-tmpdir", succeeds: true,
		},
		{
			// An ignored build directory that exists is the user's (an
			// unsandboxed build trusts it): read-only.
			name: "cmake -B build into the user's build directory", tools: []string{"cmake", "cc", "sh"}, grant: "verify",
			setup: func(t *testing.T, dir string) (string, []string) {
				argv := cmakeProject(t, dir, true, true)
				mustWrite(t, filepath.Join(dir, "build", "notes.txt"), "the user's build\n")
				return dir, argv
			},
			rule: "workspace-read-only", path: func(dir string) string { return filepath.Join(dir, "build") + "/" },
			first: "use-tmpdir", succeeds: true,
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

// TestRouteKeepsTheRunsFlags (issue 25, item 5): a route's commands are
// whole wrun command lines that keep the run's own flags (--keep-env,
// --allow-write, the role), so a harness running them as they stand
// reruns what wrun's own retry would: here a crate without Cargo.lock
// whose build script needs two kept variables and writes into an
// --allow-write directory. The control: the same commands with those
// flags taken out (what the route offered before) fail.
func TestRouteKeepsTheRunsFlags(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "cargo")
	rec := newRecords(t)
	dir := workspace(t)
	out := workspace(t)
	mark := scenarioNonce()
	fresh := func() {
		resetDir(t, dir)
		mustWrite(t, filepath.Join(dir, "Cargo.toml"), "[package]\nname = \"marked\"\nversion = \"0.1.0\"\nedition = \"2021\"\nbuild = \"build.rs\"\n")
		mustWrite(t, filepath.Join(dir, "src", "lib.rs"), "pub fn one() -> i32 { 1 }\n")
		mustWrite(t, filepath.Join(dir, "build.rs"), `fn main() {
    let out = std::env::var("WRUN_T_OUT").expect("WRUN_T_OUT is not set");
    let mark = std::env::var("WRUN_T_MARK").expect("WRUN_T_MARK is not set");
    std::fs::write(format!("{}/mark", out), mark).expect("writing the mark");
}
`)
		os.Remove(filepath.Join(out, "mark"))
	}
	o := runOpts{dir: dir, env: append(rec.env(), "WRUN_T_OUT="+out, "WRUN_T_MARK="+mark)}
	own := []string{"--allow-write", out, "--keep-env", "WRUN_T_OUT", "--keep-env", "WRUN_T_MARK"}
	fresh()
	s, r := runScenario(t, o, harnessRun{grant: "verify", flags: own, role: []string{"--role", "verifier"}, argv: []string{"cargo", "check", "--offline"}})
	if s.Request == nil {
		t.Fatalf("want a request for the missing Cargo.lock:\n%s", r)
	}
	var route *escalate.Alternative
	for _, d := range s.Request.Denials {
		for i, alt := range d.Alternatives {
			if strings.HasSuffix(alt.ID, ".cargo-generate-lockfile") {
				route = &d.Alternatives[i]
			}
		}
	}
	if route == nil || len(route.Commands) != 2 {
		t.Fatalf("no cargo-generate-lockfile route with two commands: %+v", s.Request.Denials)
	}
	gen, again := route.Commands[0], route.Commands[1]
	if !slices.Equal(gen[3:slices.Index(gen, "--")], own) {
		t.Errorf("the route's first command (another grant) does not carry the run's flags, and only them: %q", gen)
	}
	if !slices.Equal(again[3:slices.Index(again, "--")], append(slices.Clone(own), "--role", "verifier")) {
		t.Errorf("the route's rerun does not carry the run's flags and role: %q", again)
	}
	for _, cmd := range route.Commands {
		if r := wrun(t, o, cmd[1:]...); r.code != 0 {
			t.Fatalf("route command %q failed:\n%s", cmd, r)
		}
	}
	if got := mustRead(t, filepath.Join(out, "mark")); got != mark {
		t.Errorf("the rerun's build script wrote %q, want %q", got, mark)
	}

	// The control: the commands without the run's flags.
	fresh()
	strip := func(cmd []string) []string { return append(slices.Clone(cmd[1:3]), cmd[slices.Index(cmd, "--"):]...) }
	if r := wrun(t, o, strip(gen)...); r.code != 0 {
		t.Fatalf("control: %q failed:\n%s", strip(gen), r)
	}
	if r := wrun(t, o, strip(again)...); r.code == 0 || exists(filepath.Join(out, "mark")) {
		t.Errorf("control: the rerun without the run's flags passed; the test proves nothing:\n%s", r)
	}
}

// TestApprovalNeverOpensStartupDirs (issue 24, class 5): as root with the
// default ceiling (full: /etc is not out of its reach), the refused create
// of a file in /etc offers no --allow-write of /etc, and approving
// without ids (or naming such an id) widens nothing: the retry never runs
// and the file is never created. The unit test
// (escalate.TestApprovalNeverOpensEtc) holds /etc/ld.so.preload itself;
// here a harmless name stands in for it. The control: the same create in
// a directory that is no start-up location is approved and retried.
func TestApprovalNeverOpensStartupDirs(t *testing.T) {
	requireABI(t, 3)
	if os.Geteuid() != 0 {
		t.Skip("needs root: as another user /etc is not writable whatever wrun allows")
	}
	ws := workspace(t)
	target := "/etc/wrun-guard-" + scenarioNonce()
	t.Cleanup(func() { os.Remove(target) })
	for _, approve := range []string{`{"decision": "approve"}`, `{"decision": "approve", "alternatives": ["d1.allow-write"]}`} {
		s, req, r := runJSON(t, runOpts{dir: ws}, "--grant", "write", "--on-denial=retry", "--retry-safe", "--approver", "echo '"+approve+"'",
			"--", "sh", "-c", "echo '# test' > "+target)
		if req == nil {
			t.Fatalf("want a request for the create in /etc:\n%s", r)
		}
		for _, d := range req.Denials {
			for _, alt := range d.Alternatives {
				if slices.Contains(alt.Args, "--allow-write") && (alt.Args[1] == "/etc" || alt.Args[1] == "/") {
					t.Errorf("offered %s %q", alt.ID, alt.Args)
				}
			}
		}
		if s.Decision == nil || s.Decision.Approved || s.Decision.Retried || exists(target) {
			t.Errorf("approving %s: want nothing approved, no retry, no file:\n%s", approve, r)
		}
	}

	// The control.
	outside := workspace(t)
	created := filepath.Join(outside, "x")
	s, _, r := runJSON(t, runOpts{dir: ws}, "--grant", "write", "--on-denial=retry", "--retry-safe", "--approver", `echo '{"decision": "approve"}'`,
		"--", "sh", "-c", "echo '# test' > "+created)
	if s.Decision == nil || !s.Decision.Approved || !s.Decision.Retried || !exists(created) {
		t.Errorf("control: the create outside every start-up location was not approved and retried:\n%s", r)
	}
}

// wrunLines are the lines wrun itself wrote to stderr (the child's own
// output is the child's).
func wrunLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "wrun: ") {
			out = append(out, l)
		}
	}
	return out
}

// quietTool is one toolchain's ordinary successful command.
type quietTool struct {
	name  string
	tools []string
	grant string
	// setup makes the project in ws and returns the command.
	setup func(t *testing.T, ws string) []string
}

func quietTools() []quietTool {
	return []quietTool{
		{name: "go test", tools: []string{"go"}, grant: "verify", setup: func(t *testing.T, ws string) []string {
			goModule(t, ws, "example.com/quiet"+scenarioNonce())
			return []string{"go", "test", "-count=1", "./..."}
		}},
		{name: "go vet", tools: []string{"go"}, grant: "verify", setup: func(t *testing.T, ws string) []string {
			goModule(t, ws, "example.com/quiet"+scenarioNonce())
			return []string{"go", "vet", "./..."}
		}},
		{name: "cargo test", tools: []string{"cargo"}, grant: "verify", setup: func(t *testing.T, ws string) []string {
			cargoWorkspace(t, ws)
			if r := run(t, runOpts{dir: ws}, "cargo", "generate-lockfile", "--offline"); r.code != 0 {
				t.Fatalf("cargo generate-lockfile: %s", r)
			}
			return []string{"cargo", "test", "--offline", "-q"}
		}},
		{name: "npm test", tools: []string{"npm", "node"}, grant: "verify", setup: func(t *testing.T, ws string) []string {
			mustWrite(t, filepath.Join(ws, "package.json"), `{"name": "quiet", "version": "1.0.0", "scripts": {"test": "node -e \"process.exit(1+1===2?0:1)\""}}`+"\n")
			return []string{"npm", "test", "--silent"}
		}},
		{name: "pytest", tools: []string{"pytest"}, grant: "verify", setup: func(t *testing.T, ws string) []string {
			pythonPackage(t, ws, true)
			return []string{"pytest", "-q"}
		}},
		{name: "cmake and ctest", tools: []string{"cmake", "cc", "sh"}, grant: "verify", setup: func(t *testing.T, ws string) []string {
			// No commas in the test's name (its temp dir's): a linker
			// splits -Wl,-rpath,DIR at them. The lived-in run leaves its
			// build/ for the user, which
			// stays read-only: the sandboxed run builds in builddir/
			// (ignored too).
			cmakeProject(t, ws, true, true)
			mustWrite(t, filepath.Join(ws, ".gitignore"), "/build/\n/builddir/\n")
			return []string{"sh", "-c", "d=build; [ -d build ] && d=builddir; cmake -S . -B $d >/dev/null && cmake --build $d >/dev/null && ctest --test-dir $d >/dev/null"}
		}},
		{name: "git status and log", tools: []string{"git", "sh"}, grant: "verify", setup: func(t *testing.T, ws string) []string {
			newRepo(t, ws)
			return []string{"sh", "-c", "git status --short && git log --oneline >/dev/null"}
		}},
		{name: "git commit under write", tools: []string{"git"}, grant: "write", setup: func(t *testing.T, ws string) []string {
			newRepo(t, ws)
			mustWrite(t, filepath.Join(ws, "README"), "changed\n")
			return []string{"git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qam", "change"}
		}},
	}
}

// Success is quiet (issue 25, item 2): a command that succeeds prints
// nothing of wrun's for refusals of paths the grant never opened, in a
// fresh HOME (a CI container: the go command creates HOME/.config on
// every run) or a lived-in one (the toolchain ran there before, outside
// wrun, and the usual dot files exist); --json keeps them in
// denials_ignored. The control: a refused write to a protected path inside
// a writable tree, and a dot entry removed after the run, are printed
// still, through the same lines the check reads.
func TestQuietSuccessInAFreshOrLivedInHome(t *testing.T) {
	requireABI(t, 3)
	for _, tool := range quietTools() {
		for _, lived := range []bool{false, true} {
			kind := "fresh HOME"
			if lived {
				kind = "lived-in HOME"
			}
			t.Run(tool.name+" in a "+kind, func(t *testing.T) {
				requireTool(t, tool.tools...)
				home, env := freshHome(t)
				env = append(env, rustupHome()...)
				ws := workspace(t)
				argv := tool.setup(t, ws)
				o := runOpts{dir: ws, env: env}
				if lived {
					mustWrite(t, filepath.Join(home, ".bashrc"), "# the user's\n")
					mustWrite(t, filepath.Join(home, ".profile"), "# the user's\n")
					mustWrite(t, filepath.Join(home, ".gitconfig"), "[user]\n\tname = t\n\temail = t@example.com\n")
					mustWrite(t, filepath.Join(home, ".config", "git", "ignore"), "*.swp\n")
					mustWrite(t, filepath.Join(home, ".ssh", "known_hosts"), "")
					// The toolchain lived here: its own dot entries exist.
					if r := run(t, o, argv...); r.code != 0 {
						t.Fatalf("control: %q without wrun: %s", argv, r)
					}
					if tool.grant == "write" {
						ws2 := workspace(t)
						argv = tool.setup(t, ws2)
						o.dir = ws2
					}
				}
				r := wrun(t, o, append([]string{"--grant", tool.grant, "--"}, argv...)...)
				if r.code != 0 {
					t.Fatalf("%q under %s: %s", argv, tool.grant, r)
				}
				if lines := wrunLines(r.stderr); len(lines) > 0 {
					t.Errorf("a successful %q printed wrun's lines:\n%s", argv, strings.Join(lines, "\n"))
				}
				if tool.grant == "write" {
					return // the commit is made: the --json run would find nothing to commit
				}
				s, r := runScenario(t, o, harnessRun{grant: tool.grant, argv: argv})
				if s.ExitCode != 0 || s.Request != nil {
					t.Fatalf("--json: exit %d, request %+v\n%s", s.ExitCode, s.Request, r)
				}
				var under []string
				for _, d := range s.Ignored {
					if strings.HasPrefix(d.Path, home+"/") {
						under = append(under, d.Path+" "+d.WithheldBy.Rule)
						if d.Shown() {
							t.Errorf("denials_ignored: %s %s would be printed (%s), yet no rule of %s opens HOME", d.Op, d.Path, d.WithheldBy.Rule, tool.grant)
						}
					}
				}
				t.Logf("recorded, not printed, under HOME: %v", under)
			})
		}
	}

	// The control: what must be printed on success still is.
	t.Run("control: a protected path inside a writable tree, a removal", func(t *testing.T) {
		requireTool(t, "git", "sh")
		home, env := freshHome(t)
		ws := workspace(t)
		newRepo(t, ws)
		o := runOpts{dir: ws, env: env}
		r := wrun(t, o, "--grant", "write", "--", "sh", "-c", "echo evil >> .git/hooks/pre-commit 2>/dev/null; exit 0")
		lines := wrunLines(r.stderr)
		if r.code != 0 || !slices.ContainsFunc(lines, func(l string) bool {
			return strings.Contains(l, "denied") && strings.Contains(l, ".git/hooks") && strings.Contains(l, "protected")
		}) {
			t.Errorf("a refused write to .git/hooks inside the writable workspace is not printed on success:\n%s", r)
		}
		if exists(filepath.Join(ws, ".git", "hooks", "pre-commit")) {
			t.Errorf("the hook was written")
		}
		dot := filepath.Join(home, ".wrun-quiet-"+scenarioNonce())
		r = wrun(t, o, "--grant", "write", "--allow-write", home, "--", "sh", "-c", "touch "+dot)
		if r.code != 0 || !slices.ContainsFunc(wrunLines(r.stderr), func(l string) bool {
			return strings.HasPrefix(l, "wrun: removed") && strings.Contains(l, filepath.Base(dot))
		}) {
			t.Errorf("a dot entry of HOME removed after the run is not printed:\n%s", r)
		}
		if exists(dot) {
			t.Errorf("%s is left after the run", dot)
		}
	})
}

// rustupHome keeps rustup's toolchains reachable in a fresh HOME, where
// cargo is rustup's proxy (Debian's cargo needs nothing).
func rustupHome() []string {
	if os.Getenv("RUSTUP_HOME") != "" {
		return nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	if fi, err := os.Stat(filepath.Join(home, ".rustup")); err == nil && fi.IsDir() {
		env := []string{"RUSTUP_HOME=" + filepath.Join(home, ".rustup")}
		if fi, err := os.Stat(filepath.Join(home, ".cargo", "registry")); err == nil && fi.IsDir() {
			// cargo's offline index of the user's, as CI's cargo has it.
			env = append(env, "CARGO_HOME="+filepath.Join(home, ".cargo"))
		}
		return env
	}
	return nil
}

// The --json summary starts on a line of its own, with no blank line
// before it (issue 25, item 10): wrun adds a newline only where the
// command's stderr ended inside a line (the control: without that newline
// the summary would be glued to the command's last words).
func TestJSONSummaryFollowsTheOutputWithoutABlankLine(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	for _, tc := range []struct{ sh, before string }{
		{"echo last line >&2", "last line\n"},
		{"printf 'no newline' >&2", "no newline\n"},
		{"true", ""},
		{"echo out; exit 3", ""},
	} {
		r := wrun(t, runOpts{dir: ws}, "--json", "--grant", "inspect", "--", "sh", "-c", tc.sh)
		i := strings.LastIndex(r.stderr, "{\"schema\"")
		if i < 0 || !strings.HasSuffix(r.stderr, "}\n") {
			t.Fatalf("%s: no summary at the end of stderr:\n%s", tc.sh, r)
		}
		if got := r.stderr[:i]; got != tc.before {
			t.Errorf("%s: stderr before the summary is %q, want %q", tc.sh, got, tc.before)
		}
		var s scenarioSummary
		if err := json.Unmarshal([]byte(r.stderr[i:]), &s); err != nil {
			t.Errorf("%s: the summary does not parse: %v", tc.sh, err)
		}
	}
}

// Near-identical denial lines are one (issue 25, item 10): a failing
// command refused thirteen directories of the same kind (npm install's
// node_modules under verify) prints one line for them, naming how many
// and where, while the request keeps all thirteen; the control, a refusal
// of another kind in the same run, keeps a line of its own.
func TestNearIdenticalDenialsAreOneLine(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	mustWrite(t, filepath.Join(ws, "web", "package.json"), "{}\n")
	script := "for p in a b c d e f g h i j k l m; do mkdir node_modules-$p 2>/dev/null; done; echo x > package.json 2>/dev/null; exit 1"
	r := wrun(t, runOpts{dir: filepath.Join(ws, "web")}, "--grant", "verify", "--", "sh", "-c", script)
	var dirs, other []string
	for _, l := range wrunLines(r.stderr) {
		switch {
		case strings.Contains(l, "denied create directory"):
			dirs = append(dirs, l)
		case strings.Contains(l, "package.json"):
			other = append(other, l)
		}
	}
	if len(dirs) != 1 || !strings.Contains(dirs[0], "node_modules-") || !strings.Contains(dirs[0], " and 12 more paths under "+filepath.Join(ws, "web")+" (") {
		t.Errorf("want one line for the 13 directories:\n%s", r)
	}
	if len(other) != 1 {
		t.Errorf("the write to package.json does not have a line of its own:\n%s", r)
	}
	s, r := runScenario(t, runOpts{dir: filepath.Join(ws, "web")}, harnessRun{grant: "verify", argv: []string{"sh", "-c", script}})
	n := 0
	if s.Request != nil {
		for _, d := range s.Request.Denials {
			if d.Op == "mkdir" {
				n++
			}
		}
	}
	if n != 13 {
		t.Errorf("the request has %d of the 13 directories:\n%s", n, r)
	}
}

// The repository's tool labels (.wrun/tools.toml) are protected under
// write as .wrun.toml is (issue 25, item 8): a child can neither rewrite
// nor remove them, nor plant them where there were none (what it plants
// is removed after the run), and the refusal says so. The control: the
// same writes to a file of the same name elsewhere in the workspace work.
func TestRepositoryToolLabelsAreProtected(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "git", "sh")
	labels := "[tools]\nBash = [\"edit\"]\n"
	for _, tc := range []struct{ name, sh string }{
		{"rewrite", "echo '# widened' > .wrun/tools.toml"},
		{"remove", "rm -f .wrun/tools.toml"},
		{"replace the directory", "mv .wrun .wrun-old && mkdir .wrun"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := workspace(t)
			newRepo(t, ws)
			mustWrite(t, filepath.Join(ws, ".wrun", "tools.toml"), labels)
			mustWrite(t, filepath.Join(ws, "src", "tools.toml"), labels)
			_, req, r := runJSON(t, runOpts{dir: ws}, "--grant", "write", "--", "sh", "-c", tc.sh)
			if got := mustRead(t, filepath.Join(ws, ".wrun", "tools.toml")); got != labels {
				t.Fatalf("%s: .wrun/tools.toml is now %q:\n%s", tc.sh, got, r)
			}
			if req == nil || len(req.Denials) == 0 || req.Denials[0].WithheldBy.Field != escalate.FieldProtected {
				t.Errorf("%s: want a denial of a protected path:\n%s", tc.sh, r)
			}
			// The control: the same act on src/tools.toml.
			ctl := strings.ReplaceAll(tc.sh, ".wrun", "src")
			if r := wrun(t, runOpts{dir: ws}, "--grant", "write", "--", "sh", "-c", ctl); r.code != 0 {
				t.Errorf("control %q: %s", ctl, r)
			}
		})
	}
	t.Run("plant where there were none", func(t *testing.T) {
		ws := workspace(t)
		newRepo(t, ws)
		wrun(t, runOpts{dir: ws}, "--grant", "write", "--", "sh", "-c", "mkdir -p .wrun && echo '[tools]' > .wrun/tools.toml")
		if exists(filepath.Join(ws, ".wrun")) {
			t.Errorf(".wrun is left after the run")
		}
	})
}

// Tool catalogues as the main harnesses emit them (issue 25, item 8):
// wrun tools filter reads each shape and prints the part the grant gives
// in the same shape; the harness's control tools are in it under every
// preset; save_memory needs edit and new_task spawn. The control: the same
// catalogue under write shows the edit tools inspect hides.
func TestToolCatalogueShapes(t *testing.T) {
	cfg := workspace(t)
	env := []string{"XDG_CONFIG_HOME=" + cfg, "WRUN_GRANT=", "WRUN_CEILING="}
	ws := workspace(t)
	chat := `{"model": "m", "tools": [
  {"type": "function", "function": {"name": "TodoWrite", "parameters": {}}},
  {"type": "function", "function": {"name": "Bash", "parameters": {}}},
  {"type": "function", "function": {"name": "Edit", "parameters": {}}},
  {"type": "function", "function": {"name": "save_memory", "parameters": {}}},
  {"type": "function", "function": {"name": "new_task", "parameters": {}}}]}`
	gemini := `[{"functionDeclarations": [{"name": "read_file"}, {"name": "write_todos"}, {"name": "replace"}]}]`
	mcp := `{"jsonrpc": "2.0", "id": 3, "result": {"tools": [{"name": "Read", "inputSchema": {}}]}}`
	filter := func(grantSpec, in string, extra ...string) (result, []string) {
		t.Helper()
		r := run(t, runOpts{dir: ws, env: env, stdin: in}, append([]string{bins.wrun, "tools", "filter", "--grant", grantSpec}, extra...)...)
		var names []string
		for _, m := range regexpName.FindAllStringSubmatch(r.stdout, -1) {
			names = append(names, m[1])
		}
		return r, names
	}
	for _, tc := range []struct {
		grant, in string
		extra     []string
		want      string
	}{
		{"inspect", chat, nil, "TodoWrite Bash"},
		{"write", chat, nil, "TodoWrite Bash Edit save_memory"},
		{"full", chat, nil, "TodoWrite Bash Edit save_memory new_task"},
		{"files=none,shell=none", chat, nil, "TodoWrite"},
		{"inspect", gemini, nil, "read_file write_todos"},
		{"write", gemini, nil, "read_file write_todos replace"},
		// An MCP server's tool called Read is the server's: unlabelled,
		// it is never shown, whatever the grant.
		{"full,tools=read+mcp", mcp, []string{"--server", "docs"}, ""},
	} {
		r, names := filter(tc.grant, tc.in, tc.extra...)
		if r.code != 0 || strings.Join(names, " ") != tc.want {
			t.Errorf("--grant %s: tools %q, want %q\n%s", tc.grant, names, tc.want, r)
		}
		if !json.Valid([]byte(r.stdout)) {
			t.Errorf("--grant %s: not JSON:\n%s", tc.grant, r.stdout)
		}
	}
	if r, _ := filter("full", mcp); r.code != 125 || !strings.Contains(r.stderr, "--server") {
		t.Errorf("an MCP tools/list without --server: %s", r)
	}
	mustWrite(t, filepath.Join(cfg, "wrun", "tools.toml"), "[servers]\ndocs = \"read\"\n")
	if _, names := filter("full,tools=read+mcp", mcp, "--server", "docs"); strings.Join(names, " ") != "Read" {
		t.Errorf("the labelled server's Read: %q", names)
	}
}

var regexpName = regexp.MustCompile(`"name": "([^"]+)"`)

// The private build caches are bounded (issue 25, item 6): go test in
// three workspaces under verify makes three keys; with cache.max_size at
// its floor each run that makes a new key removes the least recently used
// others, never its own, so one is left, and wrun cache list names its
// workspace and grant. The control: under the default bound all three
// stay. wrun cache rm removes what is left.
func TestPrivateCachesAreBounded(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "go")
	for _, bounded := range []bool{false, true} {
		name := "default bound"
		if bounded {
			name = "cache.max_size = 1MiB"
		}
		t.Run(name, func(t *testing.T) {
			_, env := freshHome(t)
			cache, cfg := workspace(t), workspace(t)
			env = append(env, "XDG_CACHE_HOME="+cache, "XDG_CONFIG_HOME="+cfg)
			if bounded {
				mustWrite(t, filepath.Join(cfg, "wrun", "config.toml"), "[cache]\nmax_size = \"1MiB\"\n")
			}
			var wss []string
			for i := range 3 {
				ws := workspace(t)
				goModule(t, ws, "example.com/bounded"+scenarioNonce())
				if r := wrun(t, runOpts{dir: ws, env: env}, "--grant", "verify", "--", "go", "test", "-count=1", "./..."); r.code != 0 {
					t.Fatalf("go test in workspace %d: %s", i, r)
				}
				wss = append(wss, ws)
			}
			r := run(t, runOpts{env: env}, bins.wrun, "cache", "list", "--json")
			var rep struct {
				MaxSize int64 `json:"max_size"`
				Keys    []struct {
					Key, Workspace, Grant string
					Size                  int64
				} `json:"keys"`
			}
			if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil {
				t.Fatalf("wrun cache list --json: %s", r)
			}
			var left []string
			for _, k := range rep.Keys {
				left = append(left, k.Workspace)
				// verify's network: hosts where the mediation holds it, on elsewhere.
				if k.Grant != "files=read,shell=verify,network=hosts,desktop=off" && k.Grant != "files=read,shell=verify,network=on,desktop=off" || k.Size <= 0 {
					t.Errorf("key %+v", k)
				}
			}
			want := wss
			if bounded {
				want = wss[2:] // the last run's own key is never removed by it
			}
			if !slices.Equal(left, want) {
				t.Errorf("caches left for %q, want %q", left, want)
			}
			if r := run(t, runOpts{env: env}, bins.wrun, "cache", "rm", "--all"); r.code != 0 {
				t.Errorf("wrun cache rm --all: %s", r)
			}
			if entries, _ := os.ReadDir(filepath.Join(cache, "wrun", "ws")); slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.IsDir() }) {
				t.Errorf("caches left after rm --all: %v", entries)
			}
		})
	}
}

// A ref the command leaves naming no object (issue 24, class 13) is gone
// after the run: plain git log --all, git gc and git fetch work again; a
// ref a real fetch under verify moved stays where the fetch put it (the
// control, in the same run).
func TestDanglingRefsAreRepairedAfterTheRun(t *testing.T) {
	requireABI(t, 3)
	requireRefer(t)
	requireTool(t, "git", "sh")
	dir := workspace(t)
	remote, clone := gitRepoPair(t, dir)
	other := filepath.Join(dir, "other")
	gitCmd(t, dir, "clone", "-q", remote, other)
	mustWrite(t, filepath.Join(other, "b.txt"), "b\n")
	gitCmd(t, other, "add", "b.txt")
	gitCmd(t, other, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "b")
	gitCmd(t, other, "push", "-q", "origin", "main")
	want := gitCmd(t, other, "rev-parse", "HEAD")
	missing := strings.Repeat("1234567890", 4)
	script := "git fetch -q origin && echo " + missing + " > .git/refs/remotes/origin/evil && echo junk > .git/refs/tags/junk"
	// The remote, a path outside the workspace, is read only when named.
	r := wrun(t, runOpts{dir: clone}, "--grant", "verify", "--allow-read", remote, "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("fetch and plant under verify: %s", r)
	}
	for _, args := range [][]string{{"log", "--all", "--oneline"}, {"gc", "-q"}, {"fetch", "-q", "origin"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = clone
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("git %s after the run: %v\n%s\nwrun said:\n%s", strings.Join(args, " "), err, out, r.stderr)
		}
	}
	if exists(filepath.Join(clone, ".git", "refs", "remotes", "origin", "evil")) || exists(filepath.Join(clone, ".git", "refs", "tags", "junk")) {
		t.Errorf("the planted refs are still there")
	}
	if got := gitCmd(t, clone, "rev-parse", "origin/main"); got != want {
		t.Errorf("origin/main is %s after the fetch, want %s", got, want)
	}
}

// TestWorktreeWorkerCommitsItsOwnBranch (issue 25, item 1): a worker in a
// linked worktree (git worktree add) commits under files=write: git
// writes the worktree's own state in <common>/worktrees/<name>, its
// branch's ref, lock and reflog in the common dir, and its objects
// through the quarantine, which wrun moves in after the run. The main
// checkout's config and hooks, the worktree's commondir and gitdir files,
// every other branch (a loose ref shadowing a packed one too) and the
// other worktree's state stay as they were, whatever the worker tries.
// The control: the same commit under verify is refused.
func TestWorktreeWorkerCommitsItsOwnBranch(t *testing.T) {
	requireABI(t, 3)
	requireRefer(t)
	requireTool(t, "git", "sh", "ln")
	dir := workspace(t)
	_, clone := gitRepoPair(t, dir)
	common := filepath.Join(clone, ".git")
	gitCmd(t, clone, "branch", "packed")
	gitCmd(t, clone, "pack-refs", "--all", "--prune") // main, packed: in packed-refs only
	gitCmd(t, clone, "branch", "other")               // other: a loose ref
	wt, wt2 := filepath.Join(dir, "wt"), filepath.Join(dir, "wt2")
	gitCmd(t, clone, "worktree", "add", "-q", wt, "-b", "work")
	gitCmd(t, clone, "worktree", "add", "-q", wt2, "-b", "work2")
	mustWrite(t, filepath.Join(common, "hooks", "pre-commit"), "#!/bin/sh\nexit 0\n")
	os.Chmod(filepath.Join(common, "hooks", "pre-commit"), 0o755)
	// What must not change, with the refs as git resolves them.
	kept := []string{filepath.Join(common, "config"), filepath.Join(common, "hooks", "pre-commit"), filepath.Join(common, "packed-refs"),
		filepath.Join(common, "refs", "heads", "other"), filepath.Join(common, "worktrees", "wt", "commondir"),
		filepath.Join(common, "worktrees", "wt", "gitdir"), filepath.Join(common, "worktrees", "wt2", "HEAD"),
		filepath.Join(common, "worktrees", "wt2", "index")}
	snapshot := func() map[string]string {
		out := map[string]string{}
		for _, p := range kept {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("reading %s: %v", p, err)
			}
			out[p] = string(b)
		}
		for _, ref := range []string{"main", "other", "packed", "work2"} {
			out["ref "+ref] = gitCmd(t, clone, "rev-parse", "refs/heads/"+ref)
		}
		hooks, _ := os.ReadDir(filepath.Join(common, "hooks"))
		out["hooks"] = fmt.Sprint(len(hooks))
		return out
	}
	before := snapshot()
	base := gitCmd(t, wt, "rev-parse", "HEAD")

	// Control: under verify the worktree's state is read-only.
	mustWrite(t, filepath.Join(wt, "a.txt"), "b\n")
	if r := wrun(t, runOpts{dir: wt}, "--grant", "verify", "--", "git", "commit", "-q", "-am", "b"); r.code == 0 {
		t.Fatalf("control: the commit under verify succeeded:\n%s", r)
	}
	if got := gitCmd(t, wt, "rev-parse", "HEAD"); got != base {
		t.Fatalf("control: HEAD moved under verify")
	}

	r := wrun(t, runOpts{dir: wt}, "--grant", "write", "--", "git", "commit", "-q", "-am", "b")
	if r.code != 0 {
		t.Fatalf("the worker's commit under write: %s", r)
	}
	head := gitCmd(t, wt, "rev-parse", "HEAD")
	if head == base || gitCmd(t, clone, "rev-parse", "refs/heads/work") != head || gitCmd(t, wt, "rev-parse", "HEAD~1") != base {
		t.Fatalf("the branch work is not the new commit (%s, base %s)", head, base)
	}
	// The objects were moved in from the quarantine: a plain git sees a
	// complete repository, and the reflog has the commit.
	gitCmd(t, clone, "fsck", "--no-dangling")
	if log := gitCmd(t, clone, "reflog", "show", "work"); !strings.Contains(log, "commit: b") {
		t.Errorf("the reflog of work lacks the commit:\n%s", log)
	}
	if got := gitCmd(t, wt, "status", "--porcelain"); got != "" {
		t.Errorf("the worktree's index did not follow the commit: %q", got)
	}

	// What the worker may not do, each refused, nothing changed.
	attempts := []string{
		"git branch -f other HEAD",
		"git update-ref refs/heads/main HEAD",
		"git branch packed HEAD",                               // a loose ref over the packed one
		"echo " + head + " > " + common + "/refs/heads/packed", // the same, by hand
		"ln " + common + "/refs/heads/other " + common + "/refs/heads/work.lock && echo " + head + " > " + common + "/refs/heads/work.lock",
		"mv " + common + "/refs/heads/work " + common + "/refs/heads/other",
		"rm " + common + "/refs/heads/other",
		"echo '[core] fsmonitor = /bin/false' >> " + common + "/config",
		"echo 'exit 1' > " + common + "/hooks/pre-commit",
		"echo 'exit 1' > " + common + "/hooks/post-commit",
		"echo /tmp > " + common + "/worktrees/wt/commondir",
		"echo '[core] hooksPath = /tmp' > " + common + "/worktrees/wt/config.worktree",
		"echo " + head + " > " + common + "/worktrees/wt2/HEAD",
		"git -C " + wt2 + " commit -q --allow-empty -m x",
	}
	for _, a := range attempts {
		r := wrun(t, runOpts{dir: wt}, "--grant", "write", "--", "sh", "-c", a)
		if r.code == 0 {
			t.Errorf("%q under write succeeded", a)
		}
	}
	os.Remove(filepath.Join(common, "refs", "heads", "work.lock")) // what a refused lock may have left (none expected)
	if after := snapshot(); !maps.Equal(after, before) {
		for k, v := range before {
			if after[k] != v {
				t.Errorf("%s changed: %q -> %q", k, v, after[k])
			}
		}
	}
	if exists(filepath.Join(common, "worktrees", "wt", "config.worktree")) || exists(filepath.Join(common, "hooks", "post-commit")) {
		t.Errorf("a protected name was created")
	}
}

// TestRefusedPushIsReportedWhateverTheOutput (issue 25, item 4): a push
// wrun's git shim or remote helper refuses under verify is reported by
// them, through a file in the run's shim directory that wrun reads after
// the run, so the request is there with git's stderr on /dev/null. Its
// alternative, applied as a harness does, publishes. The control: with
// the report's location taken from the command's environment, the same
// silent push leaves no request (what wrun did before).
func TestRefusedPushIsReportedWhateverTheOutput(t *testing.T) {
	requireABI(t, 4)
	requireTool(t, "git", "sh")
	base := workspace(t)
	srv := filepath.Join(base, "srv")
	remote := filepath.Join(srv, "remote.git")
	os.MkdirAll(srv, 0o755)
	gitCmd(t, base, "init", "-q", "--bare", "-b", "main", remote)
	port := gitDaemon(t, srv, "--enable=receive-pack")
	url := fmt.Sprintf("git://127.0.0.1:%d/remote.git", port)
	clone := filepath.Join(base, "clone")
	gitCmd(t, base, "clone", "-q", url, clone)
	mustWrite(t, filepath.Join(clone, "a.txt"), "a\n")
	gitCmd(t, clone, "add", "a.txt")
	gitCmd(t, clone, "commit", "-q", "-m", "a")
	refs := func() string { return gitCmd(t, base, "--git-dir="+remote, "for-each-ref") }
	for _, tc := range []struct{ name, script, dest string }{
		{"the remote helper", "git push -q origin HEAD:refs/heads/x 2>/dev/null", "origin"},
		{"the git shim", "git send-pack " + url + " HEAD:refs/heads/x 2>/dev/null", url},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := harnessRun{grant: "verify", argv: []string{"sh", "-c", tc.script}}
			s, r := runScenario(t, runOpts{dir: clone}, h)
			if s.ExitCode == 0 || s.Request == nil || len(s.Request.Denials) != 1 {
				t.Fatalf("want one denial:\n%s", r)
			}
			d := s.Request.Denials[0]
			if d.Op != escalate.OpGitPush || d.Addr != tc.dest || d.Evidence != escalate.EvidenceExact || d.WithheldBy.Rule != "git-push" {
				t.Fatalf("the denial is %+v, want an exact git-push to %s", d, tc.dest)
			}
			if strings.Contains(r.stdout, "refused") {
				t.Fatalf("the command's output was not discarded: %s", r)
			}
			alt := d.Alternatives[0]
			if !applicable(alt) || strings.Join(alt.Args, " ") != "--grant write,network=on" {
				t.Fatalf("first alternative %+v", alt)
			}
			if s, r := runScenario(t, runOpts{dir: clone}, apply(t, runOpts{dir: clone}, h, alt)); s.ExitCode != 0 || !strings.Contains(refs(), "refs/heads/x") {
				t.Fatalf("%s applied: the push did not publish:\n%s\n%s", alt.ID, r, refs())
			}
			gitCmd(t, base, "--git-dir="+remote, "update-ref", "-d", "refs/heads/x")
		})
	}
	// Control: the report's location comes from the environment; without
	// it the refusal is only in the output, which went to /dev/null.
	s, r := runScenario(t, runOpts{dir: clone}, harnessRun{grant: "verify", argv: []string{"sh", "-c",
		"unset " + verify.EnvGitReport + "; git push -q origin HEAD:refs/heads/x 2>/dev/null"}})
	if s.ExitCode == 0 || s.Request != nil {
		t.Fatalf("control: a silent push without the report made a request (or succeeded):\n%s", r)
	}
}

// The Python, C and make fixtures (issue 25, item 3). pass selects the
// fixture whose tests pass; otherwise one of them fails.

// pytestFiles makes a directory of test files with no Python project
// around it: a helper module the tests import and a test module.
func pytestFiles(t *testing.T, dir string, pass bool) {
	want := "2"
	if !pass {
		want = "3"
	}
	mustWrite(t, filepath.Join(dir, "helper.py"), "def two():\n    return 2\n")
	mustWrite(t, filepath.Join(dir, "test_helper.py"), "import helper\n\n\ndef test_one():\n    assert helper.two() - 1 == 1\n\n\ndef test_two():\n    assert helper.two() == "+want+"\n")
}

// pythonPackage makes a Python package laid out as most are: pyproject.toml
// (with pytest's settings), the package under src/, its tests under tests/
// with a conftest.py.
func pythonPackage(t *testing.T, dir string, pass bool) {
	want := "5"
	if !pass {
		want = "6"
	}
	mustWrite(t, filepath.Join(dir, "pyproject.toml"), "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npythonpath = [\"src\"]\ntestpaths = [\"tests\"]\n")
	mustWrite(t, filepath.Join(dir, ".gitignore"), "__pycache__/\n.pytest_cache/\n")
	mustWrite(t, filepath.Join(dir, "src", "calc", "__init__.py"), "from calc.ops import add, mul\n")
	mustWrite(t, filepath.Join(dir, "src", "calc", "ops.py"), "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n")
	mustWrite(t, filepath.Join(dir, "tests", "conftest.py"), "import pytest\n\n\n@pytest.fixture\ndef two():\n    return 2\n")
	mustWrite(t, filepath.Join(dir, "tests", "test_ops.py"), "import calc\n\n\ndef test_add(two):\n    assert calc.add(two, 3) == "+want+"\n\n\ndef test_mul(two):\n    assert calc.mul(two, 3) == 6\n")
}

// cSources are a tiny C library and its test program, which exits 1 when
// the library is wrong.
func cSources(t *testing.T, dir string, pass bool) {
	op := "+"
	if !pass {
		op = "-"
	}
	mustWrite(t, filepath.Join(dir, "add.c"), "int add(int a, int b) { return a "+op+" b; }\n")
	mustWrite(t, filepath.Join(dir, "t.c"), "#include <stdio.h>\nint add(int, int);\nint main(void) {\n\tif (add(2, 2) != 4) {\n\t\tputs(\"FAIL: add(2, 2)\");\n\t\treturn 1;\n\t}\n\tputs(\"ok\");\n\treturn 0;\n}\n")
}

// cmakeProject is cSources built by CMake, tested by ctest, with the build
// directory the repository ignores when ignored is set.
func cmakeProject(t *testing.T, dir string, pass, ignored bool) []string {
	cSources(t, dir, pass)
	mustWrite(t, filepath.Join(dir, "CMakeLists.txt"), "cmake_minimum_required(VERSION 3.13)\nproject(calc C)\nenable_testing()\nadd_library(calc SHARED add.c)\nset_target_properties(calc PROPERTIES VERSION 1.0 SOVERSION 1)\nadd_executable(calc_test t.c)\ntarget_link_libraries(calc_test calc)\nadd_test(NAME calc_test COMMAND calc_test)\n")
	if ignored {
		mustWrite(t, filepath.Join(dir, ".gitignore"), "/build/\n")
	}
	return []string{"sh", "-c", "cmake -S . -B build >/dev/null && cmake --build build >/dev/null && ctest --test-dir build --output-on-failure"}
}

// makeProject is cSources built by make: into build/ (ignored) when
// outOfTree is set, else objects beside the sources.
func makeProject(t *testing.T, dir string, pass, outOfTree bool) {
	cSources(t, dir, pass)
	b := "."
	if outOfTree {
		b = "build"
		mustWrite(t, filepath.Join(dir, ".gitignore"), "/build/\n")
	} else {
		mustWrite(t, filepath.Join(dir, ".gitignore"), "*.o\n/t\n")
	}
	mustWrite(t, filepath.Join(dir, "Makefile"), "B := "+b+"\nCC ?= cc\n\ntest: $(B)/t\n\t$(B)/t\n\n$(B)/t: $(B)/t.o $(B)/add.o\n\t$(CC) -o $@ $^\n\n$(B)/%.o: %.c\n\t@mkdir -p $(B)\n\t$(CC) -c -o $@ $<\n")
}

// buildCase is one of the tool runs of TestPythonAndBuildsUnderVerify.
type buildCase struct {
	name  string
	tools []string
	// setup makes the fixture in ws, whose tests pass or fail, and
	// returns the command.
	setup func(t *testing.T, ws string, pass bool) []string
	// bare are what the command writes in the workspace without wrun
	// (relative paths): the outputs verify sends elsewhere or removes.
	bare []string
}

func buildCases() []buildCase {
	return []buildCase{
		{name: "pytest over test files", tools: []string{"pytest"},
			setup: func(t *testing.T, ws string, pass bool) []string {
				pytestFiles(t, ws, pass)
				return []string{"pytest", "-q"}
			}, bare: []string{"__pycache__", ".pytest_cache"}},
		{name: "a Python package's tests", tools: []string{"pytest"},
			setup: func(t *testing.T, ws string, pass bool) []string {
				pythonPackage(t, ws, pass)
				return []string{"pytest", "-q"}
			}, bare: []string{"src/calc/__pycache__", "tests/__pycache__", ".pytest_cache"}},
		{name: "cmake -B build ignored", tools: []string{"cmake", "cc", "sh"},
			setup: func(t *testing.T, ws string, pass bool) []string {
				return cmakeProject(t, ws, pass, true)
			}, bare: []string{"build/CMakeCache.txt", "build/libcalc.so"}},
		{name: "make into build ignored", tools: []string{"make", "cc"},
			setup: func(t *testing.T, ws string, pass bool) []string {
				makeProject(t, ws, pass, true)
				return []string{"make"}
			}, bare: []string{"build/add.o", "build/t"}},
	}
}

// Python and out-of-tree builds under verify (issue 25, item 3): pytest
// over bare test files, a Python package's tests, a CMake build and a make
// build into the build directory the repository ignores pass under verify
// when their tests pass and fail when they fail, writing nothing in the
// workspace (bytecode and pytest's cache go to wrun's private outputs, the
// build directory wrun made is removed after the run) and asking for
// nothing: a failing run has no request. The controls: without wrun the
// same commands pass or fail alike and write those outputs in the
// workspace; a pytest run pointed back at the workspace's .pytest_cache is
// asked for it; `make -k` of objects beside the sources asks for exactly
// the objects it was refused. A Python package's bytecode and last
// failures are kept for later sandboxed runs (`pytest --lf` reruns only
// the failure).
func TestPythonAndBuildsUnderVerify(t *testing.T) {
	requireABI(t, 3)
	// The user's own settings would change what Python writes.
	clean := []string{"PYTHONDONTWRITEBYTECODE=", "PYTEST_ADDOPTS=", "PYTHONPYCACHEPREFIX="}
	for _, bc := range buildCases() {
		for _, pass := range []bool{true, false} {
			// No commas: the test's temp dir is named after it, and a
			// linker splits -Wl,-rpath,DIR at them.
			name := bc.name + " passing"
			if !pass {
				name = bc.name + " failing"
			}
			t.Run(name, func(t *testing.T) {
				requireTool(t, bc.tools...)
				home, env := freshHome(t)
				env = append(env, clean...)
				ws := workspace(t)
				argv := bc.setup(t, ws, pass)
				o := runOpts{dir: ws, env: env}
				// The control, bare.
				r := run(t, o, argv...)
				if (r.code == 0) != pass {
					t.Fatalf("control: %q without wrun: want passing %v: %s", argv, pass, r)
				}
				for _, p := range bc.bare {
					if !exists(filepath.Join(ws, p)) {
						t.Errorf("control: %q without wrun did not write %s, so this test cannot tell", argv, p)
					}
				}
				resetDir(t, ws)
				argv = bc.setup(t, ws, pass)
				before := snapshot(t, ws)
				s, r := runScenario(t, o, harnessRun{grant: "verify", argv: argv})
				if (s.ExitCode == 0) != pass {
					t.Fatalf("%q under verify: want passing %v:\n%s", argv, pass, r)
				}
				if s.Request != nil {
					var got []string
					for _, d := range s.Request.Denials {
						got = append(got, d.Op+" "+d.Path+d.Addr)
					}
					t.Errorf("%q under verify asks for %q:\n%s", argv, got, r)
				}
				for _, d := range s.Ignored {
					if strings.HasPrefix(d.Path, ws+"/") {
						t.Errorf("a write in the workspace was refused: %s %s", d.Op, d.Path)
					}
				}
				if pass {
					if lines := wrunLines(r.stderr); len(lines) > 0 {
						t.Errorf("a successful %q printed wrun's lines:\n%s", argv, strings.Join(lines, "\n"))
					}
				}
				if after := snapshot(t, ws); !maps.Equal(before, after) {
					t.Errorf("%q under verify changed the workspace:\n%s", argv, diffSnapshots(before, after))
				}
				if bc.name != "a Python package's tests" || pass {
					return
				}
				// Kept for later sandboxed runs of this workspace: the
				// bytecode, and the last failure.
				pyc, _ := filepath.Glob(filepath.Join(home, ".cache", "wrun", "ws", "*", "pycache", ws, "src", "calc", "ops.*.pyc"))
				if len(pyc) != 1 {
					t.Errorf("no bytecode of calc/ops.py in the private state: %q", pyc)
				}
				r = wrun(t, o, "--grant", "verify", "--", "pytest", "-q", "--lf")
				// Without the cache --lf runs both: "1 failed, 1 passed".
				if r.code == 0 || !strings.Contains(r.stdout, "1 failed") || strings.Contains(r.stdout, "passed") {
					t.Errorf("pytest --lf under verify does not rerun only the last failure:\n%s", r)
				}
				// The control: pytest's cache pointed back at the
				// workspace (the command line wins over PYTEST_ADDOPTS)
				// is refused, and asked for.
				s, r = runScenario(t, o, harnessRun{grant: "verify", argv: []string{"pytest", "-q", "-o", "cache_dir=.pytest_cache"}})
				if s.Request == nil || !slices.ContainsFunc(s.Request.Denials, func(d escalate.DeniedAct) bool {
					return d.Path == filepath.Join(ws, ".pytest_cache")
				}) {
					t.Errorf("control: a cache in the workspace is not asked for:\n%s", r)
				}
			})
		}
	}

	// A failing make asks for the outputs it was refused, and nothing
	// else: make -k tries both objects beside the sources.
	t.Run("make -k of objects beside the sources", func(t *testing.T) {
		requireTool(t, "make", "cc")
		_, env := freshHome(t)
		ws := workspace(t)
		makeProject(t, ws, true, false)
		s, r := runScenario(t, runOpts{dir: ws, env: append(env, clean...)}, harnessRun{grant: "verify", argv: []string{"make", "-k"}})
		var got []string
		if s.Request != nil {
			for _, d := range s.Request.Denials {
				got = append(got, d.Path)
			}
		}
		slices.Sort(got)
		if want := []string{filepath.Join(ws, "add.o"), filepath.Join(ws, "t.o")}; s.ExitCode == 0 || !slices.Equal(got, want) {
			t.Errorf("make -k under verify: exit %d, asks for %q, want %q:\n%s", s.ExitCode, got, want, r)
		}
	})
}

// diffSnapshots lists what differs between two snapshots.
func diffSnapshots(before, after map[string]string) string {
	var out []string
	for p, v := range after {
		if w, ok := before[p]; !ok {
			out = append(out, "+ "+p)
		} else if w != v {
			out = append(out, "~ "+p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			out = append(out, "- "+p)
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// TestHiddenReadOffersThatFileOnly (issue 25, item 4): a refused read of
// a file the child may not read (the user's ssh config, hidden as a
// credential store) comes back with --allow-read of exactly that file as
// its narrowest alternative; applied, the command reads it, and the key
// beside it stays hidden. The control: bare, both are readable.
func TestHiddenReadOffersThatFileOnly(t *testing.T) {
	requireABI(t, 1)
	requireTool(t, "cat", "sh")
	home, env := freshHome(t)
	ssh := filepath.Join(home, ".ssh")
	mustWrite(t, filepath.Join(ssh, "config"), "Host example\n")
	mustWrite(t, filepath.Join(ssh, "id_test"), "not a key\n")
	ws := workspace(t)
	o := runOpts{dir: ws, env: env}
	if r := run(t, o, "cat", filepath.Join(ssh, "config"), filepath.Join(ssh, "id_test")); r.code != 0 {
		t.Fatalf("control: bare cat: %s", r)
	}
	h := harnessRun{grant: "verify", argv: []string{"cat", filepath.Join(ssh, "config")}}
	s, r := runScenario(t, o, h)
	if s.ExitCode == 0 || s.Request == nil {
		t.Fatalf("the hidden read was not refused with a request:\n%s", r)
	}
	d := s.Request.Denials[0]
	alt := d.Alternatives[0]
	if d.Path != filepath.Join(ssh, "config") || alt.Kind != escalate.KindAllowRead || !slices.Equal(alt.Args, []string{"--allow-read", filepath.Join(ssh, "config")}) {
		t.Fatalf("want --allow-read %s first for the denial, got %+v\n%s", filepath.Join(ssh, "config"), d, r)
	}
	h = apply(t, o, h, alt)
	if s, r := runScenario(t, o, h); s.ExitCode != 0 || !strings.Contains(r.stdout, "Host example") {
		t.Fatalf("%s applied: the read still fails:\n%s", alt.ID, r)
	}
	// The key beside it stays hidden under the applied flags.
	h.argv = []string{"cat", filepath.Join(ssh, "id_test")}
	if s, r := runScenario(t, o, h); s.ExitCode == 0 || strings.Contains(r.stdout, "not a key") {
		t.Fatalf("--allow-read of the config opened the key beside it:\n%s", r)
	}
}

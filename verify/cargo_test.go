package verify

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tree writes files (path -> content; a path ending in / is a directory)
// below a fresh directory and returns it, symlinks resolved.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for p, content := range files {
		full := filepath.Join(dir, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func envFunc(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

func writablePaths(s Scope, tool string) []string {
	var out []string
	for _, w := range s.Writable {
		if w.Tool == tool {
			out = append(out, w.Path)
		}
	}
	return out
}

func envValue(s Scope, name string) (string, bool) {
	for _, e := range s.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func TestCargoScope(t *testing.T) {
	const ws = "[workspace]\nmembers = [\"a\", \"b\"]\n"
	const pkg = "[package]\nname = \"x\"\n"
	tests := []struct {
		name    string
		files   map[string]string
		workdir string            // below the tree; "" is its top
		env     map[string]string // $T is replaced by the tree
		want    []string          // writable, relative to the tree unless absolute
		wantEnv map[string]string
		note    string // a note that must appear
	}{
		{name: "no cargo", files: map[string]string{"README": "x"}},
		{name: "single crate", files: map[string]string{"Cargo.toml": pkg, "Cargo.lock": ""}, want: []string{"target"}},
		{name: "workspace from the root", files: map[string]string{"Cargo.toml": ws, "a/Cargo.toml": pkg, "Cargo.lock": ""}, want: []string{"target"}},
		{name: "member crate finds the workspace root", files: map[string]string{"Cargo.toml": ws, "a/Cargo.toml": pkg, "Cargo.lock": ""}, workdir: "a", want: []string{"target"}},
		{name: "workspace.package table counts", files: map[string]string{"Cargo.toml": "[workspace.package]\nversion = \"1\"\n", "a/Cargo.toml": pkg}, workdir: "a", want: []string{"target"}},
		{name: "explicit package.workspace", files: map[string]string{"w/Cargo.toml": ws, "w/x/a/Cargo.toml": pkg + "workspace = \"../..\"\n"}, workdir: "w/x/a", want: []string{"w/target"}},
		{name: "lone crate below an unrelated dir", files: map[string]string{"a/Cargo.toml": pkg}, workdir: "a", want: []string{"a/target"}},
		{name: "CARGO_TARGET_DIR", files: map[string]string{"Cargo.toml": pkg}, env: map[string]string{"CARGO_TARGET_DIR": "/tmp/out"}, want: []string{"/tmp/out"}},
		{name: "relative CARGO_TARGET_DIR", files: map[string]string{"Cargo.toml": pkg}, env: map[string]string{"CARGO_TARGET_DIR": "out"}, want: []string{"out"}},
		{name: "CARGO_BUILD_TARGET_DIR", files: map[string]string{"Cargo.toml": pkg}, env: map[string]string{"CARGO_BUILD_TARGET_DIR": "/tmp/o2"}, want: []string{"/tmp/o2"}},
		{name: "target-dir in the repository's config, fresh", files: map[string]string{"Cargo.toml": pkg, ".cargo/config.toml": "[build]\ntarget-dir = \"build/out\"\n"}, want: []string{"build/out"}},
		{name: "dotted target-dir", files: map[string]string{"Cargo.toml": pkg, ".cargo/config.toml": "build.target-dir = \"o\" # here\n"}, want: []string{"o"}},
		{name: "repository config may not name the source tree", files: map[string]string{"Cargo.toml": pkg, "src/lib.rs": "", ".cargo/config.toml": "[build]\ntarget-dir = \"src\"\n"},
			want: []string{"target"}, wantEnv: map[string]string{"CARGO_TARGET_DIR": "$T/target"}, note: "is ignored"},
		{name: "repository config may not name the workspace", files: map[string]string{"Cargo.toml": pkg, ".cargo/config.toml": "[build]\ntarget-dir = \".\"\n"},
			want: []string{"target"}, wantEnv: map[string]string{"CARGO_TARGET_DIR": "$T/target"}},
		{name: "repository config may not leave its tree", files: map[string]string{"Cargo.toml": pkg, ".cargo/config.toml": "[build]\ntarget-dir = \"/root/.ssh\"\n"},
			want: []string{"target"}, wantEnv: map[string]string{"CARGO_TARGET_DIR": "$T/target"}},
		{name: "repository config may reuse cargo's own output dir", files: map[string]string{"Cargo.toml": pkg, "out/CACHEDIR.TAG": "Signature: 8a477f597d28d172789f06886806bc55", ".cargo/config.toml": "[build]\ntarget-dir = \"out\"\n"}, want: []string{"out"}},
		{name: "repository config may not name a git dir", files: map[string]string{"Cargo.toml": pkg, ".cargo/config.toml": "[build]\ntarget-dir = \"x/.git/t\"\n"},
			want: []string{"target"}},
		{name: "user's CARGO_HOME config is trusted", files: map[string]string{"ws/Cargo.toml": pkg, "home/config.toml": "[build]\ntarget-dir = \"/tmp/shared-target\"\n"},
			workdir: "ws", env: map[string]string{"CARGO_HOME": "$T/home"}, want: []string{"/tmp/shared-target"}},
		{name: "build-dir apart from target-dir", files: map[string]string{"Cargo.toml": pkg, ".cargo/config.toml": "[build]\nbuild-dir = \"{workspace-root}/build\"\n"}, want: []string{"target", "build"}},
		{name: "CARGO_BUILD_BUILD_DIR", files: map[string]string{"Cargo.toml": pkg}, env: map[string]string{"CARGO_BUILD_BUILD_DIR": "/tmp/bd"}, want: []string{"target", "/tmp/bd"}},
		{name: "unknown template", files: map[string]string{"Cargo.toml": pkg, ".cargo/config.toml": "[build]\nbuild-dir = \"{workspace-path-hash}/b\"\n"}, want: []string{"target"}, note: "not understood"},
		{name: "missing Cargo.lock is noted", files: map[string]string{"Cargo.toml": pkg}, want: []string{"target"}, note: "Cargo.lock does not exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			top := tree(t, tc.files)
			env := map[string]string{}
			for k, v := range tc.env {
				env[k] = strings.ReplaceAll(v, "$T", top)
			}
			var s Scope
			// Where cargo's own target dir is found matters where the
			// grant writes it (shell=full); TestCargoPrivateTarget covers
			// verify, where it stays read-only.
			cargoScope(Input{Workdir: filepath.Join(top, tc.workdir), Home: filepath.Join(top, "nohome"), Getenv: envFunc(env), SharedCaches: true}, nil, &s)
			var want []string
			for _, w := range tc.want {
				want = append(want, absFrom(top, w))
			}
			if got := writablePaths(s, "cargo"); !slices.Equal(got, want) {
				t.Errorf("writable %v, want %v", got, want)
			}
			for _, w := range s.Writable {
				if !w.Dir || !w.Create {
					t.Errorf("%s: want a directory created up front", w.Path)
				}
				if within(w.Path, top) && !strings.HasPrefix(tc.env["CARGO_TARGET_DIR"], "/") && w.Beneath == "" && !within(w.Path, filepath.Join(top, tc.workdir)) {
					t.Errorf("%s: outside the workspace dir but not reached beneath a trusted dir", w.Path)
				}
			}
			for k, v := range tc.wantEnv {
				if got, _ := envValue(s, k); got != strings.ReplaceAll(v, "$T", top) {
					t.Errorf("env %s=%q, want %q", k, got, v)
				}
			}
			if tc.note != "" && !strings.Contains(strings.Join(s.Notes, "\n"), tc.note) {
				t.Errorf("notes %q lack %q", s.Notes, tc.note)
			}
			if len(tc.want) > 0 && !slices.ContainsFunc(s.ReadOnly, func(r ReadOnly) bool { return filepath.Base(r.Path) == "Cargo.lock" }) {
				t.Errorf("Cargo.lock is not listed as kept read-only: %v", s.ReadOnly)
			}
		})
	}
}

func TestCargoScopeBeneath(t *testing.T) {
	top := tree(t, map[string]string{"Cargo.toml": "[workspace]\n", "a/Cargo.toml": "[package]\n"})
	var s Scope
	cargoScope(Input{Workdir: filepath.Join(top, "a"), Getenv: envFunc(nil), SharedCaches: true}, nil, &s)
	if len(s.Writable) != 1 || s.Writable[0].Beneath != top {
		t.Fatalf("the workspace target of a member crate must be reached beneath the workspace root: %+v", s.Writable)
	}
}

// TestCargoPrivateTarget: under verify cargo builds into a target dir of
// the sandbox's own, keyed like its state, and the user's target dir (found
// as cargo finds it) stays read-only; only a grant that writes the user's
// target dir anyway gets it.
func TestCargoPrivateTarget(t *testing.T) {
	top := tree(t, map[string]string{"ws/Cargo.toml": "[workspace]\n", "ws/a/Cargo.toml": "[package]\n", "ws/Cargo.lock": ""})
	ws := filepath.Join(top, "ws")
	state := filepath.Join(top, "state", "ws", "k1")
	tests := []struct {
		name   string
		in     Input
		want   string // the one writable path
		env    string // CARGO_TARGET_DIR, "" when unset
		userRO string // the user's target dir listed read-only, "" when not
	}{
		{name: "verify: private, in the state dir",
			in:   Input{Workdir: filepath.Join(ws, "a"), StateDir: state, StateRoot: filepath.Join(top, "state"), TempDir: filepath.Join(top, "tmp")},
			want: filepath.Join(state, "cargo-target"), env: filepath.Join(state, "cargo-target"), userRO: filepath.Join(ws, "target")},
		{name: "verify without a state dir: the private temp dir",
			in:   Input{Workdir: ws, TempDir: filepath.Join(top, "tmp")},
			want: filepath.Join(top, "tmp", "cargo-target"), env: filepath.Join(top, "tmp", "cargo-target"), userRO: filepath.Join(ws, "target")},
		{name: "verify: the user's CARGO_TARGET_DIR is the user's too",
			in:   Input{Workdir: ws, StateDir: state, StateRoot: filepath.Join(top, "state"), Getenv: envFunc(map[string]string{"CARGO_TARGET_DIR": "/shared/t"})},
			want: filepath.Join(state, "cargo-target"), env: filepath.Join(state, "cargo-target"), userRO: "/shared/t"},
		{name: "files=write: the workspace's target is written anyway",
			in:   Input{Workdir: ws, StateDir: state, WorkspaceWritable: true},
			want: filepath.Join(ws, "target")},
		{name: "files=write, a target outside the workspace: private",
			in:   Input{Workdir: ws, StateDir: state, StateRoot: filepath.Join(top, "state"), WorkspaceWritable: true, Getenv: envFunc(map[string]string{"CARGO_TARGET_DIR": "/shared/t"})},
			want: filepath.Join(state, "cargo-target"), env: filepath.Join(state, "cargo-target"), userRO: "/shared/t"},
		{name: "shell=full writes the user's caches anyway",
			in:   Input{Workdir: ws, StateDir: state, SharedCaches: true},
			want: filepath.Join(ws, "target")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in.withGetenv()
			var s Scope
			cargoScope(in, nil, &s)
			if got := writablePaths(s, "cargo"); !slices.Equal(got, []string{tc.want}) {
				t.Fatalf("writable %v, want [%s]", got, tc.want)
			}
			w := s.Writable[0]
			if !w.Dir || !w.Create {
				t.Errorf("%s: want a directory created up front", w.Path)
			}
			if tc.env == "" {
				if v, ok := envValue(s, "CARGO_TARGET_DIR"); ok {
					t.Errorf("CARGO_TARGET_DIR=%s, want it unset", v)
				}
				return
			}
			if w.Beneath == "" || !within(w.Path, w.Beneath) || within(w.Beneath, ws) {
				t.Errorf("%s: want it reached beneath a directory of wrun's, got %q", w.Path, w.Beneath)
			}
			for _, name := range []string{"CARGO_TARGET_DIR", "CARGO_BUILD_BUILD_DIR"} {
				if v, _ := envValue(s, name); v != tc.env {
					t.Errorf("%s=%q, want %q", name, v, tc.env)
				}
			}
			if !slices.ContainsFunc(s.ReadOnly, func(r ReadOnly) bool { return r.Path == tc.userRO }) {
				t.Errorf("the user's target dir %s is not listed read-only: %+v", tc.userRO, s.ReadOnly)
			}
		})
	}
}

func TestTOMLHelpers(t *testing.T) {
	tests := []struct {
		doc, table, key, want string
	}{
		{"[build]\ntarget-dir = \"t\"\n", "build", "target-dir", "t"},
		{"[build]\ntarget-dir = 't' # c\n", "build", "target-dir", "t"},
		{"build.target-dir = \"t\"\n", "build", "target-dir", "t"},
		{"[other]\ntarget-dir = \"t\"\n", "build", "target-dir", ""},
		{"[ build ]\njobs = 2\ntarget-dir=\"a#b\"\n", "build", "target-dir", "a#b"},
	}
	for _, tc := range tests {
		if got := tomlString(tc.doc, tc.table, tc.key); got != tc.want {
			t.Errorf("tomlString(%q) = %q, want %q", tc.doc, got, tc.want)
		}
	}
	for doc, want := range map[string]bool{
		"[workspace]\n":                   true,
		"[workspace.dependencies]\n":      true,
		"workspace.members = []\n":        true,
		"[package]\nworkspace.x = 1\n":    false,
		"[package]\nname = \"ws\"\n":      false,
		"[workspaces]\n":                  false,
		"# [workspace]\n[package]\n":      false,
		"  [workspace]  \nmembers=[]\n":   true,
		"[dependencies]\nworkspace = 1\n": false,
	} {
		if got := hasTable(doc, "workspace"); got != want {
			t.Errorf("hasTable(%q) = %v, want %v", doc, got, want)
		}
	}
}

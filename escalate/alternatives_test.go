package escalate

import (
	"slices"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/sandbox"
	"github.com/wrun-dev/wrun/verify"
)

func ceilingOf(t testing.TB, spec, source string) *Ceiling {
	b, err := grant.ParseBound(spec)
	if err != nil {
		t.Fatal(err)
	}
	return &Ceiling{Grant: b.Grant, Write: b.Write, Source: source}
}

// existing returns an Exists that knows only the given paths (and their
// ancestors).
func existing(paths ...string) func(string) bool {
	return func(p string) bool {
		for _, e := range paths {
			if p == "/" || e == p || strings.HasPrefix(e, p+"/") {
				return true
			}
		}
		return false
	}
}

func kinds(alts []Alternative) string {
	var out []string
	for _, a := range alts {
		out = append(out, a.ID+":"+a.Kind)
	}
	return strings.Join(out, " ")
}

func TestAlternatives(t *testing.T) {
	cargoTest := []string{"cargo", "test", "--", "--nocapture"}
	tests := []struct {
		name  string
		grant string
		facts Facts
		d     sandbox.Denial
		want  string // id:kind, in order
		check func(t *testing.T, alts []Alternative)
	}{
		{
			name: "cargo registry under verify", grant: "verify", facts: Facts{Argv: cargoTest},
			d:    sandbox.Denial{Op: access.OpCreate, Path: home + "/.cargo/registry/cache/x.crate", Right: "make_reg"},
			want: "cargo-fetch-first:route allow-write-cache:allow-write shell-full:grant ask-parent:ask-parent",
			check: func(t *testing.T, alts []Alternative) {
				want := [][]string{
					{"wrun", "--grant", "verify,shell=full,network=on", "--", "cargo", "fetch"},
					{"wrun", "--grant", "verify,network=on", "--", "cargo", "test", "--offline", "--", "--nocapture"},
				}
				if !equalCommands(alts[0].Commands, want) {
					t.Errorf("route commands %q, want %q", alts[0].Commands, want)
				}
				if alts[0].Grant != "files=read,shell=full,network=on,desktop=off" {
					t.Errorf("route grant %q", alts[0].Grant)
				}
				if got := alts[1].Args; !slices.Equal(got, []string{"--allow-write", home + "/.cargo/registry"}) {
					t.Errorf("allow-write args %q", got)
				}
				if got := alts[2].Args; !slices.Equal(got, []string{"--grant", "verify,shell=full,network=on"}) {
					t.Errorf("grant args %q", got)
				}
			},
		},
		{
			name: "cargo registry from a shell", grant: "verify", facts: Facts{Argv: []string{"sh", "-c", "echo x > ~/.cargo/registry/x"}},
			d: sandbox.Denial{Op: access.OpCreate, Path: home + "/.cargo/registry/x", Right: "make_reg"},
			// No cargo fetch: the shell's write would still be refused.
			want: "allow-write-cache:allow-write shell-full:grant ask-parent:ask-parent",
		},
		{
			name: "cargo registry in a nested run whose ceiling is verify", grant: "verify",
			facts: Facts{Argv: cargoTest, Ceiling: ceilingOf(t, "verify", grant.EnvCeiling)},
			d:     sandbox.Denial{Op: access.OpCreate, Path: home + "/.cargo/registry/x", Right: "make_reg"},
			want:  "cargo-fetch-first:beyond-ceiling allow-write-cache:beyond-ceiling shell-full:beyond-ceiling ask-parent:ask-parent",
			check: func(t *testing.T, alts []Alternative) {
				for _, a := range alts[:3] {
					if a.WithinCeiling || len(a.Exceeds) == 0 || !strings.Contains(a.Description, "the ceiling is verify (from WRUN_CEILING)") {
						t.Errorf("%s: %+v", a.ID, a)
					}
				}
				if !strings.Contains(alts[1].Exceeds[0], "shell=full exceeds the ceiling's shell=verify") {
					t.Errorf("exceeds %q", alts[1].Exceeds)
				}
			},
		},
		{
			name: "CARGO_HOME's package cache lock: shell=full would not cover it", grant: "verify", facts: Facts{Argv: cargoTest},
			d: sandbox.Denial{Op: access.OpCreate, Path: home + "/.cargo/.package-cache", Right: "make_reg"},
			// --allow-write ~/.cargo would not help either: the hidden
			// ~/.cargo/credentials.toml carves the rights to create entries
			// out of ~/.cargo itself.
			// Nor would cargo fetch: cargo takes this lock whatever it
			// fetched (and goes on without it, see Expected).
			want: "ask-parent:ask-parent",
		},
		{
			name: "go module cache", grant: "verify", facts: Facts{Argv: []string{"go", "test", "./..."}},
			d:    sandbox.Denial{Op: access.OpMkdir, Path: home + "/go/pkg/mod/cache/download", Right: "make_dir"},
			want: "go-mod-download-first:route allow-write-cache:allow-write shell-full:grant ask-parent:ask-parent",
		},
		{
			name: "the user's GOCACHE under verify", grant: "verify", facts: Facts{Argv: []string{"go", "vet"}},
			d:    sandbox.Denial{Op: access.OpCreate, Path: home + "/.cache/go-build/ab/x", Right: "make_reg"},
			want: "private-gocache:route allow-write-cache:allow-write shell-full:grant ask-parent:ask-parent",
		},
		{
			name: "stale Cargo.lock", grant: "verify", facts: Facts{Argv: cargoTest},
			d: sandbox.Denial{Op: access.OpOpen, Path: ws + "/Cargo.lock", Right: "write_file"},
			// No cargo --locked: it fails whenever cargo would rewrite
			// the lock file, so the agent that takes it loops.
			want: "allow-write-lockfile:allow-write files-write:grant ask-parent:ask-parent",
			check: func(t *testing.T, alts []Alternative) {
				if alts[0].Args[1] != ws+"/Cargo.lock" {
					t.Errorf("allow-write %q", alts[0].Args)
				}
				if alts[1].Args[1] != "write,network=on" {
					t.Errorf("grant %q", alts[1].Args)
				}
			},
		},
		{
			name: "missing Cargo.lock cannot be named by --allow-write", grant: "verify",
			facts: Facts{Argv: cargoTest, Exists: existing(ws + "/src/main.rs"), Protection: access.ProtectExact},
			d:     sandbox.Denial{Op: access.OpCreate, Path: ws + "/Cargo.lock", Right: "make_reg"},
			want:  "cargo-generate-lockfile:route files-write:grant ask-parent:ask-parent",
			check: func(t *testing.T, alts []Alternative) {
				want := [][]string{{"wrun", "--grant", "write,network=on", "--", "cargo", "generate-lockfile"},
					{"wrun", "--grant", "verify,network=on", "--", "cargo", "test", "--", "--nocapture"}}
				if !equalCommands(alts[0].Commands, want) {
					t.Errorf("commands %q", alts[0].Commands)
				}
			},
		},
		{
			name: "build output in the source tree", grant: "verify", facts: Facts{Argv: []string{"cargo", "build"}},
			d: sandbox.Denial{Op: access.OpCreate, Path: ws + "/src/generated.rs", Right: "make_reg"},
			// Not "write it under $TMPDIR": cargo writes where it must.
			want: "cargo-target-dir:route allow-write:allow-write files-write:grant ask-parent:ask-parent",
			check: func(t *testing.T, alts []Alternative) {
				if alts[1].Args[1] != ws+"/src" {
					t.Errorf("allow-write %q, want the file's directory", alts[1].Args)
				}
				want := []string{"wrun", "--grant", "verify,network=on", "--", "sh", "-c", `CARGO_TARGET_DIR="$TMPDIR/target" exec "$@"`, "sh", "cargo", "build"}
				if !slices.Equal(alts[0].Commands[0], want) {
					t.Errorf("commands %q", alts[0].Commands)
				}
			},
		},
		{
			name: "writing an existing source file allows just the file", grant: "verify",
			d:    sandbox.Denial{Op: access.OpOpen, Path: ws + "/src/main.rs", Right: "write_file"},
			want: "use-tmpdir:route allow-write:allow-write files-write:grant ask-parent:ask-parent",
			check: func(t *testing.T, alts []Alternative) {
				if alts[1].Args[1] != ws+"/src/main.rs" {
					t.Errorf("allow-write %q", alts[1].Args)
				}
			},
		},
		{
			name: "new file at the root of a git workspace, carved: no widening would help", grant: "verify",
			facts: Facts{Exists: existing(ws+"/.git/config", ws+"/.git/hooks", ws+"/src")},
			d:     sandbox.Denial{Op: access.OpCreate, Path: ws + "/notes.txt", Right: "make_reg"},
			want:  "use-tmpdir:route ask-parent:ask-parent",
		},
		{
			// The workspace holds protected paths (.git/config, hooks): no
			// --allow-write of a directory above them; files=write, which
			// protects them, is offered.
			name: "the same with mounted protection", grant: "verify",
			facts: Facts{Exists: existing(ws+"/.git/config", ws+"/.git/hooks", ws+"/src"), Protection: access.ProtectExact},
			d:     sandbox.Denial{Op: access.OpCreate, Path: ws + "/notes.txt", Right: "make_reg"},
			want:  "use-tmpdir:route files-write:grant ask-parent:ask-parent",
		},
		{
			name: "workspace write beyond a files=read ceiling", grant: "verify",
			facts: Facts{Ceiling: ceilingOf(t, "verify", grant.CeilingFlag)},
			d:     sandbox.Denial{Op: access.OpCreate, Path: ws + "/src/x", Right: "make_reg"},
			want:  "use-tmpdir:route allow-write:beyond-ceiling files-write:beyond-ceiling ask-parent:ask-parent",
		},
		{
			name: "write outside every rule", grant: "verify", facts: Facts{Exists: existing("/opt/tool")},
			d:    sandbox.Denial{Op: access.OpCreate, Path: "/opt/tool/state/db", Right: "make_reg"},
			want: "use-tmpdir:route allow-write:allow-write ask-parent:ask-parent",
			check: func(t *testing.T, alts []Alternative) {
				if alts[1].Args[1] != "/opt/tool" {
					t.Errorf("allow-write %q: want the nearest existing directory", alts[1].Args)
				}
			},
		},
		{
			name: "a write to the home directory itself is not offered as one path", grant: "verify",
			d:    sandbox.Denial{Op: access.OpCreate, Path: home + "/.lesshst", Right: "make_reg"},
			want: "use-tmpdir:route ask-parent:ask-parent",
		},
		{
			name: "build output under inspect names shell=verify", grant: "inspect",
			facts: Facts{VerifyScope: []verify.Path{{Path: ws + "/target", Dir: true}}},
			d:     sandbox.Denial{Op: access.OpMkdir, Path: ws + "/target/debug", Right: "make_dir"},
			want:  "shell-verify:grant ask-parent:ask-parent",
			check: func(t *testing.T, alts []Alternative) {
				if alts[0].Args[1] != "verify,network=off" {
					t.Errorf("grant %q", alts[0].Args)
				}
			},
		},
		{
			name: "git hook: protected, no widening at all", grant: "write",
			d:    sandbox.Denial{Op: access.OpCreate, Path: ws + "/.git/hooks/pre-commit", Right: "make_reg"},
			want: "ask-parent:ask-parent",
			check: func(t *testing.T, alts []Alternative) {
				if !strings.Contains(alts[0].Description, "planted hook") {
					t.Errorf("ask-parent does not say why: %q", alts[0].Description)
				}
			},
		},
		{
			name: "git config under verify: protected, no widening", grant: "verify",
			d:    sandbox.Denial{Op: access.OpOpen, Path: ws + "/.git/config", Right: "write_file"},
			want: "ask-parent:ask-parent",
		},
		{
			name: "credential store: that one file, or the parent", grant: "verify",
			d:    sandbox.Denial{Op: access.OpOpen, Path: home + "/.ssh/id_ed25519", Right: "read_file"},
			want: "allow-read:allow-read ask-parent:ask-parent",
			check: func(t *testing.T, alts []Alternative) {
				if got := alts[0].Args; len(got) != 2 || got[0] != "--allow-read" || got[1] != home+"/.ssh/id_ed25519" || !alts[0].WithinCeiling {
					t.Errorf("allow-read %+v", alts[0])
				}
			},
		},
		{
			name: "a write into a credential store: nothing but the parent", grant: "verify",
			d:    sandbox.Denial{Op: access.OpOpen, Path: home + "/.ssh/config", Right: "write_file"},
			want: "ask-parent:ask-parent",
		},
		{
			name: "a read outside what the child reads: that path", grant: "verify",
			d:    sandbox.Denial{Op: access.OpOpen, Path: "/srv/data/list.txt", Right: "read_file"},
			want: "allow-read:allow-read ask-parent:ask-parent",
		},
		{
			name: "tcp with network off, cargo", grant: "inspect", facts: Facts{Argv: []string{"cargo", "build"}},
			d:    sandbox.Denial{Op: access.OpConnect, Addr: "index.crates.io:443", Right: access.RightConnectTCP},
			want: "cargo-offline:route network-on:grant ask-parent:ask-parent",
			check: func(t *testing.T, alts []Alternative) {
				if alts[1].Args[1] != "inspect,network=on" {
					t.Errorf("grant %q", alts[1].Args)
				}
			},
		},
		{
			name: "tcp with network off and a ceiling without network", grant: "write", facts: Facts{Argv: []string{"git", "fetch"}, Ceiling: ceilingOf(t, "write", grant.EnvCeiling)},
			d:    sandbox.Denial{Op: access.OpConnect, Addr: "127.0.0.1:9418", Right: access.RightConnectTCP},
			want: "network-on:beyond-ceiling ask-parent:ask-parent",
		},
		{
			name: "D-Bus is beyond the default ceiling", grant: "verify",
			d:    sandbox.Denial{Op: access.OpConnect, Addr: "unix:/run/user/1000/bus", Right: access.RightConnectUnix},
			want: "desktop-on:beyond-ceiling ask-parent:ask-parent",
			check: func(t *testing.T, alts []Alternative) {
				if !strings.Contains(alts[0].Description, "desktop=on exceeds the ceiling's desktop=off") || !strings.Contains(alts[0].Description, "from default") {
					t.Errorf("description %q", alts[0].Description)
				}
			},
		},
		{
			name: "move that gains rights", grant: "inspect",
			d:    sandbox.Denial{Op: access.OpRename, Path: tmp + "/b/f", Right: "refer"},
			want: "copy-not-move:route ask-parent:ask-parent",
		},
		{
			name: "nested: asking the parent says so", grant: "verify",
			facts: Facts{Env: append([]string{"WRUN_GRANT=files=read,shell=verify,network=on,desktop=off"}, fixtureEnv...)},
			d:     sandbox.Denial{Op: access.OpOpen, Path: ws + "/.git/config", Right: "write_file"},
			want:  "ask-parent:ask-parent",
			check: func(t *testing.T, alts []Alternative) {
				if !strings.Contains(alts[0].Description, "enclosing run") {
					t.Errorf("description %q", alts[0].Description)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := analyzer(t, tc.grant, tc.facts)
			alts := a.Alternatives(tc.d)
			if got := kinds(alts); got != tc.want {
				t.Fatalf("alternatives\n got %s\nwant %s", got, tc.want)
			}
			checkAlternatives(t, a, alts)
			if tc.check != nil {
				tc.check(t, alts)
			}
		})
	}
}

// checkAlternatives asserts what holds for every list of alternatives.
func checkAlternatives(t *testing.T, a *Analyzer, alts []Alternative) {
	t.Helper()
	if len(alts) == 0 || alts[len(alts)-1].Kind != KindAskParent {
		t.Errorf("the last alternative must be to ask the parent: %s", kinds(alts))
	}
	if ask := alts[len(alts)-1]; strings.HasSuffix(ask.Description, ": ") || strings.Contains(ask.Description, "refused: (") {
		t.Errorf("asking the parent does not say why: %q", ask.Description)
	}
	last := -1
	for _, alt := range alts {
		if r := rankOf(alt); r < last {
			t.Errorf("%s is out of order (narrowest first): %s", alt.ID, kinds(alts))
		} else {
			last = r
		}
		// Descriptions quote the policy's reasons, which may name the
		// attack ("at the next unsandboxed commit"); the catalogue's own
		// templates are checked for these words by TestCatalogue.
		text := strings.ToLower(alt.Try + " " + strings.Join(alt.Args, " "))
		for _, cmd := range alt.Commands {
			text += " " + strings.Join(cmd, " ")
			if cmd[0] != "wrun" {
				t.Errorf("%s: command %q does not run under wrun", alt.ID, cmd)
			}
		}
		for _, w := range forbidden {
			if strings.Contains(text, w) {
				t.Errorf("%s mentions %q: %q", alt.ID, w, text)
			}
		}
		if strings.Contains(text, "{") && !strings.Contains(text, "${") {
			t.Errorf("%s has an unfilled placeholder: %q", alt.ID, text)
		}
		g, err := grant.Parse(alt.Grant)
		if err != nil {
			t.Errorf("%s: grant %q: %v", alt.ID, alt.Grant, err)
		}
		if ex := widening(a.p.Grant, g, a.ceiling.Grant); alt.Kind != KindBeyondCeiling && len(ex) > 0 {
			t.Errorf("%s: grant %s widens beyond the ceiling %s but is offered", alt.ID, alt.Grant, a.ceiling)
		}
		if alt.WithinCeiling != (alt.Kind != KindBeyondCeiling) {
			t.Errorf("%s: within_ceiling %v for kind %s", alt.ID, alt.WithinCeiling, alt.Kind)
		}
	}
}

func equalCommands(a, b [][]string) bool {
	return slices.EqualFunc(a, b, func(x, y []string) bool { return slices.Equal(x, y) })
}

func TestWithFlag(t *testing.T) {
	tests := []struct{ argv, want string }{
		{"cargo test", "cargo test --offline"},
		{"cargo test -- --nocapture", "cargo test --offline -- --nocapture"},
		{"cargo +nightly test --workspace", "cargo +nightly test --offline --workspace"},
		{"cargo -q build", "cargo -q build --offline"},
		{"cargo test --offline", "cargo test --offline"},
		{"/usr/bin/npm ci", "/usr/bin/npm ci --offline"},
		{"make check", "make check --offline"},
	}
	for _, tc := range tests {
		if got := strings.Join(withFlag(strings.Fields(tc.argv), "--offline"), " "); got != tc.want {
			t.Errorf("withFlag(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}

func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"sh", "-c", "echo x > ~/y", "it's", ""})
	want := `sh -c 'echo x > ~/y' 'it'\''s' ''`
	if got != want {
		t.Errorf("shellJoin = %s, want %s", got, want)
	}
}

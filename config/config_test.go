package config

import (
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/grant"
)

func mustFile(t *testing.T, path, text string) *File {
	t.Helper()
	f, err := Parse(path, []byte(text))
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return f
}

func canon(t *testing.T, spec string) string {
	t.Helper()
	if spec == "" {
		return ""
	}
	g, err := grant.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return g.String()
}

// TestPrecedence: built-in < user config < repository (narrowing) < flags
// (within the ceiling).
func TestPrecedence(t *testing.T) {
	for _, tc := range []struct {
		name           string
		user, repo     string
		flags          Flags
		grant, gsource string
		ceiling, csrc  string
	}{
		{name: "built-in", grant: "inspect", gsource: "built-in", csrc: "built-in"},
		{name: "user over built-in", user: "[defaults]\ngrant = \"verify\"\n",
			grant: "verify", gsource: "user config /u/config.toml"},
		{name: "repository narrows user", user: "[defaults]\ngrant = \"full\"\n", repo: "[defaults]\ngrant = \"write\"\n",
			grant: "write", gsource: "repository /r/.wrun.toml (narrowing)"},
		{name: "flag over repository", user: "[defaults]\ngrant = \"full\"\n", repo: "[defaults]\ngrant = \"inspect\"\n",
			flags: Flags{Grant: "verify"}, grant: "verify", gsource: "flag --grant"},
		{name: "user ceiling", user: "[defaults]\nceiling = \"verify\"\n",
			grant: "inspect", gsource: "built-in", ceiling: "verify", csrc: "user config /u/config.toml"},
		{name: "repository narrows ceiling", user: "[defaults]\nceiling = \"full\"\n", repo: "[defaults]\nceiling = \"write\"\n",
			grant: "inspect", gsource: "built-in", ceiling: "write", csrc: "repository /r/.wrun.toml (narrowing)"},
		{name: "flag ceiling within the configured one", user: "[defaults]\nceiling = \"verify\"\n", flags: Flags{Ceiling: "full"},
			grant: "inspect", gsource: "built-in", ceiling: "verify", csrc: "flag --ceiling within user config /u/config.toml"},
		{name: "flag ceiling narrows", user: "[defaults]\nceiling = \"full\"\n", flags: Flags{Ceiling: "inspect"},
			grant: "inspect", gsource: "built-in", ceiling: "inspect", csrc: "flag --ceiling within user config /u/config.toml"},
		{name: "role", flags: Flags{Role: "worker"}, grant: "write", gsource: "role worker (built-in)"},
		{name: "role narrowed by grant", flags: Flags{Role: "worker", Grant: "full,network=off"},
			grant: "write", gsource: "role worker (built-in) narrowed by --grant"},
		{name: "role narrowed by narrower grant", flags: Flags{Role: "worker", Grant: "inspect"},
			grant: "inspect", gsource: "role worker (built-in) narrowed by --grant"},
		{name: "user role", user: "[roles.worker]\ngrant = \"full\"\n", flags: Flags{Role: "worker"},
			grant: "full", gsource: "role worker (user config /u/config.toml)"},
		{name: "repository narrows a role", user: "[roles.worker]\ngrant = \"full\"\n", repo: "[roles.worker]\ngrant = \"write\"\n",
			flags: Flags{Role: "worker"}, grant: "write", gsource: "role worker (repository /r/.wrun.toml (narrowing))"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var user, repo *File
			if tc.user != "" {
				user = mustFile(t, "/u/config.toml", tc.user)
			}
			if tc.repo != "" {
				repo = mustFile(t, "/r/.wrun.toml", tc.repo)
			}
			e, err := Merge(Builtin("/s/wrun"), user, repo)
			if err != nil {
				t.Fatal(err)
			}
			r, err := e.Resolve(tc.flags)
			if err != nil {
				t.Fatal(err)
			}
			if canon(t, r.Grant.V) != canon(t, tc.grant) || r.Grant.Source != tc.gsource {
				t.Errorf("grant %s (%s), want %s (%s)", r.Grant.V, r.Grant.Source, tc.grant, tc.gsource)
			}
			if tc.csrc != "" && (canon(t, r.Ceiling.V) != canon(t, tc.ceiling) || r.Ceiling.Source != tc.csrc) {
				t.Errorf("ceiling %q (%s), want %q (%s)", r.Ceiling.V, r.Ceiling.Source, tc.ceiling, tc.csrc)
			}
		})
	}
}

// TestRepositoryMayNotWiden: every attempt of a repository file to widen
// is refused, naming the file, the line and the key.
func TestRepositoryMayNotWiden(t *testing.T) {
	user := "[defaults]\ngrant = \"verify\"\nceiling = \"write\"\n\n[roles.reviewer]\ngrant = \"inspect\"\n"
	for _, tc := range []struct{ repo, want string }{
		{"[defaults]\ngrant = \"write\"\n", "/r/.wrun.toml:2: defaults.grant: write would widen the default grant (verify, user config /u/config.toml): a repository may only narrow it: files=write exceeds files=read"},
		{"\n[defaults]\nceiling = \"full\"\n", "/r/.wrun.toml:3: defaults.ceiling: full would widen the ceiling"},
		{"[roles.worker]\ngrant = \"full\"\n", "/r/.wrun.toml:2: roles.worker.grant: full would widen the role's grant (write, built-in)"},
		{"[roles.reviewer]\ngrant = \"verify\"\n", "/r/.wrun.toml:2: roles.reviewer.grant: verify would widen the role's grant (inspect, user config /u/config.toml)"},
		{"[roles.newrole]\ndescription = \"x\"\ngrant = \"write\"\n", "/r/.wrun.toml:3: roles.newrole.grant: write would widen the default grant (verify, user config /u/config.toml)"},
		{"[defaults]\napprover = \"sh -c true\"\n", "/r/.wrun.toml:2: defaults.approver: a repository's .wrun.toml may not set this"},
		{"[defaults]\nkeep_env = [\"AWS_SECRET_ACCESS_KEY\"]\n", "/r/.wrun.toml:2: defaults.keep_env: a repository's .wrun.toml may not set this"},
		{"[defaults]\nallow_read = [\"~/.ssh\"]\n", "/r/.wrun.toml:2: defaults.allow_read: a repository's .wrun.toml may not set this"},
		{"[defaults]\nconductor_dir = \"/r\"\n", "/r/.wrun.toml:2: defaults.conductor_dir: a repository's .wrun.toml may not set this"},
	} {
		e, err := Merge(Builtin("/s/wrun"), mustFile(t, "/u/config.toml", user), mustFile(t, "/r/.wrun.toml", tc.repo))
		if err == nil {
			t.Errorf("%q: accepted (grant %s)", tc.repo, e.Grant.V)
			continue
		}
		if !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q:\n got %s\nwant %s...", tc.repo, err, tc.want)
		}
	}
}

// TestMalformed: a malformed file is one line naming file, line and key.
func TestMalformed(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"[defaults]\ngrant = \"sideways\"\n", `/u/c.toml:2: defaults.grant: bad grant "sideways": unknown preset`},
		{"[defaults]\ngrant = 3\n", `/u/c.toml:2: defaults.grant: `},
		{"[defaults]\ngrnt = \"verify\"\n", `/u/c.toml:2: defaults.grnt: unknown setting`},
		{"[defaults]\ngrant = \"verify\n", `/u/c.toml:2: `},
		{"\n\n[roles.scout]\nthinking = \"extreme\"\n", `/u/c.toml:4: roles.scout.thinking: "extreme": want one of off, low, medium, high, max`},
		{"[roles.x]\nthinking_levels = [\n  \"low\",\n  \"huge\",\n]\n", `/u/c.toml:2: roles.x.thinking_levels: "huge" is not a thinking level`},
		{"[defaults]\napprover_timeout = \"soon\"\n", `/u/c.toml:2: defaults.approver_timeout: "soon": want a positive duration`},
		{"[defaults]\nhide = [\"relative/path\"]\n", `/u/c.toml:2: defaults.hide: "relative/path": want an absolute path`},
		{"[models.\"m-1\"]\nthinking = [\"low\", \"mid\"]\n", `/u/c.toml:2: models.m-1.thinking: "mid" is not a thinking level`},
		{"[roles.\"Bad Name\"]\ngrant = \"inspect\"\n", `/u/c.toml:1: roles.Bad Name: "Bad Name": a role name is`},
	} {
		_, err := Parse("/u/c.toml", []byte(tc.text))
		if err == nil {
			t.Errorf("%q: accepted", tc.text)
			continue
		}
		if !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q:\n got %s\nwant %s...", tc.text, err, tc.want)
		}
	}
}

func TestThinking(t *testing.T) {
	user := mustFile(t, "/u/config.toml", `
[models.small]
thinking = ["off", "low"]

[roles.cheap]
grant = "inspect"
model = "small"
thinking = "low"

[roles.pinned]
grant = "inspect"
thinking = "medium"
thinking_levels = ["medium", "high"]
`)
	e, err := Merge(Builtin("/s/wrun"), user, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f            Flags
		thinking, ok string
		err          string
	}{
		{f: Flags{Role: "scout"}, thinking: "low"},
		{f: Flags{Role: "scout", Thinking: "max"}, thinking: "max"},
		{f: Flags{Role: "cheap"}, thinking: "low"},
		{f: Flags{Role: "cheap", Thinking: "high"}, err: `thinking "high" (flag --thinking): small supports only off, low (model small (user config /u/config.toml))`},
		{f: Flags{Role: "pinned", Thinking: "low"}, err: `supports only medium, high (role pinned)`},
		{f: Flags{Role: "scout", Model: "small", Thinking: "medium"}, err: `small supports only off, low`},
		{f: Flags{Thinking: "extreme"}, err: `thinking "extreme" (flag --thinking): want one of off, low, medium, high, max`},
		{f: Flags{Role: "nobody"}, err: `--role "nobody": no such role; roles are cheap, conductor, pinned, planner, scout, verifier, worker`},
	} {
		r, err := e.Resolve(tc.f)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%+v: error %v, want %s", tc.f, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%+v: %v", tc.f, err)
		case tc.err == "" && r.Thinking.V != tc.thinking:
			t.Errorf("%+v: thinking %s, want %s", tc.f, r.Thinking.V, tc.thinking)
		}
	}
}

func TestPathsFallbacks(t *testing.T) {
	env := map[string]string{}
	p := PathsFrom(func(k string) string { return env[k] }, "/home/u")
	if p.UserConfig != "/home/u/.config/wrun/config.toml" || p.Receipts != "/home/u/.local/state/wrun/receipts.jsonl" || p.Roster != "/home/u/.local/state/wrun/roster" {
		t.Errorf("fallbacks: %+v", p)
	}
	env["XDG_CONFIG_HOME"], env["XDG_STATE_HOME"], env["XDG_RUNTIME_DIR"] = "/c", "relative", t.TempDir()
	p = PathsFrom(func(k string) string { return env[k] }, "/home/u")
	if p.UserConfig != "/c/wrun/config.toml" || p.State != "/home/u/.local/state/wrun" || p.Roster != env["XDG_RUNTIME_DIR"]+"/wrun" {
		t.Errorf("set: %+v", p)
	}
}

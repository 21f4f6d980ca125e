package toolsfile

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/wrun-dev/wrun/tools"
)

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	cfg, ws := t.TempDir(), t.TempDir()
	env := []string{"XDG_CONFIG_HOME=" + cfg, "HOME=/nonexistent"}
	// Neither file: no labels, nothing read.
	l, read, err := Load(env, ws)
	if err != nil || len(read) != 0 || len(l.Tools)+len(l.Servers) != 0 {
		t.Fatalf("no files: %+v %v %v", l, read, err)
	}
	write(t, filepath.Join(cfg, "wrun", "tools.toml"), `
[servers]
github = "web"
docs = "read"

[tools]
TodoWrite = "read"
"mcp__github__create_pull_request" = "edit"
`)
	write(t, filepath.Join(ws, ".wrun", "tools.toml"), `
[servers]
github = ["spawn", "spawn"]
[tools]
Bash = "edit"
unknown_tool = "read"
`)
	l, read, err = Load(env, ws)
	if err != nil {
		t.Fatal(err)
	}
	if len(read) != 2 {
		t.Fatalf("read %v", read)
	}
	if l.Servers["github"] != tools.Web || l.Tools["mcp__github__create_pull_request"] != tools.Edit || l.Tools["TodoWrite"] != tools.Read {
		t.Errorf("user labels %+v", l)
	}
	if !slices.Equal(l.NarrowServers["github"], []tools.Family{tools.Spawn}) || !slices.Equal(l.NarrowTools["Bash"], []tools.Family{tools.Edit}) {
		t.Errorf("repository labels %+v", l)
	}
	// The repository only narrows: Bash now needs edit too, and a tool
	// only the repository names stays unclassified.
	g := tools.Grant{Families: []tools.Family{tools.Read, tools.Shell}}
	if d := tools.Decide(g, l, tools.Call{Name: "Bash"}); d.Allowed || d.Denial != tools.NotGranted {
		t.Errorf("Bash after the repository's narrowing: %+v", d)
	}
	if d := tools.Decide(tools.Grant{Families: tools.Families()}, l, tools.Call{Name: "unknown_tool"}); d.Denial != tools.Unknown {
		t.Errorf("a tool only the repository labels: %+v", d)
	}
	if d := tools.Decide(tools.Grant{Families: []tools.Family{tools.MCP, tools.Web}}, l, tools.Call{Name: "mcp__github__x"}); d.Allowed {
		t.Errorf("the repository's spawn requirement on github was not applied: %+v", d)
	}
}

func TestUserPath(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"XDG_CONFIG_HOME=/x", "HOME=/h"}, "/x/wrun/tools.toml"},
		{[]string{"XDG_CONFIG_HOME=rel", "HOME=/h"}, "/h/.config/wrun/tools.toml"},
		{[]string{"HOME=/h"}, "/h/.config/wrun/tools.toml"},
		{nil, ""},
	} {
		if got := UserPath(tc.env); got != tc.want {
			t.Errorf("UserPath(%q) = %q, want %q", tc.env, got, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ user, repo, err string }{
		{user: "[servers]\nx = \"files\"\n", err: `servers."x": "files" is not a tool family`},
		{user: "[servers]\nx = [\"read\"]\n", err: `want one family as a string`},
		{user: "grant = \"full\"\n", err: `unknown key "grant"`},
		{user: "[servers]\n\"a__b\" = \"read\"\n", err: `contains "__"`},
		{user: "[tools\n", err: "tools.toml"},
		{repo: "[tools]\nx = 3\n", err: "want a family or a list of families"},
		{repo: "[tools]\nx = [\"read\", \"nope\"]\n", err: `"nope" is not a tool family`},
		{repo: "[other]\nx = 1\n", err: `unknown key "other"`},
	}
	for _, tc := range tests {
		cfg, ws := t.TempDir(), t.TempDir()
		if tc.user != "" {
			write(t, filepath.Join(cfg, "wrun", "tools.toml"), tc.user)
		}
		if tc.repo != "" {
			write(t, filepath.Join(ws, ".wrun", "tools.toml"), tc.repo)
		}
		_, _, err := Load([]string{"XDG_CONFIG_HOME=" + cfg}, ws)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("user %q repo %q: %v, want %q", tc.user, tc.repo, err, tc.err)
		}
	}
}

// TestBuiltinLabelHasNoEffect: a user label on a name wrun's table knows
// (one written before the table knew it) loads, changes nothing, and is
// named by Shadowed.
func TestBuiltinLabelHasNoEffect(t *testing.T) {
	cfg, ws := t.TempDir(), t.TempDir()
	write(t, filepath.Join(cfg, "wrun", "tools.toml"), "[tools]\nBash = \"read\"\nTodoWrite = \"read\"\n")
	l, _, err := Load([]string{"XDG_CONFIG_HOME=" + cfg}, ws)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Shadowed(); len(got) != 2 || !strings.Contains(got[0], "Bash is built in as shell") {
		t.Errorf("Shadowed = %q", got)
	}
	if d := tools.Decide(tools.Grant{Families: []tools.Family{tools.Read}}, l, tools.Call{Name: "Bash"}); d.Allowed {
		t.Error("a label made Bash a read tool")
	}
}

// TestRepoFileNotFollowed: a repository's file that is a symbolic link,
// a FIFO or too large is refused, not followed or waited on.
func TestRepoFileNotFollowed(t *testing.T) {
	ws := t.TempDir()
	target := filepath.Join(t.TempDir(), "t.toml")
	write(t, target, "[tools]\nBash = \"edit\"\n")
	if err := os.MkdirAll(filepath.Join(ws, ".wrun"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(ws, RepoFile)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(nil, ws); err == nil {
		t.Error("a symbolic link was followed")
	}
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(nil, ws); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO: %v", err)
	}
	os.Remove(p)
	write(t, p, "# "+strings.Repeat("x", maxSize)+"\n")
	if _, _, err := Load(nil, ws); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a large file: %v", err)
	}
}

package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/grant"
)

// readable reports whether the child may read the file at path under p,
// as the kernel would decide it from the carved rules (Landlock: the union
// of the rules on the path and its ancestors).
func readable(p *Policy, path string) bool {
	rules, _ := Carve(p.Rules, p.Hidden, OSLister)
	for _, r := range rules {
		if Within(path, r.Path) && r.Access&ReadFile != 0 {
			return true
		}
	}
	return false
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// homeSecrets are credential files found readable under a denylist: none is
// named by the policy, and none may be readable.
var homeSecrets = []string{
	".pgpass", ".my.cnf", ".vault-token",
	".config/containers/auth.json", ".docker/config.json",
	".config/doctl/config.yaml", ".terraform.d/credentials.tfrc.json",
	".oci/config", ".config/hcloud/cli.toml",
	".cache/huggingface/token", ".huggingface/token",
	".bash_history", ".zsh_history", ".python_history", ".psql_history", ".mysql_history",
	".ssh/id_ed25519", ".aws/credentials", ".netrc", ".npmrc", ".bashrc", ".profile",
	".cargo/credentials.toml", ".config/git/credentials", ".git-credentials",
	".local/share/keyrings/login.keyring", ".config/pip/pip.conf",
}

// toolchainReads are what builds read in the home directory.
var toolchainReads = []string{
	".cargo/config.toml", ".cargo/bin/cargo", ".cargo/registry/index/x",
	".rustup/toolchains/stable/bin/rustc", "go/pkg/mod/cache/x", "go/bin/gopls",
	".cache/go-build/00/x", ".config/go/env", ".npm/_cacache/index",
	".gitconfig", ".config/git/config", ".config/git/ignore",
	".local/lib/python3.12/site-packages/x.py", ".nvm/versions/node/v20/bin/node",
}

func homeHost(t *testing.T) (Host, string) {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	for _, f := range append(slices.Clone(homeSecrets), toolchainReads...) {
		write(t, filepath.Join(home, f), "content of "+f+"\n", 0o644)
	}
	ws := filepath.Join(home, "src", "proj")
	write(t, filepath.Join(ws, "main.go"), "package main\n", 0o644)
	write(t, filepath.Join(home, "src", "other", "secret.txt"), "x\n", 0o644)
	return Host{Workdir: ws, Home: home, TempDir: filepath.Join(root, "tmp"),
		Env: []string{"HOME=" + home, "PATH=/usr/bin:" + filepath.Join(home, ".cargo/bin")}}, home
}

func TestHomeIsHiddenButForToolchains(t *testing.T) {
	h, home := homeHost(t)
	for _, spec := range []string{"inspect", "verify", "write", "full"} {
		g, err := grant.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Compute(g, h, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range homeSecrets {
			// shell=full makes the whole XDG cache writable, so readable.
			if spec == "full" && strings.HasPrefix(f, ".cache/") {
				continue
			}
			if readable(p, filepath.Join(home, f)) {
				t.Errorf("%s: ~/%s is readable", spec, f)
			}
		}
		for _, f := range toolchainReads {
			if !readable(p, filepath.Join(home, f)) {
				t.Errorf("%s: ~/%s is not readable", spec, f)
			}
		}
		if !readable(p, filepath.Join(h.Workdir, "main.go")) {
			t.Errorf("%s: the workspace inside the home is not readable", spec)
		}
		if readable(p, filepath.Join(home, "src", "other", "secret.txt")) {
			t.Errorf("%s: a sibling of the workspace inside the home is readable", spec)
		}
	}
}

func TestHomeAllowReadOpensExactlyOne(t *testing.T) {
	h, home := homeHost(t)
	g, _ := grant.Parse("inspect")
	pg := filepath.Join(home, ".pgpass")
	p, err := Compute(g, h, Options{AllowRead: []string{pg}})
	if err != nil {
		t.Fatal(err)
	}
	if !readable(p, pg) {
		t.Errorf("--allow-read %s: not readable", pg)
	}
	if readable(p, filepath.Join(home, ".my.cnf")) {
		t.Errorf("--allow-read %s opened a sibling", pg)
	}
	// The whole home, named exactly, opens all of it but the tokens
	// hidden inside readable places.
	p, err = Compute(g, h, Options{AllowRead: []string{home}})
	if err != nil {
		t.Fatal(err)
	}
	if !readable(p, pg) || readable(p, filepath.Join(home, ".cargo/credentials.toml")) {
		t.Errorf("--allow-read ~: .pgpass readable %v, cargo's token readable %v", readable(p, pg), readable(p, filepath.Join(home, ".cargo/credentials.toml")))
	}
}

func TestHomeLocatedAsToolsLocateIt(t *testing.T) {
	h, home := homeHost(t)
	for _, f := range []string{".local/share/cargo/bin/cargo", ".local/share/rustup/x", ".local/bin/tool", ".local/share/secret",
		"bin/tool", "sdk/go1.22/bin/go", "sdk/go1.22/src/x.go", ".local/state/x"} {
		write(t, filepath.Join(home, f), "x\n", 0o644)
	}
	h.Env = []string{"HOME=" + home, "CARGO_HOME=" + filepath.Join(home, ".local/share/cargo"),
		"RUSTUP_HOME=" + filepath.Join(home, ".local/share/rustup"),
		"PATH=" + strings.Join([]string{filepath.Join(home, ".local/bin"), filepath.Join(home, "bin"), filepath.Join(home, "sdk/go1.22/bin"), home}, ":")}
	g, _ := grant.Parse("inspect")
	p, err := Compute(g, h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]bool{
		".local/share/cargo/bin/cargo": true, ".local/share/rustup/x": true,
		".local/bin/tool": true, "bin/tool": true, "sdk/go1.22/bin/go": true, "sdk/go1.22/src/x.go": true,
		".local/share/secret": false, ".local/state/x": false, ".pgpass": false,
		// Not CARGO_HOME's, but cargo reads it as the configuration of a
		// directory above the workspace (and stops at one it cannot read).
		".cargo/config.toml": true, ".cargo/credentials.toml": false,
	} {
		if got := readable(p, filepath.Join(home, f)); got != want {
			t.Errorf("~/%s: readable %v, want %v", f, got, want)
		}
	}
}

func TestHomeThatIsTheWorkspace(t *testing.T) {
	h, home := homeHost(t)
	h.Workdir = home
	g, _ := grant.Parse("inspect")
	p, err := Compute(g, h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Its files are the workspace; its dot-entries stay hidden but for
	// the toolchains' places.
	for _, f := range homeSecrets {
		if readable(p, filepath.Join(home, f)) {
			t.Errorf("home as workspace: ~/%s is readable", f)
		}
	}
	for _, f := range append([]string{"src/proj/main.go", "src/other/secret.txt"}, toolchainReads...) {
		if !readable(p, filepath.Join(home, f)) {
			t.Errorf("home as workspace: ~/%s is not readable", f)
		}
	}
}

func TestHomeLinkTargetsAreHidden(t *testing.T) {
	h, home := homeHost(t)
	elsewhere := filepath.Join(filepath.Dir(home), "vault")
	write(t, filepath.Join(elsewhere, "id_rsa"), "key\n", 0o644)
	if err := os.Symlink(elsewhere, filepath.Join(home, ".secrets")); err != nil {
		t.Fatal(err)
	}
	g, _ := grant.Parse("inspect")
	p, err := Compute(g, h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if readable(p, filepath.Join(elsewhere, "id_rsa")) {
		t.Errorf("the target of ~/.secrets is readable")
	}
}

func TestRuntimeDirHidden(t *testing.T) {
	h, _ := homeHost(t)
	run := t.TempDir()
	write(t, filepath.Join(run, "containers", "auth.json"), "{}\n", 0o600)
	h.Env = append(h.Env, "XDG_RUNTIME_DIR="+run)
	for spec, want := range map[string]bool{"inspect": false, "inspect,desktop=on": true} {
		g, _ := grant.Parse(spec)
		p, err := Compute(g, h, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := readable(p, filepath.Join(run, "containers", "auth.json")); got != want {
			t.Errorf("%s: $XDG_RUNTIME_DIR/containers/auth.json readable %v, want %v", spec, got, want)
		}
	}
}

func TestPrivateFilesByMode(t *testing.T) {
	root := t.TempDir()
	uid, gid := os.Geteuid(), os.Getegid()
	files := map[string]os.FileMode{
		"etc/shadow":                        0o640,
		"etc/ssh/host_key":                  0o600,
		"etc/passwd":                        0o644,
		"etc/empty.lock":                    0o600, // empty: nothing to read
		"etc/ssl/private/k.pem":             0o644, // its directory is private
		"etc/deep/a/b/c/d/e/f/g/h/i/secret": 0o600, // no depth bounds the search
	}
	for i := range 300 { // nor a number of entries
		files[fmt.Sprintf("etc/many/%03d.conf", i)] = 0o644
	}
	files["etc/many/zz-token"] = 0o600
	for f, mode := range files {
		content := "secret\n"
		if strings.HasSuffix(f, ".lock") {
			content = ""
		}
		write(t, filepath.Join(root, f), content, mode)
	}
	if err := os.Chmod(filepath.Join(root, "etc/ssl/private"), 0o700); err != nil {
		t.Fatal(err)
	}
	roots := []ScanRoot{{Path: filepath.Join(root, "etc")}}
	hidden := func(id Identity) []string {
		holes, _ := privateHoles(roots, id)
		var out []string
		for _, h := range holes {
			rel, _ := filepath.Rel(root, h.Path)
			out = append(out, rel)
		}
		return out // sorted by privateHoles
	}
	owner := []string{"etc/deep/a/b/c/d/e/f/g/h/i/secret", "etc/many/zz-token", "etc/shadow", "etc/ssh/host_key", "etc/ssl/private"}
	tests := []struct {
		name string
		id   Identity
		want []string
	}{
		{"the owner", Identity{Uid: uid}, owner},
		// Group: only files whose group bits grant read (0640), and the
		// directory (0700 gives the group nothing).
		{"the group", Identity{Uid: uid + 1, Gids: []int{gid}}, []string{"etc/shadow"}},
		{"another user", Identity{Uid: uid + 1, Gids: []int{gid + 1}}, nil},
	}
	for _, tc := range tests {
		for range 3 { // the same whatever the workers' timing
			if got := hidden(tc.id); !slices.Equal(got, tc.want) {
				t.Errorf("%s: hidden %q, want %q", tc.name, got, tc.want)
			}
		}
	}
}

func TestPrivateFilesInPolicy(t *testing.T) {
	h, _ := homeHost(t)
	sys := t.TempDir()
	write(t, filepath.Join(sys, "shadow"), "root:x\n", 0o600)
	write(t, filepath.Join(sys, "passwd"), "root:x\n", 0o644)
	h.Identity = Identity{Uid: os.Geteuid()}
	h.Scan = []ScanRoot{{Path: sys}}
	h.Roots = []ReadRoot{{Path: sys, Why: "a system directory"}}
	g, _ := grant.Parse("inspect")
	p, err := Compute(g, h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if readable(p, filepath.Join(sys, "shadow")) || !readable(p, filepath.Join(sys, "passwd")) {
		t.Errorf("shadow readable %v, passwd readable %v", readable(p, filepath.Join(sys, "shadow")), readable(p, filepath.Join(sys, "passwd")))
	}
	p, err = Compute(g, h, Options{AllowRead: []string{filepath.Join(sys, "shadow")}})
	if err != nil {
		t.Fatal(err)
	}
	if !readable(p, filepath.Join(sys, "shadow")) {
		t.Errorf("--allow-read does not open a private file")
	}
}

// TestPrivateSearchAhead: a search started before Compute (Host.Search)
// hides what an inline search hides, and only for the roots and identity
// it searched: given another identity or other roots, Compute searches
// again rather than take it.
func TestPrivateSearchAhead(t *testing.T) {
	h, _ := homeHost(t)
	sys, other := t.TempDir(), t.TempDir()
	write(t, filepath.Join(sys, "shadow"), "root:x\n", 0o600)
	write(t, filepath.Join(other, "key"), "k\n", 0o600)
	uid := os.Geteuid()
	h.Roots = []ReadRoot{{Path: sys, Why: "a system directory"}, {Path: other, Why: "another"}}
	g, _ := grant.Parse("inspect")
	tests := []struct {
		name           string
		search         *PrivateSearch
		id             Identity
		roots          []ScanRoot
		shadow, keyRdb bool // readable
	}{
		{"inline", nil, Identity{Uid: uid}, []ScanRoot{{Path: sys}}, false, true},
		{"ahead", StartPrivateSearch([]ScanRoot{{Path: sys}}, Identity{Uid: uid}), Identity{Uid: uid}, []ScanRoot{{Path: sys}}, false, true},
		// Started for another user: it hid nothing; Compute searches.
		{"ahead, another identity", StartPrivateSearch([]ScanRoot{{Path: sys}}, Identity{Uid: uid + 1, Gids: []int{-1}}), Identity{Uid: uid}, []ScanRoot{{Path: sys}}, false, true},
		// Started on other roots: its holes are not this policy's.
		{"ahead, other roots", StartPrivateSearch([]ScanRoot{{Path: other}}, Identity{Uid: uid}), Identity{Uid: uid}, []ScanRoot{{Path: sys}}, false, true},
		{"ahead, no roots", StartPrivateSearch(nil, Identity{Uid: uid}), Identity{Uid: uid}, nil, true, true},
	}
	for _, tc := range tests {
		h.Identity, h.Scan, h.Search = tc.id, tc.roots, tc.search
		p, err := Compute(g, h, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := readable(p, filepath.Join(sys, "shadow")); got != tc.shadow {
			t.Errorf("%s: shadow readable %v, want %v", tc.name, got, tc.shadow)
		}
		if got := readable(p, filepath.Join(other, "key")); got != tc.keyRdb {
			t.Errorf("%s: other/key readable %v, want %v", tc.name, got, tc.keyRdb)
		}
	}
}

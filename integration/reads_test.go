package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Files holding secrets that no list named: under the read policy the
// home is hidden but for what toolchains need, so none is readable.
var homeSecretFiles = []string{
	".pgpass", ".my.cnf", ".vault-token",
	".config/containers/auth.json", ".docker/config.json",
	".config/doctl/config.yaml", ".terraform.d/credentials.tfrc.json",
	".oci/config", ".config/hcloud/cli.toml",
	".cache/huggingface/token", ".huggingface/token",
	".bash_history", ".zsh_history", ".python_history", ".psql_history", ".mysql_history",
	".ssh/id_ed25519", ".npmrc", ".cargo/credentials.toml",
}

// catAll is a shell command printing every file in files (errors aside).
func catAll(files []string) string {
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "cat '%s' 2>/dev/null; ", f)
	}
	return b.String() + "true"
}

func TestHomeSecretsAreHidden(t *testing.T) {
	requireABI(t, 1)
	home := workspace(t)
	ws := filepath.Join(home, "src", "proj")
	mustWrite(t, filepath.Join(ws, "main.c"), "WORKSPACE-OK\n")
	runtime := workspace(t)
	var secrets []string
	for i, f := range homeSecretFiles {
		p := filepath.Join(home, f)
		mustWrite(t, p, fmt.Sprintf("SECRET-%d\n", i))
		secrets = append(secrets, p)
	}
	auth := filepath.Join(runtime, "containers", "auth.json")
	mustWrite(t, auth, "SECRET-runtime\n")
	secrets = append(secrets, auth)
	// What builds read stays readable.
	tools := map[string]string{".gitconfig": "TOOL-git", ".cargo/config.toml": "TOOL-cargo", ".config/go/env": "TOOL-go"}
	var toolFiles []string
	for f, c := range tools {
		mustWrite(t, filepath.Join(home, f), c+"\n")
		toolFiles = append(toolFiles, filepath.Join(home, f))
	}
	// The toolchains' homes are the fixture home's, whatever the test's
	// own environment says (CI points CARGO_HOME and GOCACHE elsewhere).
	env := runOpts{dir: ws, env: []string{"HOME=" + home, "XDG_RUNTIME_DIR=" + runtime,
		"CARGO_HOME=" + filepath.Join(home, ".cargo"), "XDG_CONFIG_HOME=", "GOENV="}}

	control := run(t, env, "sh", "-c", catAll(secrets))
	for i := range homeSecretFiles {
		if !strings.Contains(control.stdout, fmt.Sprintf("SECRET-%d\n", i)) {
			t.Fatalf("control: %s not readable without wrun:\n%s", homeSecretFiles[i], control)
		}
	}
	for _, g := range []string{"inspect", "verify", "write"} {
		r := wrun(t, env, "--grant", g, "--", "sh", "-c", catAll(secrets)+"; cat main.c; "+catAll(toolFiles))
		if strings.Contains(r.stdout, "SECRET") {
			t.Errorf("%s: secrets printed:\n%s", g, r)
		}
		if !strings.Contains(r.stdout, "WORKSPACE-OK") {
			t.Errorf("%s: the workspace inside the home is not readable:\n%s", g, r)
		}
		for _, c := range tools {
			if !strings.Contains(r.stdout, c) {
				t.Errorf("%s: %s not readable:\n%s", g, c, r)
			}
		}
	}
	if got := probe(t, env, "inspect", "read", filepath.Join(home, ".pgpass")); got == "ok" {
		t.Errorf("probe read ~/.pgpass under inspect: %s", got)
	}

	// --allow-read opens exactly the path it names.
	pg, mycnf := filepath.Join(home, ".pgpass"), filepath.Join(home, ".my.cnf")
	r := wrun(t, env, "--allow-read", pg, "--", "sh", "-c", catAll([]string{pg, mycnf}))
	if !strings.Contains(r.stdout, "SECRET-0") || strings.Contains(r.stdout, "SECRET-1") {
		t.Errorf("--allow-read %s: want exactly it readable:\n%s", pg, r)
	}
}

// privateTempFile makes a file only its owner may read, directly in /tmp
// (where the search for private files looks), owned by uid.
func privateTempFile(t *testing.T, content string, uid int) string {
	t.Helper()
	f, err := os.CreateTemp("/tmp", "wrun-itest-private-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(f.Name()) })
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chmod(f.Name(), 0o600); err != nil {
		t.Fatal(err)
	}
	if uid != os.Geteuid() {
		if err := os.Chown(f.Name(), uid, -1); err != nil {
			t.Fatal(err)
		}
	}
	return f.Name()
}

func TestRootOnlyFilesAreHidden(t *testing.T) {
	requireABI(t, 1)
	if os.Geteuid() != 0 {
		t.Skip("needs root: a root child reads root's files")
	}
	ws := workspace(t)
	env := runOpts{dir: ws, env: []string{"HOME=" + workspace(t)}}
	files := []string{privateTempFile(t, "SECRET-tmp\n", 0)}
	markers := []string{"SECRET-tmp"}
	if b, err := os.ReadFile("/etc/shadow"); err == nil && len(b) > 0 {
		files = append(files, "/etc/shadow")
		markers = append(markers, strings.SplitN(string(b), "\n", 2)[0])
	}
	control := run(t, env, "sh", "-c", catAll(files))
	for _, m := range markers {
		if !strings.Contains(control.stdout, m) {
			t.Fatalf("control: root cannot read its own files (%q):\n%s", m, control)
		}
	}
	r := wrun(t, env, "--", "sh", "-c", catAll(files)+"; cat /etc/passwd")
	for i, m := range markers {
		if strings.Contains(r.stdout, m) {
			t.Errorf("%s is readable by the root child:\n%s", files[i], r)
		}
	}
	if !strings.Contains(r.stdout, "root:x:0:0") {
		t.Errorf("/etc/passwd is not readable:\n%s", r)
	}
	// --allow-read opens one.
	r = wrun(t, env, "--allow-read", files[0], "--", "cat", files[0])
	if !strings.Contains(r.stdout, "SECRET-tmp") {
		t.Errorf("--allow-read %s: %s", files[0], r)
	}
}

func TestUsersPrivateTempFilesAreHidden(t *testing.T) {
	requireABI(t, 1)
	if os.Geteuid() != 0 {
		t.Skip("needs root to run as nobody")
	}
	f := privateTempFile(t, "SECRET-nobody\n", int(nobody.Uid))
	env := runOpts{dir: bins.dir, cred: nobody, env: []string{"HOME=/nonexistent"}}
	if r := run(t, env, "cat", f); !strings.Contains(r.stdout, "SECRET-nobody") {
		t.Fatalf("control: nobody cannot read its own file:\n%s", r)
	}
	for _, m := range [][]string{nil, {"WRUN_SIMULATE=no-user-notif"}} {
		env.env = append([]string{"HOME=/nonexistent"}, m...)
		// Without the mediation the matrix refuses the grant: degraded,
		// Landlock still hides the file.
		env.bestEffort = m != nil
		if r := wrun(t, env, "--", "cat", f); strings.Contains(r.stdout, "SECRET-nobody") {
			t.Errorf("%v: nobody's private file in /tmp is readable:\n%s", m, r)
		}
	}
}

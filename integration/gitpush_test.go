package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/escalate"
)

// TestVerifyRefusesGitPush: under --grant verify (network on, for git
// fetch) a push to a git daemon on 127.0.0.1 is refused at the git level,
// however it is invoked, with a typed denial whose first alternative is
// the grant that allows it; the remote's refs do not change. Control: the
// same push without wrun, and under that alternative's grant, publishes.
func TestVerifyRefusesGitPush(t *testing.T) {
	requireABI(t, 4)
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
	// The clone's remote has a pushurl of its own: pushInsteadOf does not
	// rewrite that one, the git shim refuses it.
	gitCmd(t, clone, "remote", "add", "withpushurl", url)
	gitCmd(t, clone, "config", "remote.withpushurl.pushurl", url)
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs git")
	}
	refs := func() string { return gitCmd(t, base, "--git-dir="+remote, "for-each-ref") }
	before := refs()

	cases := []struct{ name, script string }{
		{"git push origin", "git push origin HEAD:refs/heads/x"},
		{"git push URL", "git push " + url + " HEAD:refs/heads/x"},
		{"full path", realGit + " push origin HEAD:refs/heads/x"},
		{"alias", "git -c alias.publish=push publish origin HEAD:refs/heads/x"},
		{"remote with pushurl", "git push withpushurl HEAD:refs/heads/x"},
		{"send-pack", "git send-pack " + url + " HEAD:refs/heads/x"},
		{"global options", "git -C . -c color.ui=never push origin HEAD:refs/heads/x"},
		// Other transports: refused before any connection (nothing
		// listens there; the refusal, not a connection error, is asserted).
		{"http", "git push http://127.0.0.1:9/remote.git HEAD:refs/heads/x"},
		{"ssh", "git push ssh://127.0.0.1:9/remote.git HEAD:refs/heads/x"},
		{"file", "git push file://" + remote + " HEAD:refs/heads/x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, req, r := runJSON(t, runOpts{dir: clone}, "--grant", "verify", "--", "sh", "-c", tc.script)
			if s.ExitCode == 0 {
				t.Fatalf("the push was not refused:\n%s", r)
			}
			if got := refs(); got != before {
				t.Fatalf("the remote's refs changed:\n%s\nwas:\n%s", got, before)
			}
			if !strings.Contains(r.stderr, "wrun-verify-refuses-push") {
				t.Errorf("stderr does not say why:\n%s", r.stderr)
			}
			if req == nil {
				t.Fatalf("no request:\n%s", r)
			}
			var push *escalate.DeniedAct
			for i, d := range req.Denials {
				if d.WithheldBy.Rule == "git-push" {
					push = &req.Denials[i]
				}
			}
			if push == nil || push.Op != escalate.OpGitPush {
				t.Fatalf("no git-push denial in %+v", req.Denials)
			}
			first := push.Alternatives[0]
			if first.Kind != escalate.KindGrant || strings.Join(first.Args, " ") != "--grant write,network=on" {
				t.Errorf("first alternative %+v, want the grant that allows a push", first)
			}
		})
	}

	// Controls: a push bare, and one under the alternative's grant, both
	// publish.
	gitCmd(t, clone, "push", "-q", "origin", "HEAD:refs/heads/bare")
	if !strings.Contains(refs(), "refs/heads/bare") {
		t.Fatalf("control push without wrun did not publish:\n%s", refs())
	}
	if r := wrun(t, runOpts{dir: clone}, "--grant", "write,network=on", "--", "git", "push", "-q", "origin", "HEAD:refs/heads/granted"); r.code != 0 || !strings.Contains(refs(), "refs/heads/granted") {
		t.Fatalf("push under --grant write,network=on:\n%s\nrefs:\n%s", r, refs())
	}
	// A fetch under verify still works: only pushes are rewritten.
	if r := wrun(t, runOpts{dir: clone}, "--grant", "verify", "--", "git", "fetch", "-q", "origin"); r.code != 0 {
		t.Fatalf("fetch under verify:\n%s", r)
	}
}

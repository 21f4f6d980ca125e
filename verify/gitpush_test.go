package verify

import (
	"strings"
	"testing"
)

func TestShimRefusesPush(t *testing.T) {
	on := []string{EnvGitNoPush + "=1"}
	tests := []struct {
		name    string
		args    []string
		env     []string
		dest    string
		refused bool
	}{
		{"push", []string{"push", "origin", "main"}, on, "origin", true},
		{"push with options first", []string{"push", "-q", "--force", "url", "x"}, on, "url", true},
		{"push, default remote", []string{"push"}, on, "", true},
		{"send-pack", []string{"send-pack", "git://h/r", "HEAD"}, on, "git://h/r", true},
		{"global options", []string{"-C", "/x", "-c", "a.b=c", "--git-dir=/y", "push", "o"}, on, "o", true},
		{"-c naming push is a value", []string{"-c", "push", "status"}, on, "", false},
		{"fetch", []string{"fetch", "origin"}, on, "", false},
		{"push as an argument", []string{"log", "push"}, on, "", false},
		{"not under verify", []string{"push", "origin"}, nil, "", false},
		{"switched off", []string{"push", "origin"}, []string{EnvGitNoPush + "=0"}, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dest, refused := ShimRefusesPush(tc.args, tc.env)
			if dest != tc.dest || refused != tc.refused {
				t.Errorf("ShimRefusesPush(%q) = %q, %v; want %q, %v", tc.args, dest, refused, tc.dest, tc.refused)
			}
		})
	}
}

// TestPushRefusalConfig: the push guard is in the child's git config under
// verify whether or not the workspace is a repository, and absent when
// the workspace is writable (files=write, which may push).
func TestPushRefusalConfig(t *testing.T) {
	for _, tc := range []struct {
		name     string
		writable bool
		repo     bool
		want     bool
	}{
		{"verify, repository", false, true, true},
		{"verify, no repository", false, false, true},
		{"files=write", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			if tc.repo {
				ws = fakeRepo(t, nil)
			}
			s := Compute(Input{Workdir: ws, TempDir: "/tmp/wrun-1", WorkspaceWritable: tc.writable})
			got := false
			for _, e := range s.Env {
				if strings.HasPrefix(e.Name, "GIT_CONFIG_KEY_") && e.Value == "url."+PushRefusedHelper+"::.pushInsteadOf" {
					got = true
				}
			}
			if got != tc.want {
				t.Errorf("push guard in the config: %v, want %v (%+v)", got, tc.want, s.Env)
			}
		})
	}
}

//go:build linux

package integration

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestEscapeAllowUnixPlantedLink: --allow-unix names a socket path the
// child can write (its workspace, under the write grant). The child
// replaces that path with a symbolic link to another socket outside the
// sandbox, which --allow-unix does not name, and connects to it, through
// the link and by its own path. wrun must compare the socket it connects
// to with the allowed path as it was named, not with wherever a
// link the child planted there leads. Controls: without wrun the act
// reaches the other socket; under wrun the allowed socket itself (a real
// one, bound outside) stays reachable.
func TestEscapeAllowUnixPlantedLink(t *testing.T) {
	requireABI(t, 1)
	for _, m := range []escapeMode{modeRoot, modeUser} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			if !mediated(m) {
				t.Skip("UNIX sockets are not mediated here (no seccomp user notification or pidfd_getfd, or Landlock ABI 9)")
			}
			escapeAttempt(t)
			ws := modeDir(t, m)
			other := modeDir(t, m)
			secret := listenOutside(t, other, "secret.sock", "unix")
			allowed := filepath.Join(ws, "agent.sock")
			o := modeOpts(m, ws)
			if got := bare(t, o, "unix", secret.path); got != "ok" || !secret.reached() {
				t.Fatalf("control: without wrun, unix %s: %s (reached: false)", secret.path, got)
			}
			for _, via := range []string{allowed, secret.path} {
				script := "ln -sf '" + secret.path + "' '" + allowed + "' && exec '" + bins.probe + "' unix '" + via + "'"
				r := wrun(t, o, "--grant", "write", "--allow-unix", allowed, "--", "/bin/sh", "-c", script)
				if secret.reached() || strings.TrimSpace(r.stdout) == "ok" {
					t.Errorf("connecting to %s after planting %s -> %s reached the socket --allow-unix does not name\n%s", via, allowed, secret.path, r)
				}
			}
			// Control under wrun: the socket --allow-unix names, bound
			// outside, is reached.
			real := listenOutside(t, ws, "real.sock", "unix")
			r := wrun(t, o, "--grant", "write", "--allow-unix", real.path, "--", bins.probe, "unix", real.path)
			if strings.TrimSpace(r.stdout) != "ok" || !real.reached() {
				t.Errorf("control: --allow-unix %s did not reach it\n%s", real.path, r)
			}
		})
	}
}

//go:build linux

package integration

import (
	"path/filepath"
	"strings"
	"testing"
)

// Red team 7: what a directory approved while the command runs gives the
// command beyond what a rerun with its --allow-write would.

// reposBeneath are the attacks: a write outside (held, approved), then a
// repository beneath the approved directory with a hook in it, which a
// later unsandboxed git there would run: made there, or made in the
// private temp dir and moved there (the run's own check searches
// neither).
var reposBeneath = map[string]string{
	"made": `echo data > "$1/f.txt" || echo refused; git init -q "$1/sub" 2>/dev/null; ` +
		`printf '#!/bin/sh\necho pwned\n' > "$1/sub/.git/hooks/pre-commit" && echo hook; echo done`,
	"moved": `echo data > "$1/f.txt" || echo refused; git init -q "$TMPDIR/r" 2>/dev/null; ` +
		`printf '#!/bin/sh\necho pwned\n' > "$TMPDIR/r/.git/hooks/pre-commit" && mv "$TMPDIR/r" "$1/sub" && echo hook; echo done`,
}

func TestRedteam7RepositoryMadeBeneathALiveWidening(t *testing.T) {
	requireSupervisor(t)
	for name, script := range reposBeneath {
		t.Run(name, func(t *testing.T) { repoBeneathLive(t, script) })
	}
}

func repoBeneathLive(t *testing.T, script string) {
	ws := workspace(t)
	hookOf := func(out string) string { return filepath.Join(out, "sub", ".git", "hooks", "pre-commit") }

	// Control: without wrun the command writes the hook.
	bare := workspace(t)
	if r := run(t, runOpts{dir: ws, env: []string{"TMPDIR=" + workspace(t)}}, "sh", "-c", script, "sh", bare); !exists(hookOf(bare)) {
		t.Fatalf("control: the command should write the hook without wrun:\n%s", r)
	}
	// Control: a rerun with --allow-write of that directory lets the
	// command write it, and its check after the run moves the new
	// repository's git dir aside.
	rerun := workspace(t)
	if r := wrun(t, runOpts{dir: ws}, "--grant", "write", "--allow-write", rerun, "--", "sh", "-c", script, "sh", rerun); r.code != 0 || !strings.Contains(r.stdout, "hook") || exists(hookOf(rerun)) {
		t.Fatalf("control: a rerun with --allow-write should write the hook, then move it aside:\n%s", r)
	}

	// The attack: the same directory approved live.
	out := workspace(t)
	r := runLive(t, ws, approveKind("allow-write"), "--grant", "write", "--", "sh", "-c", script, "sh", out)
	if !exists(filepath.Join(out, "f.txt")) || !strings.Contains(r.stdout, "hook") {
		t.Fatalf("the approval was not applied (the attack needs it):\n%s", r.result)
	}
	if exists(hookOf(out)) {
		t.Fatalf("a hook in a repository beneath a directory approved live survives the run (a rerun's check moves it aside):\n%s", r.result)
	}
	if !strings.Contains(r.stderr, "moved aside") {
		t.Errorf("want the new repository reported as a rerun's check reports it:\n%s", r.result)
	}
}

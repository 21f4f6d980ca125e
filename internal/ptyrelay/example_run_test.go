//go:build linux

package ptyrelay_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/wrun-dev/wrun/internal/ptyrelay"
)

// inner prints the command's terminal, then its process group and
// session (fields 5 and 6 of /proc/PID/stat). It has no quotes, to
// nest in script's and sh's.
const inner = `tty; read -r _ _ _ _ pgrp sid _ </proc/$$/stat; echo $pgrp $sid`

// With PTYRELAY_EXAMPLE set, the test binary is the example's launcher
// (or, through Relay.Command, its monitor): it prints its own terminal,
// group and session, runs inner with launch, and exits.
func init() {
	if os.Getenv("PTYRELAY_EXAMPLE") == "" {
		return
	}
	ptyrelay.MaybeMonitor()
	outer, _ := os.Readlink("/proc/self/fd/0")
	stat, _ := os.ReadFile("/proc/self/stat")
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	fmt.Printf("launcher %s %s %s\n", outer, f[2], f[3])
	ws, err := launch("/bin/sh", []string{"sh", "-c", inner})
	if err != nil {
		fmt.Println(err)
		os.Exit(125)
	}
	fmt.Printf("exit status %d\n", ws.ExitStatus())
	os.Exit(0)
}

// underScript runs command in a terminal of script(1)'s and returns its
// output lines.
func underScript(t *testing.T, command string, env ...string) []string {
	t.Helper()
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("needs script(1) (util-linux) for a terminal")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "-qec", command, "/dev/null")
	cmd.Env = append(os.Environ(), env...)
	// A standard input that stays open: at its end script types the
	// terminal's EOF character into it, which the command's terminal
	// would echo.
	in, keep, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	defer in.Close()
	cmd.Stdin = in
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("script -qec %q: %v\n%s", command, err, out)
	}
	return strings.Split(strings.ReplaceAll(strings.TrimSpace(string(out)), "\r", ""), "\n")
}

// TestExampleUnderScript runs the package example's launcher in a real
// terminal (script's): the command's terminal is another one, and its
// process group and session are not the launcher's. The control is the
// same command under script without the launcher, where the terminal
// it prints is script's own, the one the launcher prints.
func TestExampleUnderScript(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctl := underScript(t, "sh -c 'readlink /proc/self/fd/0; "+inner+"'")
	if len(ctl) < 2 || ctl[0] != ctl[1] {
		t.Fatalf("control: a bare command's terminal (second line) is script's (first): %q", ctl)
	}
	lines := underScript(t, self, "PTYRELAY_EXAMPLE=1")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "launcher /dev/pts/") || lines[3] != "exit status 0" {
		t.Fatalf("the example's output: %q", lines)
	}
	l := strings.Fields(lines[0]) // launcher TTY PGID SID
	if lines[1] == l[1] || !strings.HasPrefix(lines[1], "/dev/pts/") {
		t.Errorf("the command's terminal %q should be a new one, not the launcher's %s", lines[1], l[1])
	}
	c := strings.Fields(lines[2]) // PGID SID
	if len(c) != 2 || c[0] == l[2] || c[1] == l[3] {
		t.Errorf("the command's group and session %q should not be the launcher's %s %s", lines[2], l[2], l[3])
	}
}

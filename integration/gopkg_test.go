package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wrunrun "github.com/wrun-dev/wrun/run"
)

// Example_goPackage is a Go harness running a command under a grant with
// package run (imported here as wrunrun): its output, its exit status and what it was refused. A
// harness binary calls run.ServeHelpers first in main (the sandbox starts
// the running binary again as git's shim, the Go cache program and an
// interactive run's terminal monitor).
func Example_goPackage() {
	ws, _ := os.MkdirTemp("", "wrun-example-")
	defer os.RemoveAll(ws)
	out, _ := os.CreateTemp("", "wrun-example-out-")
	defer os.Remove(out.Name())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()

	sum, err := wrunrun.Run(wrunrun.Config{
		Spec:    wrunrun.Spec{Grant: "inspect", Workdir: ws},
		Argv:    []string{"sh", "-c", "echo hello from the sandbox; echo x > written-here || exit 3"},
		Stdin:   devnull,
		Stdout:  out,
		Stderr:  devnull,
		Context: ctx,
	})
	if err != nil {
		fmt.Println("wrun failed:", err)
		return
	}
	b, _ := os.ReadFile(out.Name())
	fmt.Print(string(b))
	fmt.Println("exit status:", sum.ExitCode)
	if sum.Request != nil {
		for _, d := range sum.Request.Denials {
			fmt.Println("refused:", d.Op, filepath.Base(d.Path))
		}
	}
	// Output:
	// hello from the sandbox
	// exit status: 3
	// refused: create written-here
}

// TestGoPackageContext: cancelling the Config's context ends a running
// command (SIGTERM; SIGKILL after the grace for one that ignores it), and
// a context cancelled before the start runs nothing. Control: the same
// command with a live context runs to its end.
func TestGoPackageContext(t *testing.T) {
	requireABI(t, 1)
	ws := workspace(t)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	cfg := func(ctx context.Context, script string) wrunrun.Config {
		return wrunrun.Config{Spec: wrunrun.Spec{Grant: "write", Workdir: ws}, Argv: []string{"sh", "-c", script},
			Stdin: devnull, Stdout: devnull, Stderr: devnull, Context: ctx, KillAfter: 300 * time.Millisecond}
	}

	sum, err := wrunrun.Run(cfg(context.Background(), "sleep 0.2; echo done > ran"))
	if err != nil || sum.ExitCode != 0 {
		t.Fatalf("control: %v, exit %d", err, sum.ExitCode)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err != nil {
		t.Fatalf("control: the command did not run to its end: %v", err)
	}

	for _, tc := range []struct {
		name, script string
		signal       int
	}{
		{"ends on SIGTERM", "sleep 30", 15},
		{"ignores SIGTERM", "trap '' TERM; sleep 30 & wait; sleep 30", 9},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		start := time.Now()
		sum, err := wrunrun.Run(cfg(ctx, tc.script))
		took := time.Since(start)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if sum.Signal != tc.signal || took > 10*time.Second {
			t.Errorf("%s: signal %d after %s, want %d within seconds (summary %+v)", tc.name, sum.Signal, took, tc.signal, sum)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = wrunrun.Run(cfg(ctx, "echo x > cancelled"))
	if err == nil || !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("a cancelled context: error %v, want the cancellation", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "cancelled")); err == nil {
		t.Error("a run whose context was cancelled before it started ran the command")
	}
}

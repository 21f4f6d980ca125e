// Command benchfloor is the floor scripts/bench measures wrun against: a Go
// program that does nothing but start its arguments as a child process
// (fork/exec through os/exec, as wrun does), wait for it and exit with its
// status. What wrun costs above this is the price of the sandbox, not of
// being a Go program that starts another.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchfloor COMMAND [ARGS...]")
		os.Exit(125)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		os.Exit(0)
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		os.Exit(ee.ExitCode())
	case errors.As(err, &ee):
		os.Exit(1) // killed by a signal
	default:
		fmt.Fprintln(os.Stderr, "benchfloor:", err)
		os.Exit(127)
	}
}

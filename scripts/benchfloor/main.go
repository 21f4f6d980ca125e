// Command benchfloor is the floor scripts/bench measures wrun against: a Go
// program that does nothing but start its arguments as a child process
// (fork/exec through os/exec, as wrun does), wait for it and exit with its
// status. What wrun costs above this is the price of the sandbox, not of
// being a Go program that starts another.
//
//	benchfloor COMMAND [ARGS...]
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

func main() {
	args := os.Args[1:]
	if len(args) < 1 {
		usage()
	}
	os.Exit(start(args[0], args))
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: benchfloor COMMAND [ARGS...]")
	os.Exit(125)
}

// start runs path with argv (argv[0] included), waits, and returns the
// status to exit with.
func start(path string, argv []string) int {
	cmd := exec.Command(path)
	cmd.Args = argv
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	case errors.As(err, &ee):
		return 1 // killed by a signal
	default:
		fmt.Fprintln(os.Stderr, "benchfloor:", err)
		return 127
	}
}

// Package envlist reads environment lists: the "NAME=value" slices that
// os.Environ returns and exec.Cmd.Env takes. wrun passes the invoking
// environment to the policy and the run as such a list (run.Config.Env),
// so that what a policy depends on is an explicit input. A few switches
// of wrun's own process are still read from its environment where they
// are used (WRUN_SANDBOX, WRUN_LANDLOCK_ABI and WRUN_SIMULATE, the
// keeper's descriptors, WRUN_SESSION, COLUMNS).
package envlist

import "strings"

// Lookup returns the value of the variable name in env and whether it is
// set. The name of an entry is the text before its first "="; entries
// without one are ignored. When name is set more than once the last entry
// wins, as it does for a child started by os/exec.
func Lookup(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

package main

import (
	"fmt"
	"runtime/debug"
)

// version says which wrun this is: the module version (or "(devel)" for a
// build from a checkout), the commit it was built from (marked "+dirty"
// when the tree had changes) and the Go version that built it.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information)"
	}
	commit, dirty := "unknown", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if dirty {
		commit += "+dirty"
	}
	return fmt.Sprintf("%s (commit %s, %s)", bi.Main.Version, commit, bi.GoVersion)
}

package escalate

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/wrun-dev/wrun/internal/quote"
	"github.com/wrun-dev/wrun/policy"
)

// startupDirs are the system-wide locations whose files programs and
// logins load or run without being asked: the dynamic loader's
// configuration and preload list, profile.d and the shells' system rc
// files, cron and systemd units, the system's libraries and programs
// (/usr, with /usr/local), the boot loader; on macOS launchd's
// directories and /private/etc. No approval opens one of them, a
// directory inside one, or a directory above one, whatever the ceiling:
// writing there is code every later process of the machine runs. Only a
// person may pass such a path as --allow-write.
var startupDirs = []string{
	"/etc", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/usr",
	"/var/spool/cron", "/var/spool/anacron", "/var/lib/systemd",
	"/Library", "/System", "/private/etc", "/private/var/at",
}

// StartupDirs returns the system-wide start-up locations no approval
// opens (see Ceiling.Guarded).
func StartupDirs() []string { return slices.Clone(startupDirs) }

// guardRefusal says why an approval may not open path for writing (clean
// and absolute), or "" when the guards allow it: path is "/", is a
// system start-up location, lies inside one or above one, or lies above
// (strictly contains) one of guarded, the run's hidden and protected
// paths. A path that is itself hidden or protected is not refused here:
// the analysis refuses protected paths any widening and lets a hidden one
// open only by naming its id (Sensitive).
func guardRefusal(path string, guarded []string) string {
	if path == "/" {
		return "--allow-write / would open the whole file system"
	}
	for _, d := range startupDirs {
		switch {
		case policy.Within(path, d):
			return fmt.Sprintf("--allow-write %s would open %s, a system-wide start-up location (programs and logins load what is there without being asked)", quote.Word(path), quote.Word(d))
		case policy.Within(d, path):
			return fmt.Sprintf("--allow-write %s would open the system-wide start-up location %s inside it", quote.Word(path), quote.Word(d))
		}
	}
	for _, g := range guarded {
		if g != path && policy.Within(g, path) {
			return fmt.Sprintf("--allow-write %s would open a directory above %s, which is hidden or protected", quote.Word(path), quote.Word(g))
		}
	}
	return ""
}

// Guarded lists the paths of this run no approval may open a directory
// above (Ceiling.Guarded): the policy's hidden and protected paths, and
// those a new writable root would protect (the workspace repository's
// config and hooks, the user's start-up files) where they exist.
func (a *Analyzer) Guarded() []string {
	var out []string
	add := func(p string) {
		if p != "" && filepath.IsAbs(p) && !slices.Contains(out, p) {
			out = append(out, filepath.Clean(p))
		}
	}
	for _, h := range a.p.Hidden {
		add(h.Path)
	}
	for _, pr := range a.p.Protected {
		add(pr.Path)
	}
	for _, h := range a.wouldProtect("/") {
		add(h.Path)
	}
	slices.Sort(out)
	return out
}

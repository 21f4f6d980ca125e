package verify

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// buildDirNames are the build directories a repository may have verify
// mode write inside its workspace: the names CMake's and Meson's own
// documentation build in (`cmake -B build`, `meson setup builddir`) and
// autotools' VPATH build (`_build`, as make distcheck names it).
func buildDirNames() []string { return []string{"build", "builddir", "_build"} }

// maxGitignore bounds how much of the workspace's .gitignore is read.
const maxGitignore = 64 << 10

// buildDirScope: a build directory of the workspace's that its own
// .gitignore ignores (a literal root entry such as /build/, never a glob)
// and that does not exist yet is made by wrun, empty, before the child
// starts, writable to it, and removed after the run with everything the
// run put there. Nothing an unsandboxed build later trusts (a generated
// Makefile or build.ninja is a program, an object file is linked) is left
// in the workspace, and nothing protected can lie in a directory that was
// empty when the child got it. A build directory that exists already is
// the user's (an unsandboxed build made it) and stays read-only, as do
// objects make writes beside the sources: they need files=write.
// Made by wrun rather than by the child, its creates are plain Landlock
// ones: a directory the child made in the workspace root (which holds
// .git) would be one wrun performs every create beneath. The guard makes
// and removes it (Guard.Scratch), so that a wrun killed during the run
// leaves it to the next run to remove.
func buildDirScope(in Input, s *Scope) {
	if in.WorkspaceWritable || in.Workdir == "" {
		return
	}
	for _, name := range ignoredBuildDirs(in.Workdir) {
		dir := filepath.Join(in.Workdir, name)
		if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
			s.Notes = append(s.Notes, "build: "+dir+" exists, so it stays read-only (an unsandboxed build made it and trusts it): remove it for a sandboxed build there, or use files=write")
			continue
		}
		s.Writable = append(s.Writable, Path{Path: dir, Dir: true, Create: true, Scratch: true, Tool: "build", Beneath: in.Workdir,
			Why: "a build directory the repository ignores (.gitignore), made empty by wrun for this run and removed after it with what the run built: nothing a later unsandboxed build trusts is left in the workspace"})
	}
}

// ignoredBuildDirs returns the names of buildDirNames that the .gitignore
// of dir ignores as a directory of dir itself: a line that is the name,
// with or without a leading or trailing slash, and no negation that could
// re-include it (any `!` line naming it or holding a glob). The file is
// read only if it is a regular file (not a link), up to maxGitignore.
func ignoredBuildDirs(dir string) []string {
	f, err := os.OpenFile(filepath.Join(dir, ".gitignore"), os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, maxGitignore))
	if err != nil {
		return nil
	}
	return gitignoredNames(string(b), buildDirNames())
}

// gitignoredNames returns those of names that the .gitignore text ignores
// as entries of its own directory (see ignoredBuildDirs).
func gitignoredNames(text string, names []string) []string {
	ignored := map[string]bool{}
	negated := map[string]bool{}
	negGlob := false
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, " \t\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		neg := strings.HasPrefix(line, "!")
		pat := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(line, "!"), "/"), "/")
		glob := strings.ContainsAny(pat, "*?[\\")
		switch {
		case neg && glob:
			negGlob = true
		case neg:
			negated[pat] = true
		case !glob && !strings.Contains(pat, "/"):
			ignored[pat] = true
		}
	}
	var out []string
	for _, n := range names {
		if ignored[n] && !negated[n] && !negGlob {
			out = append(out, n)
		}
	}
	return out
}

package verify

import (
	"path/filepath"
	"strings"
)

// pythonScope: Python writes bytecode (__pycache__/*.pyc) beside every
// module it imports, and pytest its cache (.pytest_cache) in the rootdir:
// refused in a read-only workspace, harmlessly but noisily (a failing run
// would ask for them). Both go to wrun's private outputs instead, through
// what the tools honour: PYTHONPYCACHEPREFIX (Python 3.8 and later, and
// pytest's assertion rewriting) and pytest's cache_dir ini option, set with
// -o in PYTEST_ADDOPTS (which pytest reads before the command line, after
// the repository's ini file, so the repository cannot point it elsewhere).
//
// In a Python project (pyproject.toml, setup.py, setup.cfg, pytest.ini,
// tox.ini or conftest.py at or above the workspace) both are kept in the
// state directory, so later sandboxed runs find the bytecode compiled and
// `pytest --lf` the last failures. Elsewhere, or without a state
// directory, Python writes no bytecode at all (PYTHONDONTWRITEBYTECODE: it
// still reads what the system's packages have) and pytest's cache lives in
// the private temp dir for the run. Under files=write nothing changes:
// Python writes beside the sources as it does unsandboxed.
func pythonScope(in Input, s *Scope) {
	if in.WorkspaceWritable {
		return
	}
	var cache string
	switch {
	case in.StateDir != "" && pythonProject(in.Workdir):
		addStateRoot(in, s)
		prefix := filepath.Join(in.StateDir, "pycache")
		cache = filepath.Join(in.StateDir, "pytest-cache")
		s.Writable = append(s.Writable,
			Path{Path: prefix, Dir: true, Create: true, Tool: "python", Beneath: stateRoot(in),
				Why: "Python's bytecode, private to sandboxed runs of this workspace under this grant (PYTHONPYCACHEPREFIX): never beside the sources, where an unsandboxed python would import it"},
			Path{Path: cache, Dir: true, Create: true, Tool: "python", Beneath: stateRoot(in),
				Why: "pytest's cache (its last failures, for --lf), private to sandboxed runs of this workspace under this grant"})
		s.Env = append(s.Env, EnvVar{Name: "PYTHONPYCACHEPREFIX", Value: prefix,
			Why: "Python writes and reads bytecode in the sandbox's own tree, not in __pycache__ beside the sources"})
	case in.TempDir != "":
		cache = filepath.Join(in.TempDir, "pytest-cache")
		why := "Python writes no bytecode (no Python project here, so nothing is kept between runs); it reads what is compiled already"
		if pythonProject(in.Workdir) {
			why = "Python writes no bytecode (no state directory to keep it in); it reads what is compiled already"
		}
		s.Env = append(s.Env, EnvVar{Name: "PYTHONDONTWRITEBYTECODE", Value: "1", Why: why})
	default:
		return
	}
	if opts, ok := pytestAddopts(in.Getenv("PYTEST_ADDOPTS"), cache); ok {
		s.Env = append(s.Env, EnvVar{Name: "PYTEST_ADDOPTS", Value: opts,
			Why: "pytest keeps its cache in " + cache + ", not .pytest_cache in the read-only workspace (after the inherited PYTEST_ADDOPTS, if any)"})
	} else {
		s.Notes = append(s.Notes, "python: the path of pytest's cache cannot be passed to pytest ("+cache+"); pytest warns that it cannot write .pytest_cache")
	}
	if in.Workdir != "" {
		s.ReadOnly = append(s.ReadOnly, ReadOnly{Path: filepath.Join(in.Workdir, "__pycache__"), Tool: "python",
			Why: "bytecode beside the sources (every __pycache__ of the workspace): an unsandboxed python imports a .pyc whose recorded source size and time match without reading the source, so planted bytecode would run outside the sandbox; sandboxed runs use their own"})
	}
}

// pythonProject reports whether dir or a directory above it holds what
// makes it a Python project.
func pythonProject(dir string) bool {
	for _, name := range [...]string{"pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini", "conftest.py"} {
		if hasFileAbove(dir, name) {
			return true
		}
	}
	return false
}

// pytestAddopts returns PYTEST_ADDOPTS with the cache dir appended to the
// inherited options: pytest splits the variable as a POSIX shell would
// (shlex) and expands ~ and $VAR in the ini value, so a path with a quote,
// a dollar sign or a leading tilde cannot be passed.
func pytestAddopts(inherited, cacheDir string) (string, bool) {
	if cacheDir == "" || strings.ContainsAny(cacheDir, "'$\n") || strings.HasPrefix(cacheDir, "~") {
		return "", false
	}
	opt := "-o 'cache_dir=" + cacheDir + "'"
	if strings.TrimSpace(inherited) == "" {
		return opt, true
	}
	return inherited + " " + opt, true
}

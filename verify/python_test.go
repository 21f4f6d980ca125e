package verify

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPythonScope: where Python's bytecode and pytest's cache go, by
// workspace and grant.
func TestPythonScope(t *testing.T) {
	top := tree(t, map[string]string{"proj/pyproject.toml": "", "proj/src/m.py": "", "ini/pytest.ini": "", "conf/conftest.py": "", "plain/test_a.py": ""})
	state := "/s/ws/k"
	tests := []struct {
		name, workdir string
		in            Input
		env           map[string]string
		prefix        string // PYTHONPYCACHEPREFIX, "" unset
		noBytecode    bool   // PYTHONDONTWRITEBYTECODE=1
		addopts       string // PYTEST_ADDOPTS, "" unset
		writable      []string
	}{
		{name: "a project keeps both in the state dir", workdir: "proj", in: Input{StateDir: state, TempDir: "/t/r"},
			prefix: state + "/pycache", addopts: "-o 'cache_dir=" + state + "/pytest-cache'", writable: []string{state + "/pycache", state + "/pytest-cache"}},
		{name: "found from a subdirectory", workdir: "proj/src", in: Input{StateDir: state, TempDir: "/t/r"},
			prefix: state + "/pycache", addopts: "-o 'cache_dir=" + state + "/pytest-cache'", writable: []string{state + "/pycache", state + "/pytest-cache"}},
		{name: "pytest.ini", workdir: "ini", in: Input{StateDir: state, TempDir: "/t/r"},
			prefix: state + "/pycache", addopts: "-o 'cache_dir=" + state + "/pytest-cache'", writable: []string{state + "/pycache", state + "/pytest-cache"}},
		{name: "conftest.py", workdir: "conf", in: Input{StateDir: state, TempDir: "/t/r"},
			prefix: state + "/pycache", addopts: "-o 'cache_dir=" + state + "/pytest-cache'", writable: []string{state + "/pycache", state + "/pytest-cache"}},
		{name: "no project: no bytecode, the cache for the run", workdir: "plain", in: Input{StateDir: state, TempDir: "/t/r"},
			noBytecode: true, addopts: "-o 'cache_dir=/t/r/pytest-cache'"},
		{name: "a project without a state dir", workdir: "proj", in: Input{TempDir: "/t/r"},
			noBytecode: true, addopts: "-o 'cache_dir=/t/r/pytest-cache'"},
		{name: "the inherited options come first", workdir: "proj", in: Input{StateDir: state, TempDir: "/t/r"}, env: map[string]string{"PYTEST_ADDOPTS": "-x -q"},
			prefix: state + "/pycache", addopts: "-x -q -o 'cache_dir=" + state + "/pytest-cache'", writable: []string{state + "/pycache", state + "/pytest-cache"}},
		{name: "files=write: as unsandboxed", workdir: "proj", in: Input{StateDir: state, TempDir: "/t/r", WorkspaceWritable: true}},
		{name: "explaining without a temp dir", workdir: "plain", in: Input{StateDir: state}},
		{name: "a cache path pytest would expand", workdir: "proj", in: Input{StateDir: "/s/$x/k", TempDir: "/t/r"},
			prefix: "/s/$x/k/pycache", writable: []string{"/s/$x/k/pycache", "/s/$x/k/pytest-cache"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Workdir, in.Getenv, in.StateRoot = filepath.Join(top, tc.workdir), envFunc(tc.env), "/s"
			var s Scope
			pythonScope(in, &s)
			if v, _ := envValue(s, "PYTHONPYCACHEPREFIX"); v != tc.prefix {
				t.Errorf("PYTHONPYCACHEPREFIX=%q, want %q", v, tc.prefix)
			}
			if v, ok := envValue(s, "PYTHONDONTWRITEBYTECODE"); ok != tc.noBytecode || ok && v != "1" {
				t.Errorf("PYTHONDONTWRITEBYTECODE=%q (set %v), want set %v", v, ok, tc.noBytecode)
			}
			if v, _ := envValue(s, "PYTEST_ADDOPTS"); v != tc.addopts {
				t.Errorf("PYTEST_ADDOPTS=%q, want %q", v, tc.addopts)
			}
			if got := writablePaths(s, "python"); !slices.Equal(got, tc.writable) {
				t.Errorf("writable %q, want %q", got, tc.writable)
			}
			for _, w := range s.Writable {
				if !w.Create || !w.Dir || w.Beneath != "/s" || w.Scratch {
					t.Errorf("%+v: want a directory made by wrun beneath the state root, not scratch", w)
				}
			}
			if len(tc.writable) > 0 && !slices.ContainsFunc(s.Prepare, func(st Step) bool { return st.Kind == StepStateRoot }) {
				t.Errorf("the state root is not made first: %+v", s.Prepare)
			}
			if tc.prefix != "" && tc.addopts == "" && !strings.Contains(strings.Join(s.Notes, "\n"), "cannot be passed") {
				t.Errorf("no note says the cache dir cannot be passed: %q", s.Notes)
			}
		})
	}
}

// TestPytestAddoptsSplitsAsPytestDoes: what wrun appends is one -o
// option to pytest, whose shlex split gives back the path, spaces and
// all (checked by Python's own shlex where python3 exists).
func TestPytestAddoptsSplitsAsPytestDoes(t *testing.T) {
	for _, tc := range []struct {
		inherited, dir string
		ok             bool
	}{
		{"", "/s/k/pytest-cache", true},
		{"-p no:randomly", "/home/a b/k", true},
		{"", "/s/it's", false},
		{"", "/s/$HOME", false},
		{"", "~/x", false},
		{"", "", false},
	} {
		got, ok := pytestAddopts(tc.inherited, tc.dir)
		if ok != tc.ok {
			t.Errorf("%q %q: ok %v, want %v", tc.inherited, tc.dir, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		py, err := exec.LookPath("python3")
		if err != nil {
			continue
		}
		out, err := exec.Command(py, "-c", "import shlex, sys; print('\\n'.join(shlex.split(sys.argv[1])))", got).Output()
		if err != nil {
			t.Fatalf("python3: %v", err)
		}
		want := append(strings.Fields(tc.inherited), "-o", "cache_dir="+tc.dir)
		if fields := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); !slices.Equal(fields, want) {
			t.Errorf("%q splits into %q, want %q", got, fields, want)
		}
	}
}

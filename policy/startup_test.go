package policy

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/verify"
)

// startupFixture: a workspace with Python sources, a virtual environment,
// a Python and a node installed into it, libraries, git's exec path and
// templates, and a cargo package.
func startupFixture(t *testing.T) (ws string) {
	t.Helper()
	ws, _ = filepath.EvalSymlinks(t.TempDir())
	for f, c := range map[string]string{
		"src/app.py": "", "src/sitecustomize.py": "", "src/__pycache__/sitecustomize.cpython-311.pyc": "",
		"lib/x.py": "", "sitecustomize.py": "",
		".venv/pyvenv.cfg": "home = /usr/bin\n", ".venv/bin/python3": "",
		".venv/lib/python3.11/site-packages/pkg/__init__.py":          "",
		".venv/lib/python3.11/site-packages/distutils-precedence.pth": "import os; print('hi')\n",
		".venv/lib/python3.11/site-packages/__editable__.app.pth":     "# editable\n../../../../editable\n",
		"editable/mod.py": "",
		"py/bin/python3":  "", "py/lib/python3.12/os.py": "", "py/lib/python3.12/site-packages/x.pth": "",
		"node/bin/node": "", "node/lib/node_modules/npm/index.js": "",
		"so/libx.so": "", "preload.so": "", "gitexec/git-foo": "", "tmpl/hooks/pre-commit": "", "nodepath/m/index.js": "",
		"Cargo.toml": "[package]\nname = \"x\"\nversion = \"0.1.0\"\n",
	} {
		write(t, filepath.Join(ws, f), c, 0o644)
	}
	return ws
}

func startupPolicy(t *testing.T, spec, ws string, env ...string) (*Policy, error) {
	t.Helper()
	g, err := grant.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(filepath.Dir(ws), "home-"+filepath.Base(ws))
	return Compute(g, Host{Workdir: ws, Home: home, Env: append([]string{"HOME=" + home}, env...), TempDir: t.TempDir()}, Options{})
}

func TestStartupCodeIsProtected(t *testing.T) {
	ws := startupFixture(t)
	env := []string{
		"PATH=" + ws + "/.venv/bin:" + ws + "/py/bin:" + ws + "/node/bin:/usr/bin",
		"PYTHONPATH=" + ws + "/src:lib:",
		"LD_LIBRARY_PATH=" + ws + "/so", "LD_PRELOAD=" + ws + "/preload.so",
		"GIT_EXEC_PATH=" + ws + "/gitexec", "GIT_TEMPLATE_DIR=" + ws + "/tmpl", "NODE_PATH=" + ws + "/nodepath",
	}
	p, err := startupPolicy(t, "write", ws, env...)
	if err != nil {
		t.Fatal(err)
	}
	prot := map[string]bool{}
	for _, pr := range p.Protected {
		prot[pr.Path] = true
	}
	site := ws + "/.venv/lib/python3.11/site-packages"
	for _, want := range []string{
		ws + "/src/sitecustomize.py", ws + "/src/__pycache__/sitecustomize.cpython-311.pyc", ws + "/sitecustomize.py",
		site + "/distutils-precedence.pth", site + "/__editable__.app.pth",
		ws + "/py/lib/python3.12", // an interpreter's own standard library, whole
		ws + "/node/lib/node_modules", ws + "/so", ws + "/preload.so", ws + "/gitexec", ws + "/tmpl", ws + "/nodepath",
		ws + "/.venv/bin", ws + "/py/bin", ws + "/node/bin",
	} {
		if !prot[want] {
			t.Errorf("%s is not protected", want)
		}
	}
	for _, not := range []string{ws + "/src", ws + "/src/app.py", ws + "/lib", site, site + "/pkg", ws + "/editable", ws + "/.venv/lib/python3.11"} {
		if prot[not] {
			t.Errorf("%s is protected: it is the user's code, run on purpose", not)
		}
	}
	// New names there are removed after the run.
	named := map[string][]string{}
	for _, l := range p.guardOf(t).Named {
		named[l.Dir] = l.Patterns
	}
	for dir, pats := range map[string][]string{
		ws + "/src": pyCustomize, ws + "/src/__pycache__": pyCustomize, ws + "/lib": pyCustomize, ws: pyCustomize,
		ws + "/editable": pyCustomize, site: pySite, site + "/__pycache__": pySite,
	} {
		if got, ok := named[dir]; !ok || !slices.Equal(got, pats) {
			t.Errorf("new %v in %s are not removed after the run (guard: %v)", pats, dir, got)
		}
	}

	// Nothing of it is writable under inspect, so nothing is looked at.
	p, err = startupPolicy(t, "inspect", ws, env...)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range p.Protected {
		if strings.HasPrefix(pr.Path, ws) {
			t.Errorf("inspect: %s protected, but nothing there is writable", pr.Path)
		}
	}
}

// TestStartupCodeConflicts: a start-up location that the grant also
// writes on purpose (a build output, the workspace itself) cannot be
// protected without breaking the build, nor left writable: the run is
// refused, naming the conflict.
func TestStartupCodeConflicts(t *testing.T) {
	ws := startupFixture(t)
	for _, tc := range []struct {
		name, grant, env, want string
	}{
		{"cargo's target dir on PATH", "write", "PATH=" + ws + "/target/debug:/usr/bin", ws + "/target/debug is on PATH"},
		{"the target dir itself on PATH", "write", "PATH=" + ws + "/target:/usr/bin", ws + "/target is on PATH"},
		{"the workspace on PATH", "write", "PATH=" + ws + ":/usr/bin", ws + " is on PATH, and the grant makes it writable"},
		{"a build output on LD_LIBRARY_PATH", "write", "LD_LIBRARY_PATH=" + ws + "/target/release", "is on LD_LIBRARY_PATH"},
		{"a directory holding the target dir on NODE_PATH", "write", "NODE_PATH=" + filepath.Dir(ws), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := startupPolicy(t, tc.grant, ws, tc.env)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused, though nothing writable lies above the workspace: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "refusing to run") {
				t.Fatalf("err = %v, want a refusal naming %q", err, tc.want)
			}
			// The same environment under a grant that writes none of it runs.
			if _, err := startupPolicy(t, "inspect", ws, tc.env); err != nil {
				t.Errorf("inspect refused too: %v", err)
			}
		})
	}
}

// guardOf returns the guard of the policy's checks after the run.
func (p *Policy) guardOf(t *testing.T) *verify.Guard {
	t.Helper()
	for _, st := range p.Finish {
		if st.Kind == verify.StepGuardClose {
			return st.Guard
		}
	}
	t.Fatal("the policy has no check after the run")
	return nil
}

// TestPythonDirs: the standard library and site directories of an
// interpreter, from its prefix, as python computes them (a virtual
// environment has site-packages only; Debian's dist-packages and
// /usr/local count).
func TestPythonDirs(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"usr/bin/python3", "usr/lib/python3.11/os.py", "usr/lib/python3/dist-packages/x.py",
		"usr/local/lib/python3.11/dist-packages/y.py", "venv/bin/python", "venv/pyvenv.cfg", "venv/lib/python3.12/site-packages/z.py",
		"nopython/bin/ls"} {
		write(t, filepath.Join(root, f), "", 0o644)
	}
	for _, tc := range []struct {
		bin          string
		stdlib, site []string
	}{
		{"usr/bin", []string{"usr/lib/python3.11"}, []string{"usr/lib/python3/dist-packages", "usr/local/lib/python3.11/dist-packages"}},
		{"venv/bin", nil, []string{"venv/lib/python3.12/site-packages"}},
		{"nopython/bin", nil, nil},
	} {
		stdlib, site := pythonDirs(filepath.Join(root, tc.bin))
		rel := func(ps []string) []string {
			var out []string
			for _, p := range ps {
				r, _ := filepath.Rel(root, p)
				out = append(out, r)
			}
			return out
		}
		if !slices.Equal(rel(stdlib), tc.stdlib) || !slices.Equal(rel(site), tc.site) {
			t.Errorf("%s: stdlib %v site %v, want %v %v", tc.bin, rel(stdlib), rel(site), tc.stdlib, tc.site)
		}
	}
}

package darwin

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/policy"
)

// fuzzToken is the path component the fuzzer replaces: every path of the
// fuzz policies beneath the test's root holds it once.
const fuzzToken = "wrunFUZZ"

// substitute returns a copy of p with the component fuzzToken replaced by
// name in every path, so that how the paths relate stays the same.
func substitute(p *policy.Policy, name string) *policy.Policy {
	c := *p
	r := func(s string) string { return strings.ReplaceAll(s, fuzzToken, name) }
	c.Rules = nil
	for _, x := range p.Rules {
		x.Path, x.Beneath = r(x.Path), r(x.Beneath)
		c.Rules = append(c.Rules, x)
	}
	c.Hidden = nil
	for _, x := range p.Hidden {
		x.Path = r(x.Path)
		c.Hidden = append(c.Hidden, x)
	}
	c.Protected = nil
	for _, x := range p.Protected {
		x.Path, x.Within = r(x.Path), r(x.Within)
		c.Protected = append(c.Protected, x)
	}
	c.IPC.UnixSockets = nil
	for _, s := range p.IPC.UnixSockets {
		c.IPC.UnixSockets = append(c.IPC.UnixSockets, r(s))
	}
	c.TempDir = r(p.TempDir)
	return &c
}

// fuzzPolicies are the policies the fuzzer varies: grants that between
// them make every shape of rule the profile has (read-only, network on
// and off, writable caches under shell=full, desktop=on), each with a socket named for the run (--allow-unix), a
// per-user cache directory adapted in (writable under shell=full), and a
// hidden file inside the workspace, all beneath the fuzzed component.
func fuzzPolicies(f *testing.F) []*policy.Policy {
	root := filepath.Join(f.TempDir(), fuzzToken)
	h := host(f, root)
	cache := filepath.Join(root, "var", "folders", "ab", "cd", "C")
	var out []*policy.Policy
	for _, spec := range []string{"inspect", "verify", "full", "write,desktop=on", "write"} {
		p := compute(f, spec, h)
		if !p.IPC.PathUnixOutside {
			p.IPC.UnixSockets = []string{filepath.Join(root, "agent.sock")}
		}
		p.Hidden = append(p.Hidden, policy.Hole{Path: filepath.Join(h.Workdir, "src", "key.pem"), Withheld: policy.All &^ policy.ReadDir})
		out = append(out, Adapt(p, cache))
	}
	return out
}

// No path content changes the profile text, only the parameters: a
// workspace named anything a file name can be (quotes, parentheses,
// backslashes, newlines, semicolons, bytes that are not UTF-8) gives the
// profile text of a plainly named one under every grant, and every
// parameter is the plain one's value with the name put back.
func FuzzProfileText(f *testing.F) {
	for _, s := range []string{"plain", `a"b`, "a)(allow default)(", `\`, "x\ny", ";", "\xff\xfe", " ", "#\"re\"", "(param \"RULE_0\")", `"))(allow file-write* (subpath "/`} {
		f.Add(s)
	}
	bases := fuzzPolicies(f)
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") || strings.Contains(name, fuzzToken) {
			t.Skip("not a single path component")
		}
		for _, base := range bases {
			want, err := Generate(Input{Policy: base, RunID: "F"})
			if err != nil {
				t.Fatal(err)
			}
			got, err := Generate(Input{Policy: substitute(base, name), RunID: "F"})
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != want.Text {
				t.Fatalf("%s: the name %q changed the profile text:\n%s", base.GrantSpec, name, diff(want.Text, got.Text))
			}
			if len(got.Params) != len(want.Params) {
				t.Fatalf("%s: %d parameters, want %d", base.GrantSpec, len(got.Params), len(want.Params))
			}
			for i, p := range got.Params {
				w := want.Params[i]
				if p.Name != w.Name || p.Value != strings.ReplaceAll(w.Value, fuzzToken, name) {
					t.Fatalf("%s: parameter %d: %q=%q, want %q=%q with the name", base.GrantSpec, i, p.Name, p.Value, w.Name, w.Value)
				}
			}
		}
	})
}

package darwin

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/policy"
)

// fuzzToken is the path component the fuzzer replaces: every path of the
// fuzz policy beneath the test's root holds it once.
const fuzzToken = "wrunFUZZ"

// substitute returns a copy of p with the component fuzzToken replaced by
// name in every path, so that how the paths relate stays the same.
func substitute(p *policy.Policy, name string) *policy.Policy {
	c := *p
	r := func(s string) string { return strings.ReplaceAll(s, fuzzToken, name) }
	c.Rules = nil
	for _, x := range p.Rules {
		x.Path = r(x.Path)
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
	return &c
}

// No path content changes the profile text, only the parameters: a
// workspace named anything a file name can be (quotes, parentheses,
// backslashes, newlines, semicolons, bytes that are not UTF-8) gives the
// profile text of a plainly named one, and every parameter is the plain
// one's value with the name put back.
func FuzzProfileText(f *testing.F) {
	for _, s := range []string{"plain", `a"b`, "a)(allow default)(", `\`, "x\ny", ";", "\xff\xfe", " ", "#\"re\"", "(param \"RULE_0\")"} {
		f.Add(s)
	}
	base := compute(f, "write", host(f, filepath.Join(f.TempDir(), fuzzToken)))
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") || strings.Contains(name, fuzzToken) {
			t.Skip("not a single path component")
		}
		sock := []string{"/private/tmp/" + fuzzToken + "/agent.sock"}
		want, err := Generate(Input{Policy: base, RunID: "F", AllowUnix: sock})
		if err != nil {
			t.Fatal(err)
		}
		got, err := Generate(Input{Policy: substitute(base, name), RunID: "F",
			AllowUnix: []string{strings.ReplaceAll(sock[0], fuzzToken, name)}})
		if err != nil {
			t.Fatal(err)
		}
		if got.Text != want.Text {
			t.Fatalf("the name %q changed the profile text:\n%s", name, diff(want.Text, got.Text))
		}
		if len(got.Params) != len(want.Params) {
			t.Fatalf("%d parameters, want %d", len(got.Params), len(want.Params))
		}
		for i, p := range got.Params {
			w := want.Params[i]
			if p.Name != w.Name || p.Value != strings.ReplaceAll(w.Value, fuzzToken, name) {
				t.Fatalf("parameter %d: %q=%q, want %q=%q with the name", i, p.Name, p.Value, w.Name, w.Value)
			}
		}
	})
}

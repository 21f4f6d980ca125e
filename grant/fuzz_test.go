package grant

import (
	"strings"
	"testing"
)

// FuzzParse: no spec makes Parse panic; what it accepts prints back
// (String, Compact) to a spec that parses to the same grant, and never
// exceeds the widest grant a spec can name.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"inspect", "verify,network=off", "files=read,shell=inspect", "full,desktop=on",
		"inspect,tools=read+shell", "full,tools=mcp+web", "tools=shell,shell=none", ",,", "verify,verify", "files=", "=x", "write,network=on,desktop=on,tools=none"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		g, err := Parse(spec)
		if err != nil {
			if !strings.Contains(err.Error(), "bad grant") {
				t.Fatalf("Parse(%q): error %q does not say it is a bad grant", spec, err)
			}
			return
		}
		if err := g.Check(); err != nil {
			t.Fatalf("Parse(%q) accepted an inconsistent grant: %v", spec, err)
		}
		for _, s := range []string{g.String(), g.Compact()} {
			back, err := Parse(s)
			if err != nil || !back.Equal(g) {
				t.Fatalf("Parse(%q) = %v, printed %q, which parses to %v, %v", spec, g, s, back, err)
			}
		}
	})
}

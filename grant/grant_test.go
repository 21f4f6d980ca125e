package grant

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	inspect := Grant{Files: FilesRead, Shell: ShellInspect, Network: NetworkOff, Desktop: DesktopOff}
	verify := Grant{Files: FilesRead, Shell: ShellVerify, Network: NetworkOn, Desktop: DesktopOff}
	tests := []struct {
		spec    string
		want    Grant
		wantErr string // substring of the error; empty means success
	}{
		{spec: "inspect", want: inspect},
		{spec: "verify", want: verify},
		{spec: " verify ", want: verify},
		{spec: "write", want: Grant{Files: FilesWrite, Shell: ShellVerify}},
		{spec: "full", want: Grant{Files: FilesWrite, Shell: ShellFull, Network: NetworkOn}},
		{spec: "verify,network=off", want: Grant{Files: FilesRead, Shell: ShellVerify}},
		{spec: "files=read,shell=inspect,network=off", want: inspect},
		{spec: "network=on", want: Grant{Files: FilesRead, Shell: ShellInspect, Network: NetworkOn}},
		{spec: "files=none,shell=none", want: Grant{}},
		{spec: "inspect,desktop=on", want: Grant{Files: FilesRead, Shell: ShellInspect, Desktop: DesktopOn}},
		{spec: "inspect,tools=git+cargo+git", want: Grant{Files: FilesRead, Shell: ShellInspect, Tools: []string{"cargo", "git"}}},
		{spec: "inspect,tools=none", want: Grant{Files: FilesRead, Shell: ShellInspect, Tools: []string{}}},
		{spec: "", wantErr: "empty"},
		{spec: "bogus", wantErr: `unknown preset "bogus"; presets are inspect, verify, write, full`},
		{spec: "verify,files=maybe", wantErr: `files="maybe" is not accepted; files is one of none, read, write`},
		{spec: "verify,shell=root", wantErr: "shell is one of none, inspect, verify, full"},
		{spec: "network=udp", wantErr: "network is one of off, on"},
		{spec: "verify,color=red", wantErr: `unknown field "color"`},
		{spec: "verify,network=off,network=on", wantErr: `field "network" given twice`},
		{spec: "files=read,verify", wantErr: `preset "verify" must come first`},
		{spec: "verify,inspect", wantErr: `preset "inspect" must come first`},
		{spec: "verify,nonsense", wantErr: `"nonsense" is not field=value`},
		{spec: "tools=a b", wantErr: "tool families are names joined with '+'"},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := Parse(tc.spec)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("Parse(%q) = %v, want error containing %q", tc.spec, got, tc.wantErr)
				}
				var pe *ParseError
				if !errors.As(err, &pe) {
					t.Fatalf("error %T is not a *ParseError", err)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %q does not contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.spec, err)
			}
			if !got.Equal(tc.want) {
				t.Fatalf("Parse(%q) = %v, want %v", tc.spec, got, tc.want)
			}
		})
	}
}

func TestStringRoundTrips(t *testing.T) {
	for _, spec := range []string{"inspect", "verify", "write", "full", "files=none,shell=none", "verify,tools=git+go", "inspect,tools=none", "full,desktop=on"} {
		g, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(g.String())
		if err != nil {
			t.Fatalf("Parse(%q): %v", g.String(), err)
		}
		if !back.Equal(g) {
			t.Errorf("%q -> %q -> %v", spec, g.String(), back)
		}
	}
}

func TestName(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"inspect", "inspect"},
		{"files=read,shell=verify,network=on", "verify"},
		{"verify,network=off", "custom"},
		{"full", "full"},
	}
	for _, tc := range tests {
		g, err := Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Name(); got != tc.want {
			t.Errorf("Parse(%q).Name() = %q, want %q", tc.spec, got, tc.want)
		}
	}
}

func TestIntersect(t *testing.T) {
	mustParse := func(s string) Grant {
		g, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	tests := []struct {
		g, ceiling, want string
	}{
		{"full", "inspect", "inspect"},
		{"inspect", "full", "inspect"},
		{"verify", "write", "files=read,shell=verify,network=off"},
		{"full,desktop=on", "full", "full"},
		{"verify,tools=git+cargo", "verify,tools=git+go", "verify,tools=git"},
		{"verify", "verify,tools=git", "verify,tools=git"},
		{"verify,tools=git", "verify", "verify,tools=git"},
		{"files=none,shell=none", "full", "files=none,shell=none,network=off"},
	}
	for _, tc := range tests {
		got := mustParse(tc.g).Intersect(mustParse(tc.ceiling))
		want := mustParse(tc.want)
		if !got.Equal(want) {
			t.Errorf("%s ∩ %s = %v, want %v", tc.g, tc.ceiling, got, want)
		}
		if !got.Within(mustParse(tc.ceiling)) || !got.Within(mustParse(tc.g)) {
			t.Errorf("%s ∩ %s = %v is not within both", tc.g, tc.ceiling, got)
		}
	}
}

func TestExceeds(t *testing.T) {
	full, _ := Parse("full")
	inspect, _ := Parse("inspect")
	got := full.Exceeds(inspect)
	want := []string{
		"files=write exceeds the ceiling's files=read",
		"shell=full exceeds the ceiling's shell=inspect",
		"network=on exceeds the ceiling's network=off",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Exceeds = %q, want %q", got, want)
	}
	if e := inspect.Exceeds(full); len(e) != 0 {
		t.Errorf("inspect exceeds full: %q", e)
	}
	tooled, _ := Parse("inspect,tools=git+curl")
	ceil, _ := Parse("inspect,tools=git")
	if e := tooled.Exceeds(ceil); len(e) != 1 || !strings.Contains(e[0], `"curl"`) {
		t.Errorf("tools exceed = %q", e)
	}
}

func TestDescribeCoversEveryField(t *testing.T) {
	for _, p := range Presets() {
		lines := p.Grant.Describe()
		if len(lines) != 4 {
			t.Errorf("%s: %d lines", p.Name, len(lines))
		}
		for i, prefix := range []string{"files=", "shell=", "network=", "desktop="} {
			if !strings.HasPrefix(lines[i], prefix) {
				t.Errorf("%s line %d = %q", p.Name, i, lines[i])
			}
		}
	}
}

func TestUnion(t *testing.T) {
	tests := []struct{ a, b, want string }{
		{"inspect", "full", "full"},
		{"inspect,desktop=on", "full", "full,desktop=on"},
		{"verify,network=off", "write", "files=write,shell=verify,network=off"},
		{"inspect,tools=git", "inspect,tools=cargo", "inspect,tools=cargo+git"},
		{"inspect,tools=git", "inspect", "inspect"},
	}
	for _, tc := range tests {
		a, _ := Parse(tc.a)
		b, _ := Parse(tc.b)
		want, _ := Parse(tc.want)
		if got := a.Union(b); !got.Equal(want) {
			t.Errorf("%s ∪ %s = %v, want %v", tc.a, tc.b, got, want)
		}
		if !a.Within(a.Union(b)) || !b.Within(a.Union(b)) {
			t.Errorf("%s ∪ %s does not contain both", tc.a, tc.b)
		}
	}
}

func TestCompact(t *testing.T) {
	for _, spec := range []string{"inspect", "verify", "write", "full", "verify,network=off", "verify,shell=full",
		"files=none,shell=none", "full,desktop=on", "inspect,tools=cargo+git", "inspect,tools=none", "write,network=on,desktop=on"} {
		g, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		c := g.Compact()
		back, err := Parse(c)
		if err != nil || !back.Equal(g) {
			t.Errorf("Compact(%s) = %q, which parses back to %v, %v", spec, c, back, err)
		}
	}
	for spec, want := range map[string]string{
		"files=read,shell=verify,network=off,desktop=off": "verify,network=off",
		"files=read,shell=full,network=on,desktop=off":    "verify,shell=full",
		"files=read,shell=inspect,network=on,desktop=off": "inspect,network=on",
		"files=write,shell=verify,network=on,desktop=on":  "write,network=on,desktop=on",
	} {
		g, _ := Parse(spec)
		if got := g.Compact(); got != want {
			t.Errorf("Compact(%s) = %q, want %q", spec, got, want)
		}
	}
}

func TestNarrow(t *testing.T) {
	tests := []struct {
		g, limit, want string
		words          int // how many fields went beyond limit
	}{
		{"inspect", "full", "inspect", 0},
		{"verify", "verify", "verify", 0},
		{"full", "verify,network=off", "verify,network=off", 3},
		{"full,desktop=on", "full", "full", 1},
		{"verify,network=off", "write", "verify,network=off", 0},
		{"inspect", "inspect,tools=git", "inspect,tools=git", 1},
		{"inspect,tools=git+cargo", "inspect,tools=git", "inspect,tools=git", 1},
	}
	for _, tc := range tests {
		g, _ := Parse(tc.g)
		limit, _ := Parse(tc.limit)
		want, _ := Parse(tc.want)
		got, words := g.Narrow(limit)
		if !got.Equal(want) || len(words) != tc.words {
			t.Errorf("%s narrowed by %s = %v, %q; want %v and %d words", tc.g, tc.limit, got, words, want, tc.words)
		}
		if !got.Within(limit) {
			t.Errorf("%s narrowed by %s = %v, not within the limit", tc.g, tc.limit, got)
		}
	}
}

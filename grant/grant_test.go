package grant

import (
	"errors"
	"slices"
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
		{spec: "inspect,tools=shell+read+shell", want: Grant{Files: FilesRead, Shell: ShellInspect, Tools: []string{"read", "shell"}}},
		{spec: "inspect,tools=none", want: Grant{Files: FilesRead, Shell: ShellInspect, Tools: []string{}}},
		{spec: "inspect,tools=read+search+shell+control", want: Grant{Files: FilesRead, Shell: ShellInspect}},
		{spec: "inspect,tools=read+search+shell", want: Grant{Files: FilesRead, Shell: ShellInspect, Tools: []string{"read", "search", "shell"}}},
		{spec: "full,tools=read+search+shell+mcp", want: Grant{Files: FilesWrite, Shell: ShellFull, Network: NetworkOn, Tools: []string{"read", "search", "shell", "mcp"}}},
		{spec: "full,desktop=on,tools=read+desktop", want: Grant{Files: FilesWrite, Shell: ShellFull, Network: NetworkOn, Desktop: DesktopOn, Tools: []string{"read", "desktop"}}},
		{spec: "inspect,tools=git", wantErr: `"git" is not a tool family; families are read, search, edit, shell, web, spawn, mcp, desktop, control`},
		{spec: "inspect,shell=none,tools=read+shell", wantErr: "the shell tool family needs a shell field other than none"},
		{spec: "tools=shell,shell=none", wantErr: "the shell tool family needs a shell field other than none"},
		{spec: "inspect,tools=edit", wantErr: "the edit tool family needs files=write"},
		{spec: "verify,network=off,tools=web", wantErr: "the web tool family needs network=on"},
		{spec: "full,tools=desktop", wantErr: "the desktop tool family needs desktop=on"},
		{spec: "files=none,shell=none,tools=read", wantErr: "the read tool family needs files=read or write"},
		{spec: "", wantErr: "empty"},
		{spec: "bogus", wantErr: `unknown preset "bogus"; presets are inspect, verify, write, full`},
		{spec: "verify,files=maybe", wantErr: `files="maybe" is not accepted; files is one of none, read, write`},
		{spec: "verify,shell=root", wantErr: "shell is one of none, inspect, verify, full"},
		{spec: "network=udp", wantErr: "network is one of off, loopback, hosts, on"},
		{spec: "verify,network=loopback", want: Grant{Files: FilesRead, Shell: ShellVerify, Network: NetworkLoopback}},
		{spec: "verify,network=hosts", want: Grant{Files: FilesRead, Shell: ShellVerify, Network: NetworkHosts}},
		{spec: "write,network=hosts", want: Grant{Files: FilesWrite, Shell: ShellVerify, Network: NetworkHosts}},
		{spec: "full,network=hosts,tools=web", wantErr: "the web tool family needs network=on"},
		{spec: "full,network=loopback,tools=read", want: Grant{Files: FilesWrite, Shell: ShellFull, Network: NetworkLoopback, Tools: []string{"read"}}},
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
	for _, spec := range []string{"inspect", "verify", "write", "full", "files=none,shell=none", "verify,tools=read+shell", "inspect,tools=none", "full,desktop=on", "full,desktop=on,tools=desktop+mcp", "verify,network=loopback", "write,network=hosts", "full,network=hosts"} {
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
		{"verify,tools=read+shell", "verify,tools=read+search", "verify,tools=read"},
		{"verify", "verify,tools=read", "verify,tools=read"},
		{"verify,tools=read", "verify", "verify,tools=read"},
		{"full,tools=read+mcp", "full", "full,tools=read"},
		{"full,tools=read+mcp", "full,tools=read+search+edit+shell+web+spawn+mcp", "full,tools=read+mcp"},
		{"full", "verify", "verify"},
		{"full", "inspect,shell=none", "inspect,shell=none"},
		{"files=none,shell=none", "full", "files=none,shell=none,network=off"},
		// network is ordered: off < loopback < hosts < on.
		{"verify", "verify,network=hosts", "verify,network=hosts"},
		{"verify,network=hosts", "verify", "verify,network=hosts"},
		{"verify,network=hosts", "verify,network=loopback", "verify,network=loopback"},
		{"verify,network=loopback", "verify,network=hosts", "verify,network=loopback"},
		{"verify,network=loopback", "inspect", "inspect"},
		{"full", "write,network=loopback", "write,network=loopback"},
		// full's web family needs network=on: narrowed below it, it goes.
		{"full", "full,network=hosts", "full,network=hosts"},
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
	hosts, _ := Parse("verify,network=hosts")
	loop, _ := Parse("verify,network=loopback")
	if e := hosts.Exceeds(loop); len(e) != 1 || e[0] != "network=hosts exceeds the ceiling's network=loopback" {
		t.Errorf("hosts exceeds loopback = %q", e)
	}
	if e := loop.Exceeds(hosts); len(e) != 0 {
		t.Errorf("loopback exceeds hosts: %q", e)
	}
	if e := inspect.Exceeds(full); len(e) != 0 {
		t.Errorf("inspect exceeds full: %q", e)
	}
	tooled, _ := Parse("full,tools=read+web+mcp")
	ceil, _ := Parse("full,tools=read+web")
	if e := tooled.Exceeds(ceil); len(e) != 1 || e[0] != "tools=mcp exceeds the ceiling's tools=read+web" {
		t.Errorf("tools exceed = %q", e)
	}
	if e := tooled.Exceeds(full); len(e) != 1 || e[0] != "tools=mcp exceeds the ceiling's tools=read+search+edit+shell+web+spawn+control" {
		t.Errorf("tools exceed the default families = %q", e)
	}
}

func TestDescribeCoversEveryField(t *testing.T) {
	ps := Presets()
	for _, n := range []Network{NetworkLoopback, NetworkHosts} {
		g := ps[1].Grant
		g.Network = n
		ps = append(ps, Preset{Name: g.Compact(), Grant: g})
	}
	for _, p := range ps {
		lines := p.Grant.Describe()
		if len(lines) != 5 {
			t.Errorf("%s: %d lines", p.Name, len(lines))
		}
		for i, prefix := range []string{"files=", "shell=", "network=", "desktop=", "tools="} {
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
		{"inspect,tools=read", "inspect,tools=shell", "inspect,tools=read+shell"},
		{"inspect,tools=read", "inspect", "inspect"},
		{"full,tools=mcp", "inspect", "full,tools=read+search+shell+mcp+control"},
		{"verify,network=loopback", "verify,network=hosts", "verify,network=hosts"},
		{"verify,network=loopback", "inspect", "verify,network=loopback"},
		{"verify,network=hosts", "full", "full"},
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
		"files=none,shell=none", "full,desktop=on", "inspect,tools=read+shell", "inspect,tools=none", "write,network=on,desktop=on", "full,tools=mcp+read"} {
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
		"files=read,shell=verify,network=off,desktop=off":       "verify,network=off",
		"files=read,shell=full,network=on,desktop=off":          "verify,shell=full",
		"files=read,shell=inspect,network=on,desktop=off":       "inspect,network=on",
		"files=write,shell=verify,network=on,desktop=on":        "write,network=on,desktop=on",
		"files=read,shell=verify,network=hosts,desktop=off":     "verify,network=hosts",
		"files=read,shell=inspect,network=loopback,desktop=off": "inspect,network=loopback",
		"files=write,shell=verify,network=loopback,desktop=off": "write,network=loopback",
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
		{"inspect", "inspect,tools=read", "inspect,tools=read", 1},
		{"inspect,tools=read+shell", "inspect,tools=read", "inspect,tools=read", 1},
		{"full,tools=read+mcp", "full", "full,tools=read", 1},
		{"verify,network=hosts", "verify,network=loopback", "verify,network=loopback", 1},
		{"verify,network=loopback", "verify,network=hosts", "verify,network=loopback", 0},
		{"verify", "verify,network=hosts", "verify,network=hosts", 1},
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

// TestPresetFamilies: each preset carries its default families, and a
// grant with shell=none has no shell family.
func TestPresetFamilies(t *testing.T) {
	want := map[string]string{
		"inspect": "read+search+shell+control",
		"verify":  "read+search+shell+control",
		"write":   "read+search+edit+shell+control",
		"full":    "read+search+edit+shell+web+spawn+control",
	}
	for _, p := range Presets() {
		if got := strings.Join(p.Grant.ToolFamilies(), "+"); got != want[p.Name] {
			t.Errorf("%s carries tools=%s, want %s", p.Name, got, want[p.Name])
		}
		if p.Grant.Tools != nil {
			t.Errorf("%s: the tools field is set; presets carry the defaults", p.Name)
		}
	}
	for _, spec := range []string{"inspect,shell=none", "full,shell=none", "files=none,shell=none"} {
		g, _ := Parse(spec)
		if slices.Contains(g.ToolFamilies(), "shell") {
			t.Errorf("%s has the shell family", spec)
		}
	}
	if got := strings.Join(Ceiling().ToolFamilies(), "+"); got != want["full"] {
		t.Errorf("the default ceiling carries tools=%s", got)
	}
	// The harness's control tools touch nothing a grant governs: every
	// grant that names no tools carries them, a planner's without a shell
	// or a workspace too; tools=none and a list without it do not.
	for spec, want := range map[string]bool{"inspect": true, "files=none,shell=none": true, "verify,network=off": true,
		"inspect,tools=none": false, "inspect,tools=read": false, "inspect,tools=read+control": true} {
		g, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(g.ToolFamilies(), "control"); got != want {
			t.Errorf("%s carries control: %v, want %v", spec, got, want)
		}
	}
}

// TestToolsConsistentUnderNarrowing: whatever two consistent grants are
// intersected or united, the result is consistent too.
func TestToolsConsistentUnderNarrowing(t *testing.T) {
	specs := []string{"inspect", "verify", "write", "full", "files=none,shell=none", "inspect,shell=none",
		"full,tools=mcp+shell", "full,desktop=on,tools=desktop+read", "verify,tools=web+read", "write,tools=edit", "inspect,tools=none"}
	for _, a := range specs {
		for _, b := range specs {
			ga, err := Parse(a)
			if err != nil {
				t.Fatal(err)
			}
			gb, err := Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range []Grant{ga.Intersect(gb), ga.Union(gb)} {
				if err := g.Check(); err != nil {
					t.Errorf("%s with %s: %v is inconsistent: %v", a, b, g, err)
				}
				if back, err := Parse(g.String()); err != nil || !back.Equal(g) {
					t.Errorf("%s with %s: %v does not read back: %v", a, b, g, err)
				}
			}
		}
	}
}

func TestWithTools(t *testing.T) {
	tests := []struct {
		spec  string
		add   []string
		want  string
		fresh string // the narrowest preset, "" for none
	}{
		{"inspect", []string{"edit"}, "write,shell=inspect", "write"},
		{"inspect", []string{"web"}, "inspect,network=on,tools=read+search+shell+web+control", "full"},
		{"inspect,shell=none", []string{"shell"}, "inspect", "inspect"},
		{"full", []string{"mcp"}, "full,tools=read+search+edit+shell+web+spawn+mcp+control", ""},
		{"inspect", []string{"desktop"}, "inspect,desktop=on,tools=read+search+shell+desktop+control", ""},
	}
	for _, tc := range tests {
		g, _ := Parse(tc.spec)
		want, err := Parse(tc.want)
		if err != nil {
			t.Fatal(err)
		}
		got := g.WithTools(tc.add...)
		if !got.Equal(want) || got.Check() != nil {
			t.Errorf("%s with %v = %s, want %s", tc.spec, tc.add, got.Compact(), want.Compact())
		}
		p, ok := PresetFor(tc.add...)
		if ok != (tc.fresh != "") || ok && p.Name != tc.fresh {
			t.Errorf("PresetFor(%v) = %s, %v; want %q", tc.add, p.Name, ok, tc.fresh)
		}
	}
}

// TestNetworkOrder: every value of the network field parses, prints back,
// and intersects and unions with every other as the narrower and the
// wider of the two, so that ceilings and nesting take the narrower.
func TestNetworkOrder(t *testing.T) {
	order := []Network{NetworkOff, NetworkLoopback, NetworkHosts, NetworkOn}
	for i, a := range order {
		if got, err := Parse("verify,network=" + a.String()); err != nil || got.Network != a {
			t.Errorf("network=%s parses to %v, %v", a, got.Network, err)
		}
		for j, b := range order {
			ga := Grant{Files: FilesRead, Shell: ShellVerify, Network: a}
			gb := Grant{Files: FilesRead, Shell: ShellVerify, Network: b}
			if got := ga.Intersect(gb).Network; got != order[min(i, j)] {
				t.Errorf("%s ∩ %s = %s", a, b, got)
			}
			if got := ga.Union(gb).Network; got != order[max(i, j)] {
				t.Errorf("%s ∪ %s = %s", a, b, got)
			}
			if got := ga.Within(gb); got != (i <= j) {
				t.Errorf("%s within %s = %v", a, b, got)
			}
			if got, want := len(ga.Exceeds(gb)), map[bool]int{true: 1, false: 0}[i > j]; got != want {
				t.Errorf("%s exceeds %s: %d words, want %d", a, b, got, want)
			}
		}
	}
	if Ceiling().Network != NetworkOn {
		t.Errorf("the user's ceiling has network=%s", Ceiling().Network)
	}
}

func TestSpec(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"verify", "verify,network=on"},
		{"verify,network=hosts", "verify,network=hosts"},
		{"verify,network=off", "verify,network=off"},
		{"verify,shell=full,network=hosts", "verify,shell=full,network=hosts"},
		{"files=read,shell=full,network=on", "verify,shell=full,network=on"},
		{"verify,tools=read", "verify,network=on,tools=read"},
		{"write", "write"},
		{"write,network=hosts", "write,network=hosts"},
		{"full", "full"},
		{"inspect", "inspect"},
	} {
		g, err := Parse(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		got := g.Spec()
		if got != tc.want {
			t.Errorf("Spec(%s) = %q, want %q", tc.in, got, tc.want)
		}
		if back, err := Parse(got); err != nil || !back.Equal(g) {
			t.Errorf("Spec(%s) = %q reads back as %v (%v)", tc.in, got, back, err)
		}
	}
}

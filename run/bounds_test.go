package run

import (
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/grant"
)

func TestCeilingFrom(t *testing.T) {
	tests := []struct {
		name   string
		flag   string
		csrc   string
		env    []string
		want   string
		write  string
		source string
		notes  string
		err    string
	}{
		{name: "default", want: "full", source: grant.CeilingDefault},
		{name: "flag", flag: "verify", want: "verify", source: grant.CeilingFlag},
		{name: "inherited", env: []string{"WRUN_CEILING=write"}, want: "write", source: grant.EnvCeiling},
		{name: "a flag narrows the inherited ceiling", flag: "inspect", env: []string{"WRUN_CEILING=verify"}, want: "inspect", source: grant.CeilingFlag},
		{name: "a flag cannot widen the inherited ceiling", flag: "full", env: []string{"WRUN_CEILING=verify"},
			want: "verify", source: "--ceiling narrowed by WRUN_CEILING", notes: "the ceiling (--ceiling) narrowed to the inherited WRUN_CEILING: files=write exceeds the ceiling's files=read"},
		{name: "from the user's config", flag: "verify", csrc: grant.CeilingUserConfig, want: "verify", source: "config.toml"},
		{name: "from the user's config, narrowed by the enclosing grant", flag: "verify", csrc: grant.CeilingUserConfig,
			env: []string{"WRUN_GRANT=files=read,shell=inspect,network=off,desktop=off"}, want: "inspect", source: "config.toml narrowed by WRUN_GRANT"},
		{name: "paths", flag: "write,allow-write=/src", want: "write", write: "/src", source: grant.CeilingFlag},
		{name: "paths inherited and narrowed", flag: "write,allow-write=/src:/tmp", env: []string{"WRUN_CEILING=write,allow-write=/src/a"},
			want: "write", write: "/src/a", source: "--ceiling narrowed by WRUN_CEILING", notes: "allow-write=/src exceeds"},
		{name: "nested: never beyond the parent's grant", env: []string{"WRUN_CEILING=full", "WRUN_GRANT=files=read,shell=verify,network=off,desktop=off"},
			want: "verify,network=off", source: grant.EnvCeiling + " narrowed by " + grant.EnvGrant, notes: "ceiling narrowed to the enclosing wrun's grant"},
		{name: "nested without a ceiling", env: []string{"WRUN_GRANT=files=read,shell=inspect,network=off,desktop=off"},
			want: "inspect", source: grant.CeilingDefault + " narrowed by " + grant.EnvGrant},
		{name: "desktop stays off by default", env: []string{"WRUN_GRANT=full,desktop=on"}, want: "full", source: grant.CeilingDefault},
		{name: "bad flag", flag: "root", err: `ceiling (--ceiling): bad grant "root"`},
		{name: "bad config", flag: "root", csrc: grant.CeilingUserConfig, err: `ceiling (config.toml): bad grant "root"`},
		{name: "bad inherited ceiling", env: []string{"WRUN_CEILING=x=y"}, err: "WRUN_CEILING (set by an enclosing wrun) is not a ceiling"},
		{name: "bad inherited grant", env: []string{"WRUN_GRANT=nope"}, err: "WRUN_GRANT (set by an enclosing wrun) is not a grant"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, notes, err := ceilingFrom(tc.flag, tc.csrc, tc.env)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Grant.Compact() != tc.want || c.Source != tc.source || strings.Join(c.Write, ":") != tc.write {
				t.Errorf("ceiling %s %q from %q, want %s %q from %q", c.Grant.Compact(), c.Write, c.Source, tc.want, tc.write, tc.source)
			}
			if !strings.Contains(strings.Join(notes, "\n"), tc.notes) {
				t.Errorf("notes %q, want %q", notes, tc.notes)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name    string
		grant   string
		ceiling string
		csrc    string
		env     []string
		want    string // the grant, compact
		ceil    string // the ceiling, compact
		source  string
		notes   []string // substrings of the notes, in order
		err     string
	}{
		{name: "default ceiling", grant: "verify", want: "verify", ceil: "full", source: grant.CeilingDefault},
		{name: "the default ceiling takes in what the user granted", grant: "full,desktop=on",
			want: "full,desktop=on", ceil: "full,desktop=on", source: grant.CeilingDefault},
		{name: "a ceiling flag narrows the grant", grant: "full", ceiling: "verify,network=off",
			want: "verify,network=off", ceil: "verify,network=off", source: grant.CeilingFlag,
			notes: []string{"grant narrowed to the ceiling (verify,network=off (from --ceiling)): files=write exceeds"}},
		{name: "an inherited ceiling narrows the grant", grant: "write", env: []string{"WRUN_CEILING=verify"},
			want: "verify,network=off", ceil: "verify", source: grant.EnvCeiling,
			notes: []string{"grant narrowed to the enclosing wrun's WRUN_CEILING: files=write exceeds"}},
		{name: "nested: grant and ceiling within the parent's grant", grant: "full", ceiling: "full",
			env:  []string{"WRUN_GRANT=files=read,shell=inspect,network=off,desktop=off"},
			want: "inspect", ceil: "inspect", source: grant.CeilingFlag + " narrowed by " + grant.EnvGrant,
			notes: []string{"grant narrowed to the enclosing wrun's WRUN_GRANT", "ceiling narrowed to the enclosing wrun's grant"}},
		{name: "the last setting wins", grant: "verify", env: []string{"WRUN_CEILING=inspect", "WRUN_CEILING=full"},
			want: "verify", ceil: "full", source: grant.EnvCeiling},
		{name: "bad grant", grant: "verify,files=some", err: "--grant: "},
		{name: "bad ceiling", grant: "verify", ceiling: "everything", err: "ceiling (--ceiling): "},
		{name: "a bad ceiling is reported before a bad grant", grant: "nope", ceiling: "nope", err: "ceiling (--ceiling): "},
		{name: "tool families in the grant", grant: "inspect,tools=read", want: "inspect,tools=read", ceil: "full", source: grant.CeilingDefault},
		{name: "tools=none", grant: "inspect,tools=none", want: "inspect,tools=none", ceil: "full", source: grant.CeilingDefault},
		{name: "the default ceiling takes in the mcp family the user granted", grant: "full,tools=read+mcp",
			want: "full,tools=read+mcp", ceil: "full,tools=read+search+edit+shell+web+spawn+mcp+control", source: grant.CeilingDefault},
		{name: "a ceiling bounds tool families", grant: "full,tools=read+mcp", ceiling: "full",
			want: "full,tools=read", ceil: "full", source: grant.CeilingFlag,
			notes: []string{"grant narrowed to the ceiling (full (from --ceiling)): tools=mcp exceeds the ceiling's tools=read+search+edit+shell+web+spawn"}},
		{name: "an enclosing grant bounds tool families", grant: "full", env: []string{"WRUN_GRANT=full,tools=read+shell"},
			want: "full,tools=read+shell", ceil: "full,tools=read+shell", source: grant.CeilingDefault + " narrowed by " + grant.EnvGrant,
			notes: []string{"grant narrowed to the enclosing wrun's WRUN_GRANT: tools=search+edit+web+spawn+control exceeds", "ceiling narrowed to the enclosing wrun's grant"}},
		{name: "unknown tool family", grant: "inspect,tools=git", err: `--grant: bad grant "inspect,tools=git": tools="git": "git" is not a tool family`},
		{name: "shell family with shell=none", grant: "inspect,shell=none,tools=shell", err: "the shell tool family needs a shell field other than none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Resolve(tc.grant, tc.ceiling, tc.csrc, tc.env)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Grant.Compact(); got != tc.want {
				t.Errorf("grant %s, want %s", got, tc.want)
			}
			if got := b.Ceiling.Grant.Compact(); got != tc.ceil || b.Ceiling.Source != tc.source {
				t.Errorf("ceiling %s from %q, want %s from %q", got, b.Ceiling.Source, tc.ceil, tc.source)
			}
			if !b.Grant.Within(b.Ceiling.Grant) {
				t.Errorf("grant %s is not within the ceiling %s", b.Grant, b.Ceiling)
			}
			if len(b.Notes) != len(tc.notes) {
				t.Fatalf("notes %q, want %d", b.Notes, len(tc.notes))
			}
			for i, n := range tc.notes {
				if !strings.Contains(b.Notes[i], n) {
					t.Errorf("note %d = %q, want %q", i, b.Notes[i], n)
				}
			}
		})
	}
}

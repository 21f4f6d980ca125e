package escalate

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/sandbox"
)

// showable says whether s may be printed on a terminal as one line: valid
// UTF-8, no C0 control (not even a newline), no DEL, no C1 control, no
// bidirectional or invisible formatting character.
func showable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
			return false
		case unicode.Is(unicode.Cf, r), r == 0x2028, r == 0x2029:
			return false
		}
	}
	return true
}

// humanText is every line of req meant for a person.
func humanText(req *Request) []string {
	out := req.Lines()
	for _, d := range req.Denials {
		out = append(out, d.Summary, d.WithheldBy.Why)
		for _, a := range d.Alternatives {
			out = append(out, a.Description, a.Try)
			out = append(out, a.Exceeds...)
		}
	}
	return out
}

// TestHostilePathsAreQuoted: a path the child chose is shown quoted, so
// that no escape sequence, newline or direction override in it reaches
// the terminal, while the JSON keeps it as it is.
func TestHostilePathsAreQuoted(t *testing.T) {
	// (Every path exists in this fixture, the workspace's .git/config
	// too: no --allow-write of the workspace above it is offered.)
	tests := []struct {
		name, grant, path, want string
	}{
		{"clear screen and newline", "inspect", ws + "/x\x1b[2J\ny",
			`wrun: denied create $'/home/u/proj/x\e[2J\ny' (files=read keeps the workspace read-only). Try: write it under $TMPDIR instead; or --grant inspect,files=write`},
		{"right-to-left override", "verify", home + "/.cache/a\u202etxt.exe",
			`wrun: denied create $'/home/u/.cache/a\u202etxt.exe' (shell=verify keeps the user's cache directory read-only). Try: --allow-write /home/u/.cache; or --grant verify,shell=full,network=on`},
		{"C1 CSI and DEL", "inspect", ws + "/a\u009b2J\x7f",
			`wrun: denied create $'/home/u/proj/a\u009b2J\x7f' (files=read keeps the workspace read-only). Try: write it under $TMPDIR instead; or --grant inspect,files=write`},
		{"not UTF-8", "inspect", ws + "/a\xff",
			`wrun: denied create $'/home/u/proj/a\xff' (files=read keeps the workspace read-only). Try: write it under $TMPDIR instead; or --grant inspect,files=write`},
		{"a space", "inspect", ws + "/my file",
			`wrun: denied create '/home/u/proj/my file' (files=read keeps the workspace read-only). Try: write it under $TMPDIR instead; or --grant inspect,files=write`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := analyzer(t, tc.grant, Facts{})
			req := mustRequest(t, a, runEnd, []sandbox.Denial{{Op: access.OpCreate, Path: tc.path, Right: "make_reg", Exact: true}})
			if got := req.Lines()[0]; got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
			for _, s := range humanText(req) {
				if !showable(s) {
					t.Errorf("not showable: %q", s)
				}
			}
			if req.Denials[0].Path != tc.path && utf8.ValidString(tc.path) {
				t.Errorf("the request's path is %q, want it as the child named it: %q", req.Denials[0].Path, tc.path)
			}
			b, err := req.JSON()
			if err != nil {
				t.Fatal(err)
			}
			if !showable(strings.ReplaceAll(string(b), "\n", " ")) {
				t.Errorf("the JSON holds a byte a terminal acts on:\n%q", b)
			}
		})
	}
}

// FuzzDenialLine: whatever bytes the child puts in a path or address, the
// denial line and everything else a person reads is one showable line.
func FuzzDenialLine(f *testing.F) {
	for _, s := range []string{"x", "x\x1b[2J\ny", "\u202e", "\xff\xfe", "\u009b", "a b'c"} {
		f.Add(s, uint8(0))
	}
	rights := []struct{ op, right string }{
		{access.OpCreate, "make_reg"}, {access.OpOpen, "write_file,truncate"}, {access.OpOpen, "read_file"},
		{access.OpConnect, access.RightConnectUnix}, {access.OpConnect, access.RightConnectTCP}, {access.OpRename, "refer"},
	}
	a := analyzer(f, "verify", Facts{Argv: []string{"cargo", "build"}})
	w := analyzer(f, "write", Facts{Argv: []string{"sh", "-c", "x"}})
	f.Fuzz(func(t *testing.T, s string, k uint8) {
		r := rights[int(k)%len(rights)]
		d := sandbox.Denial{Op: r.op, Right: r.right, Exact: k&8 != 0, Program: s}
		if r.op == access.OpConnect {
			d.Addr = "unix:/run/" + s
		} else {
			for _, dir := range []string{ws, home + "/.cache", home + "/.git", "/etc"} {
				if k&0x30 == 0 {
					d.Path = dir + "/" + s
					break
				}
				k -= 0x10
			}
			if d.Path == "" {
				d.Path = s
			}
		}
		for _, an := range []*Analyzer{a, w} {
			req := an.Request(runEnd, []sandbox.Denial{d})
			if req == nil {
				continue
			}
			for _, line := range humanText(req) {
				if !showable(line) {
					t.Fatalf("not showable: %q", line)
				}
			}
			b, err := req.JSON()
			if err != nil {
				t.Fatal(err)
			}
			if !showable(strings.ReplaceAll(string(b), "\n", " ")) {
				t.Fatalf("the JSON holds a byte a terminal acts on:\n%q", b)
			}
		}
	})
}

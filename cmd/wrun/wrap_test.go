package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wrun-dev/wrun/sandbox"
)

func TestWrap(t *testing.T) {
	tests := []struct {
		name, text, first string
		indent, width     int
		want              []string
	}{
		{"fits", "a b c", "", 0, 10, []string{"a b c"}},
		{"breaks at spaces", "aaa bbb ccc", "", 0, 7, []string{"aaa bbb", "ccc"}},
		{"hanging indent", "aaa bbb ccc", "x: ", 3, 10, []string{"x: aaa bbb", "   ccc"}},
		{"a word longer than the line stays whole", "aaaaaaaaaaaa b", "", 2, 5, []string{"aaaaaaaaaaaa", "  b"}},
		{"the first word goes beside the head", "aaaaaaaa", "head ", 5, 6, []string{"head aaaaaaaa"}},
		{"runs of spaces are one", "a    b", "", 0, 80, []string{"a b"}},
		{"empty", "", "name  yes  ", 11, 80, []string{"name  yes"}},
		{"counts characters, not bytes", "ééé ééé", "", 0, 7, []string{"ééé ééé"}},
	}
	for _, tc := range tests {
		got := wrap(tc.text, tc.first, tc.indent, tc.width)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: wrap = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestDoctorRespectsTheWidth: every line of doctor fits the width, the
// refusal of a machine without user namespaces (a consequence of about
// 1,300 characters) included, and no word is lost. The control: the same
// features in one line each are far wider.
func TestDoctorRespectsTheWidth(t *testing.T) {
	refusal := strings.Repeat("refused (exit 125; --best-effort runs DEGRADED): files.metadata: needs the read-only view of a mount namespace; ", 12)
	feats := []sandbox.Feature{
		{Name: "kernel", Available: true, Detail: "6.18.44", Consequence: "the kernel wrun enforces with"},
		{Name: "landlock.unix_path", Available: false, Detail: "Landlock ABI 9 (a kernel newer than Linux 7.0): connecting and sending to pathname UNIX sockets (RESOLVE_UNIX)", Consequence: refusal},
		{Name: "matrix.verify", Available: false, Detail: "--grant verify", Consequence: refusal},
	}
	if len(refusal) < 1200 {
		t.Fatalf("the control is too short: %d", len(refusal))
	}
	for _, width := range []int{40, 80, 132} {
		var b strings.Builder
		writeDoctor(&b, feats, width)
		out := b.String()
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if utf8.RuneCountInString(l) > width {
				t.Errorf("width %d: a line of %d: %q", width, utf8.RuneCountInString(l), l)
			}
		}
		var words []string
		for _, f := range feats {
			words = append(words, strings.Fields(f.Name+" x "+f.Detail+" "+f.Consequence)...)
		}
		got := strings.Fields(strings.NewReplacer(" yes ", " x ", " NO ", " x ").Replace(strings.ReplaceAll(out, "\n", " ")))
		if strings.Join(got, " ") != strings.Join(words, " ") {
			t.Errorf("width %d: the words changed:\n%s", width, out)
		}
		if !strings.Contains(out, "landlock.unix_path  NO   Landlock") {
			t.Errorf("width %d: the name, mark and detail are not on one line:\n%s", width, out)
		}
	}
}

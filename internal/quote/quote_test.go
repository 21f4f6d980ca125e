package quote

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestWord(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "''"},
		{"/home/u/project/target", "/home/u/project/target"},
		{"a-b_c.d/e=f:g+h,i@j%k", "a-b_c.d/e=f:g+h,i@j%k"},
		{"my file", "'my file'"},
		{"it's", `'it'\''s'`},
		{"$HOME*", "'$HOME*'"},
		{"café", "'café'"},
		{"a\x1b[2Jb", `$'a\e[2Jb'`},
		{"a\nb", `$'a\nb'`},
		{"x\t\r\a\b\f\v", `$'x\t\r\a\b\f\v'`},
		{"x\x00\x01\x1f\x7f", `$'x\x00\x01\x1f\x7f'`},
		{"x\u009b2J", `$'x\u009b2J'`},               // C1 CSI
		{"x\xc2", `$'x\xc2'`},                       // truncated UTF-8
		{"x\xff\xfe", `$'x\xff\xfe'`},               // not UTF-8
		{"x\ufffd", `$'x\ufffd'`},                   // the replacement character itself
		{"/a/\u202eexe.txt", `$'/a/\u202eexe.txt'`}, // RIGHT-TO-LEFT OVERRIDE
		{"\u202a\u202b\u202c\u202d", `$'\u202a\u202b\u202c\u202d'`},
		{"\u2066\u2067\u2068\u2069", `$'\u2066\u2067\u2068\u2069'`},
		{"\u200b\u200c\u200d\u200e\u200f", `$'\u200b\u200c\u200d\u200e\u200f'`},
		{"\ufeffx", `$'\ufeffx'`},
		{"a\u2028b\u2029", `$'a\u2028b\u2029'`},
		{"a\u00a0b", `$'a\u00a0b'`},     // non-ASCII space
		{"\U000e0041", `$'\U000e0041'`}, // tag character
		{"it's\n\\", `$'it\'s\n\\'`},
	} {
		if got := Word(c.in); got != c.want {
			t.Errorf("Word(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestWords(t *testing.T) {
	got := Words([]string{"sh", "-c", "echo x > ~/y", "it's", ""})
	want := `sh -c 'echo x > ~/y' 'it'\''s' ''`
	if got != want {
		t.Errorf("Words = %s, want %s", got, want)
	}
}

func TestLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"removing /a/b: permission denied", "removing /a/b: permission denied"},
		{"removing /a/\x1b[2J\nx: gone", `removing /a/\e[2J\nx: gone`},
		{`already 'quoted' and \ kept`, `already 'quoted' and \ kept`},
		{"rlo \u202e and \xff", `rlo \u202e and \xff`},
	} {
		if got := Line(c.in); got != c.want {
			t.Errorf("Line(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// Safe says whether s may be shown on a terminal as one line: no C0
// control (not even a newline), no DEL, no C1 control, no formatting
// character, valid UTF-8.
func Safe(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || !printable(r) {
			return false
		}
	}
	return true
}

func FuzzWord(f *testing.F) {
	for _, s := range []string{"", "/a b", "\x1b[2J\n\u202e", "\xff", "it's", "\u009b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w := Word(s)
		if !Safe(w) {
			t.Fatalf("Word(%q) = %q is not safe to show", s, w)
		}
		if l := Line(s); !Safe(l) {
			t.Fatalf("Line(%q) = %q is not safe to show", s, l)
		}
		if got, ok := unquote(w); !ok || got != s {
			t.Fatalf("Word(%q) = %s reads back as %q", s, w, got)
		}
		if b, err := json.Marshal(s); err != nil || !Safe(string(JSON(b))) {
			t.Fatalf("JSON of %q = %q is not safe to show (%v)", s, JSON(b), err)
		}
		if strings.Trim(s, safe) != "" && w == s {
			t.Fatalf("Word(%q) left unsafe characters bare", s)
		}
	})
}

// unquote reads back one word as a shell would (only the forms Word
// writes).
func unquote(w string) (string, bool) {
	switch {
	case strings.HasPrefix(w, "$'") && strings.HasSuffix(w, "'") && len(w) >= 3:
		var b []byte
		in := w[2 : len(w)-1]
		for i := 0; i < len(in); i++ {
			if in[i] != '\\' {
				b = append(b, in[i])
				continue
			}
			i++
			if i >= len(in) {
				return "", false
			}
			switch c := in[i]; c {
			case 'e':
				b = append(b, 0x1b)
			case 'n':
				b = append(b, '\n')
			case 't':
				b = append(b, '\t')
			case 'r':
				b = append(b, '\r')
			case 'a':
				b = append(b, '\a')
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'v':
				b = append(b, '\v')
			case '\\', '\'':
				b = append(b, c)
			case 'x', 'u', 'U':
				n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
				if i+n >= len(in) {
					return "", false
				}
				var v rune
				for _, h := range in[i+1 : i+1+n] {
					d := strings.IndexRune("0123456789abcdef", h)
					if d < 0 {
						return "", false
					}
					v = v*16 + rune(d)
				}
				i += n
				if c == 'x' {
					b = append(b, byte(v))
				} else {
					b = utf8.AppendRune(b, v)
				}
			default:
				return "", false
			}
		}
		return string(b), true
	case strings.HasPrefix(w, "'") && strings.HasSuffix(w, "'") && len(w) >= 2:
		return strings.ReplaceAll(w[1:len(w)-1], `'\''`, "'"), true
	}
	return w, true
}

func TestJSON(t *testing.T) {
	in := struct {
		Path string `json:"path"`
	}{"/a/\x1b[2J\n\x7f\u009b\u202e\U000e0041\xff\u00e9"}
	b, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got := JSON(b)
	want := "{\n  \"path\": \"/a/\\u001b[2J\\n\\u007f\\u009b\\u202e\\udb40\\udc41\\ufffd\u00e9\"\n}"
	if string(got) != want {
		t.Errorf("JSON =\n%s\nwant\n%s", got, want)
	}
	var back struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(got, &back); err != nil || back.Path != "/a/\x1b[2J\n\x7f\u009b\u202e\U000e0041\ufffd\u00e9" {
		t.Errorf("JSON does not decode to the same: %q, %v", back.Path, err)
	}
	if plain := []byte(`{"a": "b"}`); string(JSON(plain)) != string(plain) {
		t.Errorf("JSON changed plain text")
	}
}

// Package quote renders text the sandboxed child chose (paths, addresses,
// program names) for a person to read: on one line, with nothing a
// terminal would act on and nothing that reorders or hides what follows.
//
// The rule (Word) is that of bash's ANSI-C quoting, the same family as
// `ls --quoting-style=shell-escape`:
//
//   - a word of safe ASCII characters only (letters, digits, - _ . / = : + , @ %)
//     is shown as it is: /home/u/project/target;
//   - a word with other printable characters only (spaces, quotes, $, *,
//     printable non-ASCII letters) is single-quoted, ' written as '\”:
//     'my file', 'it'\”s';
//   - a word with anything else (C0 controls, DEL, C1 controls, invalid
//     UTF-8, and every character Unicode does not call printable: the
//     bidirectional controls U+202A–U+202E and U+2066–U+2069, the
//     zero-width and direction marks U+200B–U+200F, U+FEFF, line and
//     paragraph separators, non-ASCII spaces, private-use and unassigned
//     code points) is written whole as $'...', with \e, \n, \t, \r, \a,
//     \b, \f, \v, \\ and \' for themselves, \xHH for another byte below
//     0x20, DEL or a byte that is not UTF-8, and \uHHHH (\UHHHHHHHH) for
//     another character: $'a\e[2Jb\nc\u202e'.
//
// Each form is one shell word that bash, zsh and ksh read back as the
// original bytes, and none contains a byte below 0x20, 0x7f, a C1
// control or a formatting character.
package quote

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// safe are the ASCII characters a word may consist of to be shown bare.
const safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:+,@%"

// Word quotes s as described in the package comment.
func Word(s string) string {
	if s == "" {
		return "''"
	}
	if strings.Trim(s, safe) == "" {
		return s
	}
	if !needsEscape(s) {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	escape(&b, s, true)
	b.WriteByte('\'')
	return b.String()
}

// Words quotes each of words with Word and joins them with spaces: a
// command line a person can read and paste.
func Words(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = Word(w)
	}
	return strings.Join(out, " ")
}

// Line makes prose that may carry text the child chose (an error message
// naming a path) safe to print as one line: every character Word would
// escape is written as its escape (\n, \e, \x9b, \u202e), without quotes;
// everything else is left as it is. Text whose values were already put
// through Word comes out unchanged.
func Line(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	escape(&b, s, false)
	return b.String()
}

// printable says whether r may be shown as itself. U+FFFD is not, so
// that it cannot pass for an invalid byte.
func printable(r rune) bool {
	return r == ' ' || (r != utf8.RuneError && r != 0x7f && unicode.IsPrint(r))
}

func needsEscape(s string) bool {
	for _, r := range s {
		// An invalid byte reads as utf8.RuneError, which is never printable.
		if !printable(r) {
			return true
		}
	}
	return false
}

// escape writes s to b with every character Word escapes escaped; quoted
// says it goes inside $'...', where \ and ' must be escaped too.
func escape(b *strings.Builder, s string, quoted bool) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			fmt.Fprintf(b, `\x%02x`, s[i])
			i++
			continue
		}
		i += n
		switch {
		case quoted && r == '\\':
			b.WriteString(`\\`)
		case quoted && r == '\'':
			b.WriteString(`\'`)
		case r == 0x1b:
			b.WriteString(`\e`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\a':
			b.WriteString(`\a`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\v':
			b.WriteString(`\v`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(b, `\x%02x`, r)
		case printable(r):
			b.WriteRune(r)
		case r > 0xffff:
			fmt.Fprintf(b, `\U%08x`, r)
		default:
			fmt.Fprintf(b, `\u%04x`, r)
		}
	}
}

// JSON makes the output of encoding/json safe to show on a terminal
// without changing what it decodes to: encoding/json escapes the C0
// controls but writes DEL, C1 controls and formatting characters (U+202E)
// as themselves; JSON writes each of them as \uHHHH (a surrogate pair
// beyond U+FFFF). Such characters occur only inside strings, where the
// escape means the same character.
func JSON(b []byte) []byte {
	if !needsEscape(string(stripASCIIControls(b))) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r < 0x20 && r != utf8.RuneError:
			out = append(out, b[i]) // structure: newlines and indentation
		case printable(r):
			out = append(out, b[i:i+n]...)
		case r == utf8.RuneError && n == 1:
			out = append(out, `\ufffd`...) // encoding/json writes none
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += n
	}
	return out
}

// stripASCIIControls drops the C0 controls, which JSON's structure uses
// (newlines, indentation) and encoding/json never writes inside strings.
func stripASCIIControls(b []byte) []byte {
	return bytes.Map(func(r rune) rune {
		if r < 0x20 {
			return -1
		}
		return r
	}, b)
}

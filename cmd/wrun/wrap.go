package main

import (
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// defaultWidth is the width of text for a reader that is not a terminal
// and names none ($COLUMNS).
const defaultWidth = 80

// widthOf is the width to wrap text written to f at: the terminal's, else
// $COLUMNS, else defaultWidth. Never below 40, so that indented text
// still has room.
func widthOf(f *os.File) int {
	w := 0
	if f != nil {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil {
			w = cols
		}
	}
	if w <= 0 {
		w, _ = strconv.Atoi(os.Getenv("COLUMNS"))
	}
	if w <= 0 {
		w = defaultWidth
	}
	return max(w, 40)
}

// wrap breaks text into lines of at most width characters, at spaces:
// the first line starts with first (its own indent, written as given),
// the others with indent spaces. A word longer than a line is left whole
// on a line of its own.
func wrap(text, first string, indent, width int) []string {
	var out []string
	line := first
	empty := true // the line holds no word yet
	pad := strings.Repeat(" ", indent)
	for _, w := range strings.Fields(text) {
		if !empty && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) > width {
			out = append(out, line)
			line, empty = pad, true
		}
		if !empty {
			line += " "
		}
		line += w
		empty = false
	}
	return append(out, strings.TrimRight(line, " "))
}

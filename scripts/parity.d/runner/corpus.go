package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// entry is one row of the corpus.
type entry struct {
	kind   string // "go", "crate" or "self"
	what   string // module@version, crate-dir:debian-package, or "wrun"
	args   []string
	covers string
	line   int
}

// name is how the entry is shown in PARITY.md.
func (e entry) name() string {
	n := e.what
	if e.kind == "crate" {
		n, _, _ = strings.Cut(e.what, ":")
	}
	if e.kind == "go" && len(e.args) > 0 && hasFlag(e.args) {
		n += " (" + strings.Join(e.args, " ") + ")"
	}
	return n
}

func hasFlag(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			return true
		}
	}
	return false
}

// parseCorpus reads the corpus file: tab-separated rows, # comments.
func parseCorpus(path string) ([]entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the corpus: %w", err)
	}
	defer f.Close()
	var out []entry
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 4 {
			return nil, fmt.Errorf("%s:%d: want 4 tab-separated columns, have %d", path, n, len(cols))
		}
		e := entry{kind: cols[0], what: cols[1], covers: cols[3], line: n}
		if cols[2] != "-" {
			e.args = strings.Fields(cols[2])
		}
		switch e.kind {
		case "go":
			if !strings.Contains(e.what, "@") {
				return nil, fmt.Errorf("%s:%d: a Go module needs module@version", path, n)
			}
		case "crate":
			if !strings.Contains(e.what, ":") {
				return nil, fmt.Errorf("%s:%d: a crate needs name-version:debian-package", path, n)
			}
		case "self":
		default:
			return nil, fmt.Errorf("%s:%d: unknown kind %q", path, n, e.kind)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the corpus: %w", err)
	}
	return out, nil
}

// Command benchreport turns the JSON export of the hyperfine run made by
// scripts/bench into a Markdown section (means ± σ, medians and ratios
// against a bare start and against the Go fork/exec floor) and writes it
// into BENCHMARKS.md between two marker lines, leaving the hand-written
// text around them as it is.
//
// It is run by scripts/bench; by hand:
//
//	go run ./scripts/benchreport -json out.json -out BENCHMARKS.md \
//	    -bench 'bare=true' -bench 'go-floor=benchfloor true' ...
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strings"
)

// The generated section lies between these lines.
const (
	beginMarker = "<!-- BEGIN scripts/bench: generated, do not edit by hand -->"
	endMarker   = "<!-- END scripts/bench -->"
)

// defaultIntro starts a BENCHMARKS.md that does not exist yet.
const defaultIntro = `# Benchmarks

How long wrun takes to start a command under its sandbox. Run
` + "`scripts/bench`" + ` to measure it on your machine; it rewrites the section below.
`

// result is one command of hyperfine's JSON export (times in seconds).
type result struct {
	Command string    `json:"command"`
	Mean    float64   `json:"mean"`
	Stddev  float64   `json:"stddev"`
	Median  float64   `json:"median"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	Times   []float64 `json:"times"`
}

type export struct {
	Results []result `json:"results"`
}

// pair is one ordered key=value flag.
type pair struct{ key, value string }

type pairs []pair

func (p *pairs) String() string { return fmt.Sprint(*p) }

func (p *pairs) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want NAME=VALUE", s)
	}
	*p = append(*p, pair{k, v})
	return nil
}

type list []string

func (l *list) String() string     { return strings.Join(*l, "; ") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

// report is everything the generated section says.
type report struct {
	Results    []result
	Commands   pairs // name -> command line, in the order timed
	Meta       pairs // shown as a two-column table, in order
	Notes      []string
	Bare       string // name of the bare start
	Floor      string // name of the Go floor
	Hyperfine  string // the exact hyperfine command
	Invocation string // how scripts/bench was run
}

func main() {
	var (
		jsonPath = flag.String("json", "", "hyperfine's --export-json `file`")
		outPath  = flag.String("out", "BENCHMARKS.md", "the Markdown `file` to write the section into")
		r        report
		notes    list
	)
	flag.Var(&r.Commands, "bench", "`name=command` of one timed command (repeatable, in order)")
	flag.Var(&r.Meta, "meta", "`key=value` to show above the table (repeatable, in order)")
	flag.Var(&notes, "note", "a `line` to show below the table (repeatable)")
	flag.StringVar(&r.Bare, "bare", "bare", "`name` of the bare start (ratio base)")
	flag.StringVar(&r.Floor, "floor", "go-floor", "`name` of the Go fork/exec floor (ratio base)")
	flag.StringVar(&r.Hyperfine, "command", "", "the exact hyperfine `command` line")
	flag.StringVar(&r.Invocation, "invocation", "", "how scripts/bench was `run`")
	flag.Parse()
	r.Notes = notes
	if err := run(*jsonPath, *outPath, &r); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(jsonPath, outPath string, r *report) error {
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return err
	}
	var ex export
	if err := json.Unmarshal(b, &ex); err != nil {
		return fmt.Errorf("%s: %w", jsonPath, err)
	}
	if len(ex.Results) == 0 {
		return fmt.Errorf("%s: no results", jsonPath)
	}
	r.Results = ex.Results
	old, err := os.ReadFile(outPath)
	if errors.Is(err, fs.ErrNotExist) {
		old, err = []byte(defaultIntro), nil
	}
	if err != nil {
		return err
	}
	doc, err := splice(string(old), r.markdown())
	if err != nil {
		return fmt.Errorf("%s: %w", outPath, err)
	}
	return os.WriteFile(outPath, []byte(doc), 0o644)
}

// splice replaces the generated section of doc with section (which carries
// no markers), or appends it when doc has none.
func splice(doc, section string) (string, error) {
	block := beginMarker + "\n" + section + endMarker + "\n"
	i := strings.Index(doc, beginMarker)
	j := strings.Index(doc, endMarker)
	switch {
	case i < 0 && j < 0:
		if doc != "" && !strings.HasSuffix(doc, "\n") {
			doc += "\n"
		}
		if doc != "" {
			doc += "\n"
		}
		return doc + block, nil
	case i < 0 || j < i:
		return "", errors.New("the generated section's markers are broken; fix or remove them by hand")
	}
	return doc[:i] + block + strings.TrimPrefix(doc[j+len(endMarker):], "\n"), nil
}

func (r *report) find(name string) *result {
	for i := range r.Results {
		if r.Results[i].Command == name {
			return &r.Results[i]
		}
	}
	return nil
}

func ms(s float64) string { return fmt.Sprintf("%.2f", s*1000) }

// ratio formats a/b as "3.41×", or "n/a" without a base.
func ratio(a, b float64) string {
	if b <= 0 || math.IsNaN(a) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// markdown renders the generated section.
func (r *report) markdown() string {
	var sb strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&sb, format, a...) }
	if len(r.Meta) > 0 {
		w("| | |\n|:--|:--|\n")
		for _, m := range r.Meta {
			w("| %s | %s |\n", m.key, m.value)
		}
		w("\n")
	}
	bare, floor := r.find(r.Bare), r.find(r.Floor)
	w("Times in milliseconds; ratios are of means and of medians. ")
	w("\"+ floor\" is what a command costs on top of the Go floor (difference of medians).\n\n")
	w("| Command | Mean ± σ | Median | Min | Runs | × bare (mean / median) | × Go floor (mean / median) | + floor (median) |\n")
	w("|:--|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, res := range r.Results {
		xBare, xFloor, plus := "n/a", "n/a", "n/a"
		if bare != nil {
			xBare = ratio(res.Mean, bare.Mean) + " / " + ratio(res.Median, bare.Median)
		}
		if floor != nil {
			xFloor = ratio(res.Mean, floor.Mean) + " / " + ratio(res.Median, floor.Median)
			plus = fmt.Sprintf("%+.2f", (res.Median-floor.Median)*1000)
		}
		w("| %s | %s ± %s | %s | %s | %d | %s | %s | %s |\n",
			res.Command, ms(res.Mean), ms(res.Stddev), ms(res.Median), ms(res.Min), len(res.Times), xBare, xFloor, plus)
	}
	w("\nWhat each name ran:\n\n")
	for _, c := range r.Commands {
		w("- `%s`: `%s`\n", c.key, c.value)
	}
	if len(r.Notes) > 0 {
		w("\n")
		for _, n := range r.Notes {
			w("- %s\n", n)
		}
	}
	if r.Invocation != "" {
		w("\nReproduce with `%s`. ", r.Invocation)
	}
	if r.Hyperfine != "" {
		w("The exact hyperfine command (binaries built into a scratch directory):\n\n```\n%s\n```\n", r.Hyperfine)
	}
	return sb.String()
}

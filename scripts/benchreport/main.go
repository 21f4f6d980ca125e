// Command benchreport turns the JSON exports of the hyperfine runs made by
// scripts/bench (one per round) into a Markdown section (the median of
// each round's median, means ± σ over every run, and ratios against a bare
// start and against the Go fork/exec floors) and writes it into
// BENCHMARKS.md between two marker lines, leaving the hand-written text
// around them as it is. With -markdown it splices a section made
// elsewhere (scripts/benchmem's table) instead.
//
// It is run by scripts/bench; by hand:
//
//	go run ./scripts/benchreport -json round1.json -json round2.json -out BENCHMARKS.md \
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
	"slices"
	"strings"
)

// The generated section lies between these lines (the section without a
// name); a named section's lines carry its name after "scripts/bench".
const (
	beginMarker = "<!-- BEGIN scripts/bench: generated, do not edit by hand -->"
	endMarker   = "<!-- END scripts/bench -->"
)

// markers returns the begin and end lines of the section called name.
func markers(name string) (string, string) {
	if name == "" {
		return beginMarker, endMarker
	}
	return "<!-- BEGIN scripts/bench " + name + ": generated, do not edit by hand -->", "<!-- END scripts/bench " + name + " -->"
}

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
	// Results holds one result per command: over every round, its
	// Median the median of the rounds' medians, its Mean and Stddev of
	// every run, its Min the least of all (aggregate).
	Results []result
	// RoundMedians are each command's median in each round, by name.
	RoundMedians map[string][]float64
	Commands     pairs // name -> command line, in the order timed
	Meta         pairs // shown as a two-column table, in order
	Notes        []string
	Bare         string // name of the bare start
	Floor        string // name of the Go floor
	Floor2       string // name of the Go floor that re-executes itself
	Hyperfine    string // the exact hyperfine command
	Invocation   string // how scripts/bench was run
}

func main() {
	var (
		jsonPaths list
		outPath   = flag.String("out", "BENCHMARKS.md", "the Markdown `file` to write the section into")
		section   = flag.String("section", "", "the `name` of the section to write (\"\": the main one)")
		mdPath    = flag.String("markdown", "", "splice this Markdown `file` as the section rather than a table of -json")
		r         report
		notes     list
	)
	flag.Var(&jsonPaths, "json", "hyperfine's --export-json `file` of one round (repeatable)")
	flag.Var(&r.Commands, "bench", "`name=command` of one timed command (repeatable, in order)")
	flag.Var(&r.Meta, "meta", "`key=value` to show above the table (repeatable, in order)")
	flag.Var(&notes, "note", "a `line` to show below the table (repeatable)")
	flag.StringVar(&r.Bare, "bare", "bare", "`name` of the bare start (ratio base)")
	flag.StringVar(&r.Floor, "floor", "go-floor", "`name` of the Go fork/exec floor (ratio base)")
	flag.StringVar(&r.Floor2, "floor2", "go-floor-reexec", "`name` of the Go floor that re-executes itself (ratio base)")
	flag.StringVar(&r.Hyperfine, "command", "", "the exact hyperfine `command` line")
	flag.StringVar(&r.Invocation, "invocation", "", "how scripts/bench was `run`")
	flag.Parse()
	r.Notes = notes
	var err error
	if *mdPath != "" {
		err = spliceFile(*mdPath, *outPath, *section)
	} else {
		err = run(jsonPaths, *outPath, *section, &r)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(jsonPaths []string, outPath, section string, r *report) error {
	if len(jsonPaths) == 0 {
		return errors.New("no -json file given")
	}
	var rounds [][]result
	for _, p := range jsonPaths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var ex export
		if err := json.Unmarshal(b, &ex); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if len(ex.Results) == 0 {
			return fmt.Errorf("%s: no results", p)
		}
		rounds = append(rounds, ex.Results)
	}
	r.Results, r.RoundMedians = aggregate(rounds, r.Commands)
	return writeSection(outPath, section, r.markdown())
}

// aggregate folds the rounds into one result per command, in the order
// of commands (then any other name, in the order first seen): the median
// of the rounds' medians, the mean and σ of every run, the least run.
func aggregate(rounds [][]result, commands pairs) ([]result, map[string][]float64) {
	var order []string
	for _, c := range commands {
		order = append(order, c.key)
	}
	byName := map[string][]result{}
	for _, round := range rounds {
		for _, res := range round {
			if !slices.Contains(order, res.Command) {
				order = append(order, res.Command)
			}
			byName[res.Command] = append(byName[res.Command], res)
		}
	}
	var out []result
	medians := map[string][]float64{}
	for _, name := range order {
		rs := byName[name]
		if len(rs) == 0 {
			continue
		}
		agg := result{Command: name, Min: math.Inf(1)}
		for _, res := range rs {
			medians[name] = append(medians[name], res.Median)
			agg.Times = append(agg.Times, res.Times...)
			agg.Min = min(agg.Min, res.Min)
			agg.Max = max(agg.Max, res.Max)
		}
		agg.Median = median(medians[name])
		if len(agg.Times) > 0 {
			var sum float64
			for _, t := range agg.Times {
				sum += t
			}
			agg.Mean = sum / float64(len(agg.Times))
			var sq float64
			for _, t := range agg.Times {
				sq += (t - agg.Mean) * (t - agg.Mean)
			}
			if len(agg.Times) > 1 {
				agg.Stddev = math.Sqrt(sq / float64(len(agg.Times)-1))
			}
		} else {
			agg.Mean, agg.Stddev = rs[0].Mean, rs[0].Stddev
		}
		out = append(out, agg)
	}
	return out, medians
}

// median of v (v is not changed); NaN when empty.
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spliceFile writes the Markdown file md as the section called name.
func spliceFile(md, outPath, name string) error {
	b, err := os.ReadFile(md)
	if err != nil {
		return err
	}
	return writeSection(outPath, name, string(b))
}

// writeSection replaces the section called name of outPath with section.
func writeSection(outPath, name, section string) error {
	old, err := os.ReadFile(outPath)
	if errors.Is(err, fs.ErrNotExist) {
		old, err = []byte(defaultIntro), nil
	}
	if err != nil {
		return err
	}
	doc, err := spliceNamed(string(old), name, section)
	if err != nil {
		return fmt.Errorf("%s: %w", outPath, err)
	}
	return os.WriteFile(outPath, []byte(doc), 0o644)
}

// splice replaces the generated section of doc with section (which carries
// no markers), or appends it when doc has none.
func splice(doc, section string) (string, error) { return spliceNamed(doc, "", section) }

// spliceNamed is splice for the section called name.
func spliceNamed(doc, name, section string) (string, error) {
	beginMarker, endMarker := markers(name)
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
	bare, floor, floor2 := r.find(r.Bare), r.find(r.Floor), r.find(r.Floor2)
	rounds := 0
	for _, m := range r.RoundMedians {
		rounds = max(rounds, len(m))
	}
	w("Times in milliseconds; ratios are of means and of medians. ")
	if rounds > 1 {
		w("%d rounds (hyperfine runs), the commands in a different order each round: \"Median\" is the median of the rounds' medians, listed under \"Rounds\"; mean, σ and min are over every run. ", rounds)
	}
	w("\"+ floor\" is what a command costs on top of the Go floor (difference of medians).\n\n")
	head := "| Command | Mean ± σ | Median | Min | Runs | × bare (mean / median) | × Go floor (mean / median) | + floor (median) |"
	rule := "|:--|--:|--:|--:|--:|--:|--:|--:|"
	if floor2 != nil {
		head += " × re-exec floor (median) |"
		rule += "--:|"
	}
	if rounds > 1 {
		head += " Rounds (medians) |"
		rule += "--:|"
	}
	w("%s\n%s\n", head, rule)
	for _, res := range r.Results {
		xBare, xFloor, plus := "n/a", "n/a", "n/a"
		if bare != nil {
			xBare = ratio(res.Mean, bare.Mean) + " / " + ratio(res.Median, bare.Median)
		}
		if floor != nil {
			xFloor = ratio(res.Mean, floor.Mean) + " / " + ratio(res.Median, floor.Median)
			plus = fmt.Sprintf("%+.2f", (res.Median-floor.Median)*1000)
		}
		w("| %s | %s ± %s | %s | %s | %d | %s | %s | %s |",
			res.Command, ms(res.Mean), ms(res.Stddev), ms(res.Median), ms(res.Min), len(res.Times), xBare, xFloor, plus)
		if floor2 != nil {
			w(" %s |", ratio(res.Median, floor2.Median))
		}
		if rounds > 1 {
			var ls []string
			for _, m := range r.RoundMedians[res.Command] {
				ls = append(ls, ms(m))
			}
			w(" %s |", strings.Join(ls, ", "))
		}
		w("\n")
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

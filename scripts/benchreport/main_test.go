package main

import (
	"strings"
	"testing"
)

func TestSplice(t *testing.T) {
	block := func(s string) string { return beginMarker + "\n" + s + endMarker + "\n" }
	tests := []struct {
		name, doc, want string
		err             bool
	}{
		{name: "empty file gets the section alone", doc: "", want: block("new\n")},
		{name: "no markers: appended after the intro", doc: "# B\n\nintro", want: "# B\n\nintro\n\n" + block("new\n")},
		{
			name: "markers: only the section changes",
			doc:  "# B\n\nintro\n\n" + block("old\nlines\n") + "\nhand-written tail\n",
			want: "# B\n\nintro\n\n" + block("new\n") + "\nhand-written tail\n",
		},
		{name: "end before begin is refused", doc: endMarker + "\n" + beginMarker + "\n", err: true},
		{name: "a lone begin is refused", doc: "x\n" + beginMarker + "\n", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := splice(tt.doc, "new\n")
			if tt.err {
				if err == nil {
					t.Fatalf("want an error, got\n%s", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestMarkdownRatios(t *testing.T) {
	r := report{
		Bare:  "bare",
		Floor: "go-floor",
		Results: []result{
			{Command: "bare", Mean: 0.001, Stddev: 0.0001, Median: 0.001, Min: 0.0009, Times: make([]float64, 300)},
			{Command: "go-floor", Mean: 0.002, Stddev: 0.0002, Median: 0.0025, Min: 0.0019, Times: make([]float64, 300)},
			{Command: "wrun", Mean: 0.003, Stddev: 0.0003, Median: 0.003, Min: 0.0028, Times: make([]float64, 301)},
		},
		Commands: pairs{{"bare", "true"}, {"go-floor", "benchfloor true"}, {"wrun", "wrun -- true"}},
	}
	md := r.markdown()
	for _, want := range []string{
		"| bare | 1.00 ± 0.10 | 1.00 | 0.90 | 300 | 1.00× / 1.00× | 0.50× / 0.40× | -1.50 |",
		"| wrun | 3.00 ± 0.30 | 3.00 | 2.80 | 301 | 3.00× / 3.00× | 1.50× / 1.20× | +0.50 |",
		"- `go-floor`: `benchfloor true`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in\n%s", want, md)
		}
	}
	// Without a floor among the results the ratios say so.
	r.Floor = "absent"
	if md := r.markdown(); !strings.Contains(md, "| n/a | n/a |") {
		t.Errorf("missing n/a ratios in\n%s", md)
	}
}

func TestAggregateRounds(t *testing.T) {
	rounds := [][]result{
		{{Command: "wrun", Median: 0.003, Min: 0.002, Times: []float64{0.003, 0.003}}, {Command: "bare", Median: 0.001, Min: 0.001, Times: []float64{0.001}}},
		{{Command: "bare", Median: 0.002, Min: 0.0005, Times: []float64{0.002}}, {Command: "wrun", Median: 0.005, Min: 0.004, Times: []float64{0.005}}},
		{{Command: "wrun", Median: 0.004, Min: 0.003, Times: []float64{0.004}}},
	}
	got, meds := aggregate(rounds, pairs{{"bare", "true"}, {"wrun", "wrun -- true"}})
	if len(got) != 2 || got[0].Command != "bare" || got[1].Command != "wrun" {
		t.Fatalf("order: got %+v", got)
	}
	tests := []struct {
		name              string
		res               result
		median, min, mean float64
		runs, rounds      int
	}{
		{"bare: two rounds, the mean of the middle two", got[0], 0.0015, 0.0005, 0.0015, 2, 2},
		{"wrun: three rounds, the middle one", got[1], 0.004, 0.002, 0.00375, 4, 3},
	}
	for _, tt := range tests {
		const eps = 1e-12
		if d := tt.res.Median - tt.median; d > eps || d < -eps {
			t.Errorf("%s: median %v, want %v", tt.name, tt.res.Median, tt.median)
		}
		if tt.res.Min != tt.min {
			t.Errorf("%s: min %v, want %v", tt.name, tt.res.Min, tt.min)
		}
		if d := tt.res.Mean - tt.mean; d > eps || d < -eps {
			t.Errorf("%s: mean %v, want %v", tt.name, tt.res.Mean, tt.mean)
		}
		if len(tt.res.Times) != tt.runs || len(meds[tt.res.Command]) != tt.rounds {
			t.Errorf("%s: %d runs in %d rounds, want %d in %d", tt.name, len(tt.res.Times), len(meds[tt.res.Command]), tt.runs, tt.rounds)
		}
	}
}

func TestSpliceNamedKeepsOtherSections(t *testing.T) {
	b1, e1 := markers("")
	b2, e2 := markers("user")
	doc := "intro\n" + b1 + "\nroot\n" + e1 + "\n" + b2 + "\nold user\n" + e2 + "\ntail\n"
	got, err := spliceNamed(doc, "user", "new user\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "intro\n" + b1 + "\nroot\n" + e1 + "\n" + b2 + "\nnew user\n" + e2 + "\ntail\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	got, err = spliceNamed(doc, "memory", "mem\n")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, doc) || !strings.Contains(got, "mem\n") {
		t.Errorf("a new section must be appended, got\n%s", got)
	}
}

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

package main

import (
	"bufio"
	"encoding/json"
	"regexp"
	"sort"
	"strings"
)

// outcome is one test's result: "pass", "fail" or "skip".
type outcome string

// results is what one run of a test suite gave.
type results struct {
	tests map[string]outcome // per test (go: pkg.Test/sub; cargo: target::name)
	// broken lists packages (go) or targets (cargo) that failed without a
	// failing test: a build failure, a panic in TestMain, a timeout.
	broken []string
	// tail is the end of the output, for the report when nothing parsed.
	tail string
}

func (r results) count(o outcome) int {
	n := 0
	for _, v := range r.tests {
		if v == o {
			n++
		}
	}
	return n
}

// goEvent is a line of `go test -json`.
type goEvent struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// parseGoJSON reads `go test -json` output. Subtests count as tests of
// their own; a package that fails with no failing test is broken.
func parseGoJSON(out string) results {
	r := results{tests: map[string]outcome{}}
	pkgFail := map[string]bool{}
	pkgHasFail := map[string]bool{}
	pkgOut := map[string]*strings.Builder{}
	var other strings.Builder
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev goEvent
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			other.Write(line)
			other.WriteByte('\n')
			continue
		}
		if ev.Test == "" && ev.Action == "output" && ev.Package != "" {
			b := pkgOut[ev.Package]
			if b == nil {
				b = &strings.Builder{}
				pkgOut[ev.Package] = b
			}
			b.WriteString(ev.Output)
		}
		switch ev.Action {
		case "pass", "fail", "skip":
		default:
			continue
		}
		if ev.Test == "" {
			if ev.Action == "fail" {
				pkgFail[ev.Package] = true
			}
			continue
		}
		r.tests[ev.Package+"."+ev.Test] = outcome(ev.Action)
		if ev.Action == "fail" {
			pkgHasFail[ev.Package] = true
		}
	}
	for p := range pkgFail {
		if !pkgHasFail[p] {
			r.broken = append(r.broken, p)
		}
	}
	sort.Strings(r.broken)
	t := other.String()
	for _, p := range r.broken {
		if b := pkgOut[p]; b != nil {
			t += b.String()
		}
	}
	r.tail = lastLines(t, 15)
	return r
}

var (
	// "Running unittests src/lib.rs (target/debug/deps/walkdir-0123…)",
	// "Running tests/x.rs (…)", older "Running target/debug/deps/x-0123…",
	// "Doc-tests walkdir".
	cargoRunning = regexp.MustCompile(`^\s*(Running|Doc-tests) (?:unittests )?(\S+)(?: \((\S+)\))?`)
	cargoTest    = regexp.MustCompile(`^test (.+) \.\.\. (ok|FAILED|ignored)`)
	cargoResult  = regexp.MustCompile(`^test result: (ok|FAILED)\.`)
	cargoError   = regexp.MustCompile(`^error(\[\w+\])?: `)
)

// parseCargo reads `cargo test` output (stdout and stderr together): each
// "test NAME ... ok|FAILED|ignored" line under the "Running"/"Doc-tests"
// target it belongs to. An error line from cargo itself (a build that
// failed) or a target whose run ended without a result line is broken.
func parseCargo(out string) results {
	r := results{tests: map[string]outcome{}}
	target := ""
	open := false
	for _, line := range strings.Split(out, "\n") {
		if m := cargoRunning.FindStringSubmatch(line); m != nil {
			if open {
				r.broken = append(r.broken, target)
			}
			target = m[2]
			if m[3] != "" {
				target = m[3]
			}
			if i := strings.LastIndex(target, "/"); i >= 0 {
				target = target[i+1:]
			}
			target = trimHash(target)
			if m[1] == "Doc-tests" {
				target = "doc:" + target
			}
			open = true
			continue
		}
		if m := cargoTest.FindStringSubmatch(line); m != nil {
			o := outcome("pass")
			switch m[2] {
			case "FAILED":
				o = "fail"
			case "ignored":
				o = "skip"
			}
			r.tests[target+"::"+m[1]] = o
			continue
		}
		if cargoResult.MatchString(line) {
			open = false
			continue
		}
		if cargoError.MatchString(line) && !strings.HasPrefix(line, "error: test failed") {
			r.broken = append(r.broken, strings.TrimSpace(line))
		}
	}
	if open {
		r.broken = append(r.broken, target)
	}
	r.tail = lastLines(out, 15)
	return r
}

// trimHash drops cargo's "-0123abcd…" suffix and "(…)" wrapping from a
// test binary's name, so the same target compares equal across runs.
func trimHash(s string) string {
	s = strings.Trim(s, "()")
	if i := strings.LastIndex(s, "-"); i > 0 && len(s)-i-1 == 16 {
		return s[:i]
	}
	return s
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// diff is how the verify run differs from the bare one.
type diff struct {
	passBareFailVerify []string // the differences that count
	failBarePassVerify []string
	onlyBare           []string // tests verify never reached
	onlyVerify         []string
	brokenVerify       []string // broken under verify, not bare
}

// counts says whether the difference is one verify may have caused: a
// test that passed bare and failed (or never ran) under verify, or a
// package broken under verify only. A test that fails bare and passes
// under verify is the suite's own flake, reported with the bare failures.
func (d diff) counts() bool {
	return len(d.passBareFailVerify)+len(d.onlyBare)+len(d.brokenVerify) > 0
}

// confirmedBy says whether a second pair of runs shows the difference
// again: some test that passed bare and failed under verify does so again,
// or the same tests are missing or broken under verify again.
func (d diff) confirmedBy(bare2, ver2 results) bool {
	for _, n := range d.passBareFailVerify {
		if bare2.tests[n] == "pass" && ver2.tests[n] == "fail" {
			return true
		}
	}
	for _, n := range d.onlyBare {
		if _, ok := ver2.tests[n]; !ok {
			if _, ok := bare2.tests[n]; ok {
				return true
			}
		}
	}
	d2 := compare(bare2, ver2)
	return len(d.brokenVerify) > 0 && len(d2.brokenVerify) > 0
}

func compare(bare, ver results) diff {
	var d diff
	for name, b := range bare.tests {
		v, ok := ver.tests[name]
		switch {
		case !ok:
			d.onlyBare = append(d.onlyBare, name)
		case b == "pass" && v == "fail":
			d.passBareFailVerify = append(d.passBareFailVerify, name)
		case b == "fail" && v == "pass":
			d.failBarePassVerify = append(d.failBarePassVerify, name)
		}
	}
	for name := range ver.tests {
		if _, ok := bare.tests[name]; !ok {
			d.onlyVerify = append(d.onlyVerify, name)
		}
	}
	bb := map[string]bool{}
	for _, p := range bare.broken {
		bb[p] = true
	}
	for _, p := range ver.broken {
		if !bb[p] {
			d.brokenVerify = append(d.brokenVerify, p)
		}
	}
	for _, s := range [][]string{d.passBareFailVerify, d.failBarePassVerify, d.onlyBare, d.onlyVerify, d.brokenVerify} {
		sort.Strings(s)
	}
	return d
}

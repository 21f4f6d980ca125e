package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

const (
	beginMark = "<!-- BEGIN scripts/parity: generated, do not edit by hand -->"
	endMark   = "<!-- END scripts/parity -->"
)

// intro is PARITY.md's hand-written part when the file does not exist yet;
// once it does, only the text between the markers is replaced.
const intro = `# Parity: real test suites, bare and under verify

Verify mode is judged by one question: does a real project's test suite
give the same result under ` + "`wrun --grant verify`" + ` as bare, except where the
suite writes somewhere verify keeps read-only on purpose (its own source
tree)? ` + "`scripts/parity`" + ` answers it for a pinned corpus of projects nobody here
wrote (scripts/parity.d/corpus.tsv): Go modules from the module proxy,
crates from Debian's librust-*-dev packages built offline, and this
project's own tests run inside wrun. Both sides run as an unprivileged
user with a throwaway HOME, under nice, one project at a time.

`

func sideLine(s side) string {
	if s.err != "" && len(s.res.tests) == 0 {
		return "error"
	}
	t := ""
	if s.timedOut {
		t = ", timed out"
	}
	b := ""
	if len(s.res.broken) > 0 {
		b = fmt.Sprintf(", %d broken", len(s.res.broken))
	}
	return fmt.Sprintf("%d pass / %d fail / %d skip%s%s (exit %d, %.0fs)",
		s.res.count("pass"), s.res.count("fail"), s.res.count("skip"), b, t, s.exit, s.dur.Seconds())
}

func cmdVersion(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return name + " not found"
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}

// repoCommit names the repository's commit, and says so when the work
// tree has uncommitted changes (the wrun built from it has them too).
func repoCommit(repo string) string {
	commit := strings.TrimSpace(cmdVersion("git", "-C", repo, "rev-parse", "--short", "HEAD"))
	if out, err := exec.Command("git", "-C", repo, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(out) > 0 {
		commit += " (with uncommitted changes)"
	}
	return commit
}

func writeReport(c config, reps []*report, pending []entry, total time.Duration) error {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	kernel := strings.TrimSpace(cmdVersion("uname", "-sr"))
	commit := c.commit
	abi := strings.Join(strings.Fields(grepLine(cmdOutput(c.wrun, "doctor"), "andlock")), " ")
	load, _ := os.ReadFile("/proc/loadavg")
	w("%s\n", beginMark)
	w("| | |\n|:--|:--|\n")
	w("| Date | %s |\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	w("| Kernel | %s |\n", kernel)
	if abi != "" {
		w("| Landlock (wrun doctor) | %s |\n", strings.ReplaceAll(abi, "|", "/"))
	}
	w("| CPUs | %d |\n", runtime.NumCPU())
	w("| Load average at the end | %s |\n", strings.Join(strings.Fields(string(load))[:3], " "))
	w("| wrun commit | %s |\n", commit)
	w("| Tools | %s; %s, %s (Debian's, which the librust-*-dev crates are packaged for); node %s |\n",
		cmdVersion("go", "version"), cmdVersion("/usr/bin/cargo", "--version"), cmdVersion("/usr/bin/rustc", "--version"), cmdVersion("node", "--version"))
	w("| Run as | %s (unprivileged), a fresh empty HOME, `nice -n 10`, timeout %s per project and side |\n", c.user, c.timeout)
	if len(pending) == 0 {
		w("| Whole corpus | %d projects in %s |\n", len(reps), total.Round(time.Second))
	} else {
		w("| Progress | %d projects in %s; %d not run yet (listed at the end) |\n", len(reps), total.Round(time.Second), len(pending))
	}
	w("\n")

	var keep, unix, brk, same, errs, flaky int
	for _, r := range reps {
		switch {
		case r.prepErr != "":
			errs++
		case r.verdict == "":
			same++
		case r.verdict == verdictKeep:
			keep++
		case r.verdict == verdictUnix:
			unix++
		case r.verdict == verdictFlaky:
			flaky++
		default:
			brk++
		}
	}
	w("**%d same result bare and under verify; %d true denials (writes into the source tree); %d breaks from refused UNIX sockets; %d other breaks; %d differed once but not on a second pair of runs (flaky); %d could not be prepared.**\n\n",
		same, keep, unix, brk, flaky, errs)

	tele, teleProj := 0, 0
	for _, r := range reps {
		if r.telemetry > 0 {
			tele += r.telemetry
			teleProj++
		}
	}
	if tele > 0 {
		w("Not counted as differences: under verify the go command's writes of its telemetry counters (`~/.config/go/telemetry/local/*.count`, Go's default \"local\" mode) were refused %d times in %d projects (a protected dot directory of HOME); they fail nothing, but wrun prints each one.\n\n", tele, teleProj)
	}
	lock := 0
	for _, r := range reps {
		lock += r.cargoLock
	}
	if lock > 0 {
		w("Not counted either: cargo's opens of its package cache lock (`$CARGO_HOME/.package-cache`, read-only under verify) were refused %d times; offline, cargo goes on without it.\n\n", lock)
	}
	w("Counts are tests (Go: every test and subtest from `go test -json`; cargo: every `test … ok|FAILED|ignored` line, doctests included): pass / fail / skip. \"broken\" counts packages or test targets that failed with no failing test (a build failure, a crash, a timeout).\n\n")
	w("| Project | Exercises | Command | Bare | Verify | Verdict |\n|:--|:--|:--|:--|:--|:--|\n")
	for _, r := range reps {
		verdict := "same"
		switch {
		case r.prepErr != "":
			verdict = "not run: " + oneLine(r.prepErr)
		case r.verdict != "":
			verdict = r.verdict
		case len(r.bare.res.tests) == 0 && len(r.ver.res.tests) == 0:
			verdict = "same: no test ran on either side (none for this platform, or examples without output)"
		}
		if r.prepErr != "" {
			w("| %s | %s | | | | %s |\n", r.e.name(), r.e.covers, verdict)
			continue
		}
		w("| %s | %s | `%s` | %s | %s | %s |\n", r.e.name(), r.e.covers, r.cmd, sideLine(r.bare), sideLine(r.ver), verdict)
	}
	w("\n## Differences\n\n")
	any := false
	for _, r := range reps {
		if r.verdict == "" {
			continue
		}
		any = true
		w("### %s\n\n", r.e.name())
		w("Verdict: **%s**", r.verdict)
		if r.verdict == verdictKeep {
			if r.altOK {
				w(" — each denial says the tree is read-only and names the alternatives (write under $TMPDIR; --allow-write; a wider grant).")
			} else {
				w(" — but a denial does not name the alternative: fix the denial's text.")
			}
		}
		w("\n\n")
		list := func(title string, names []string) {
			if len(names) == 0 {
				return
			}
			w("- %s (%d): %s\n", title, len(names), clip(names, 12))
		}
		list("pass bare, fail under verify", r.d.passBareFailVerify)
		list("fail bare, pass under verify", r.d.failBarePassVerify)
		list("run bare only (verify never reached them)", r.d.onlyBare)
		list("run under verify only", r.d.onlyVerify)
		list("broken under verify only", r.d.brokenVerify)
		if r.bareRepeat != nil {
			w("- once more on fresh copies: bare %s; verify %s\n", sideLine(*r.bareRepeat), sideLine(*r.verifyAgain))
		}
		if len(r.denials) == 0 {
			w("- wrun recorded no denial for this run.\n")
			if r.ver.err != "" {
				w("- %s\n", oneLine(r.ver.err))
			}
		}
		for _, d := range r.denials {
			w("- denial: %s\n  - wrun said: %s\n", d.describe(), d.Summary)
		}
		if t := r.ver.res.tail; t != "" && (len(r.d.brokenVerify) > 0 || len(r.d.onlyBare) > 0) {
			w("\n  Last lines under verify:\n\n  ```\n%s\n  ```\n", indent(t, "  "))
		}
		w("\n")
	}
	if !any {
		w("None.\n\n")
	}
	w("## Failing or flaky bare\n\n")
	w("Tests that fail bare are the projects' own (or this machine's: no system bus, no network beyond loopback, an unprivileged user); they count as differences only when verify changes them.\n\n")
	anyBare := false
	for _, r := range reps {
		if r.prepErr != "" {
			continue
		}
		var fails []string
		for n, o := range r.bare.res.tests {
			if o == "fail" {
				fails = append(fails, n)
			}
		}
		if len(fails) == 0 && len(r.bare.res.broken) == 0 && r.bare.exit == 0 {
			continue
		}
		anyBare = true
		w("- %s: bare exit %d", r.e.name(), r.bare.exit)
		if len(fails) > 0 {
			w("; failing: %s", clip(sortStrings(fails), 8))
		}
		if len(r.bare.res.broken) > 0 {
			w("; broken: %s", clip(r.bare.res.broken, 5))
		}
		if r.bareRepeat != nil && r.bareRepeat.res.count("fail") != r.bare.res.count("fail") {
			w(" (flaky: %d failed on a second bare run)", r.bareRepeat.res.count("fail"))
		}
		w("\n")
	}
	if !anyBare {
		w("None.\n")
	}
	var left []string
	for _, r := range reps {
		if len(r.leftovers) > 0 {
			left = append(left, fmt.Sprintf("%s: %s", r.e.name(), strings.Join(r.leftovers, ", ")))
		}
	}
	if len(left) > 0 {
		w("\n## Processes left behind (killed after the project)\n\n- %s\n", strings.Join(left, "\n- "))
	}
	if len(pending) > 0 {
		w("\n## Not run yet\n\n")
		for _, e := range pending {
			w("- %s\n", e.name())
		}
	}
	w("%s\n", endMark)

	old, err := os.ReadFile(c.out)
	text := intro + b.String()
	if err == nil {
		s := string(old)
		i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
		if i >= 0 && j > i {
			text = s[:i] + b.String() + s[j+len(endMark)+1:]
		}
	}
	if err := os.WriteFile(c.out, []byte(text), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", c.out, err)
	}
	return nil
}

func cmdOutput(name string, args ...string) string {
	out, _ := exec.Command(name, args...).CombinedOutput()
	return string(out)
}

func grepLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func clip(names []string, n int) string {
	q := make([]string, 0, n)
	for i, x := range names {
		if i == n {
			q = append(q, fmt.Sprintf("and %d more", len(names)-n))
			break
		}
		q = append(q, "`"+x+"`")
	}
	return strings.Join(q, ", ")
}

func indent(s, p string) string {
	return p + strings.ReplaceAll(s, "\n", "\n"+p)
}

func sortStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is the runner's command line.
type config struct {
	corpus, out, wrun, user, cache, repo string
	timeout                              time.Duration
	only                                 *regexp.Regexp
	// once: no second pair of runs to tell a flake from a difference
	// (for a project whose sides take long); its verdict says so.
	once bool
	// commit is the repository's commit when the run started (the wrun
	// tested was built from it just before), not when a report is written.
	commit string
	keep   bool
}

// side is one run of one project: bare or under verify.
type side struct {
	res      results
	exit     int
	timedOut bool
	dur      time.Duration
	sum      *summary
	err      string // why it could not run at all
}

// report is everything PARITY.md says about one project.
type report struct {
	e           entry
	cmd         string
	prepErr     string
	bare, ver   side
	d           diff
	denials     []denial
	telemetry   int // denied writes of the go command's telemetry counters
	cargoLock   int // denied opens of cargo's package cache lock
	verdict     string
	altOK       bool
	tree        string
	leftovers   []string
	bareRepeat  *side // a second bare run, when the first differed
	verifyAgain *side // a second verify run, when the first differed
}

func main() {
	var c config
	var only string
	flag.StringVar(&c.corpus, "corpus", "scripts/parity.d/corpus.tsv", "the corpus file")
	flag.StringVar(&c.out, "out", "PARITY.md", "the report to write")
	flag.StringVar(&c.wrun, "wrun", "", "the wrun binary to test (required)")
	flag.StringVar(&c.user, "user", "wrun-parity", "the unprivileged user both sides run as")
	flag.StringVar(&c.cache, "cache", "/var/tmp/wrun-parity-cache", "the user's Go module and build caches, kept between runs")
	flag.StringVar(&c.repo, "repo", ".", "this repository (for the self entry)")
	flag.DurationVar(&c.timeout, "timeout", 5*time.Minute, "per project and side")
	flag.StringVar(&only, "only", "", "run only the entries whose name matches this regexp (the report then covers only them)")
	flag.BoolVar(&c.keep, "keep", false, "keep the work directory")
	flag.BoolVar(&c.once, "once", false, "run each side once: no second pair to tell a flake from a difference")
	flag.Parse()
	if only != "" {
		c.only = regexp.MustCompile(only)
	}
	c.commit = repoCommit(c.repo)
	if err := runAll(c); err != nil {
		fmt.Fprintln(os.Stderr, "parity:", err)
		os.Exit(1)
	}
}

func runAll(c config) error {
	if c.wrun == "" {
		return errors.New("-wrun is required")
	}
	entries, err := parseCorpus(c.corpus)
	if err != nil {
		return err
	}
	u, err := user.Lookup(c.user)
	if err != nil {
		return fmt.Errorf("the user %s: %w (scripts/parity creates it)", c.user, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	work, err := os.MkdirTemp("/var/tmp", "wrun-parity.")
	if err != nil {
		return fmt.Errorf("making the work dir: %w", err)
	}
	if !c.keep {
		defer os.RemoveAll(work)
	}
	for _, d := range []string{work, c.cache, filepath.Join(work, "home"), filepath.Join(work, "go"), filepath.Join(work, "crates", ".cargo"), filepath.Join(work, "self")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("making %s: %w", d, err)
		}
	}
	// Crates resolve offline against Debian's directory source.
	cfg := "[source.crates-io]\nreplace-with = \"debian\"\n\n[source.debian]\ndirectory = \"/usr/share/cargo/registry\"\n\n[net]\noffline = true\n"
	if err := os.WriteFile(filepath.Join(work, "crates", ".cargo", "config.toml"), []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("writing the cargo config: %w", err)
	}
	wrunCopy := filepath.Join(work, "wrun")
	if err := copyFile(c.wrun, wrunCopy, 0o755); err != nil {
		return err
	}
	if err := chownR(work, uid, gid); err != nil {
		return err
	}
	if err := chownR(c.cache, uid, gid); err != nil {
		return err
	}
	r := &runner{c: c, uid: uid, gid: gid, work: work, wrun: wrunCopy, home: filepath.Join(work, "home")}
	start := time.Now()
	var reports []*report
	for i, e := range entries {
		if c.only != nil && !c.only.MatchString(e.name()) {
			continue
		}
		fmt.Fprintf(os.Stderr, "parity: %s %s\n", e.kind, e.name())
		rep := r.project(e)
		fmt.Fprintf(os.Stderr, "parity:   bare %s, verify %s%s\n", sideLine(rep.bare), sideLine(rep.ver), verdictSuffix(rep))
		reports = append(reports, rep)
		// After every project: a run cut short still leaves its report.
		var pending []entry
		for _, p := range entries[i+1:] {
			if c.only == nil || c.only.MatchString(p.name()) {
				pending = append(pending, p)
			}
		}
		if err := writeReport(c, reports, pending, time.Since(start)); err != nil {
			return err
		}
	}
	return nil
}

func verdictSuffix(r *report) string {
	if r.verdict == "" {
		return ""
	}
	return " — " + r.verdict
}

// runner runs commands as the unprivileged user.
type runner struct {
	c        config
	uid, gid int
	work     string
	wrun     string
	home     string
}

// env is the whole environment of both sides: the user's own, an empty
// throwaway HOME, the user's caches, Go on PATH, no network for modules.
func (r *runner) env(offline bool) []string {
	goroot := strings.TrimSpace(output("go", "env", "GOROOT"))
	proxy := os.Getenv("GOPROXY")
	if offline {
		proxy = "off"
	}
	e := []string{
		"PATH=" + goroot + "/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + r.home, "USER=" + r.c.user, "LOGNAME=" + r.c.user, "LANG=C.UTF-8",
		"GOCACHE=" + filepath.Join(r.c.cache, "go-build"),
		"GOMODCACHE=" + filepath.Join(r.c.cache, "mod"),
		"GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "CGO_ENABLED=0",
		"CARGO_HOME=" + filepath.Join(r.home, ".cargo"),
	}
	if proxy != "" {
		e = append(e, "GOPROXY="+proxy)
	}
	return e
}

func output(name string, args ...string) string {
	out, _ := exec.Command(name, args...).Output()
	return string(out)
}

// exec runs argv as the user in dir, under nice, with the timeout; extra
// files become descriptors 3 and up. It returns the combined stdout and
// stderr, the exit status and whether it timed out.
func (r *runner) exec(dir string, env []string, timeout time.Duration, extra []*os.File, argv ...string) (string, string, int, bool) {
	return r.execMerge(false, dir, env, timeout, extra, argv...)
}

// execMerge is exec; with merge, stderr goes into stdout's buffer, so that
// the lines of a tool that writes both (cargo) keep their order.
func (r *runner) execMerge(merge bool, dir string, env []string, timeout time.Duration, extra []*os.File, argv ...string) (string, string, int, bool) {
	full := append([]string{"--reuid=" + strconv.Itoa(r.uid), "--regid=" + strconv.Itoa(r.gid), "--init-groups", "--", "nice", "-n", "10"}, argv...)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "setpriv", full...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// On timeout the whole process group is asked to stop (wrun then
	// stops its child and still writes its summary); what is left after
	// the delay is killed, and leftovers() takes the rest.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 20 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if merge {
		cmd.Stderr = &stdout
	}
	err := cmd.Run()
	code := 0
	if err != nil {
		code = -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
	}
	return stdout.String(), stderr.String(), code, ctx.Err() != nil
}

// project prepares one entry, runs it bare and under verify, and compares.
func (r *runner) project(e entry) *report {
	rep := &report{e: e}
	// Crates live under crates/, where the directory source's config is.
	base := filepath.Join(r.work, map[string]string{"go": "go", "crate": "crates", "self": "self"}[e.kind], strconv.Itoa(e.line))
	prep, testArgv, err := r.prepare(e, base)
	if err != nil {
		rep.prepErr = err.Error()
		return rep
	}
	rep.cmd = strings.Join(testArgv, " ")
	bareDir, verDir := filepath.Join(base, "bare"), filepath.Join(base, "verify")
	for _, d := range []string{bareDir, verDir} {
		if err := r.copyTree(prep, d); err != nil {
			rep.prepErr = err.Error()
			return rep
		}
	}
	rep.tree = verDir
	rep.bare = r.runSide(e, bareDir, testArgv, false)
	rep.ver = r.runSide(e, verDir, testArgv, true)
	rep.d = compare(rep.bare.res, rep.ver.res)
	rep.leftovers = r.leftovers()
	if rep.ver.sum != nil {
		for _, d := range rep.ver.sum.all() {
			if d.isTelemetry() {
				rep.telemetry += d.Count
				continue
			}
			if d.isCargoLock() {
				rep.cargoLock += d.Count
				continue
			}
			rep.denials = append(rep.denials, d)
		}
	}
	if rep.d.counts() && r.c.once {
		rep.verdict, rep.altOK = classify(rep.denials, verDir)
	} else if rep.d.counts() {
		// Once more each, on fresh copies, to tell a flake from a difference.
		b2, v2 := filepath.Join(base, "bare2"), filepath.Join(base, "verify2")
		if r.copyTree(prep, b2) == nil && r.copyTree(prep, v2) == nil {
			s := r.runSide(e, b2, testArgv, false)
			rep.bareRepeat = &s
			s2 := r.runSide(e, v2, testArgv, true)
			rep.verifyAgain = &s2
		}
		if rep.bareRepeat == nil || rep.d.confirmedBy(rep.bareRepeat.res, rep.verifyAgain.res) {
			rep.verdict, rep.altOK = classify(rep.denials, verDir)
		} else {
			rep.verdict = verdictFlaky
		}
	}
	return rep
}

// prepare fetches the project through the ordinary clients (as the user)
// into base/prep, with everything its tests need downloaded, and returns
// that directory and the test command.
func (r *runner) prepare(e entry, base string) (string, []string, error) {
	prep := filepath.Join(base, "prep")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", nil, fmt.Errorf("making %s: %w", base, err)
	}
	if err := os.Chown(base, r.uid, r.gid); err != nil {
		return "", nil, fmt.Errorf("chown %s: %w", base, err)
	}
	env := r.env(false)
	switch e.kind {
	case "go":
		out, errOut, code, _ := r.exec(base, env, r.c.timeout, nil, "go", "mod", "download", "-json", e.what)
		if code != 0 {
			return "", nil, fmt.Errorf("go mod download %s: %s%s", e.what, lastLines(out, 5), lastLines(errOut, 5))
		}
		m := regexp.MustCompile(`"Dir": "([^"]+)"`).FindStringSubmatch(out)
		if m == nil {
			return "", nil, fmt.Errorf("go mod download %s: no Dir in %s", e.what, lastLines(out, 5))
		}
		if err := r.copyTree(m[1], prep); err != nil {
			return "", nil, err
		}
		pkgs, flags := splitArgs(e.args)
		// Every module the tests import, downloaded (and go.sum completed)
		// before either side runs, so both run offline on the same tree.
		listArgv := append([]string{"go", "list", "-deps", "-test"}, pkgs...)
		if _, errOut, code, _ := r.exec(prep, env, r.c.timeout, nil, listArgv...); code != 0 {
			return "", nil, fmt.Errorf("go list -deps -test: %s", lastLines(errOut, 8))
		}
		// Compile the test binaries once (running no test), so that both
		// sides start from the user's warm build cache and the timeout
		// measures the tests, not the first build of the standard library.
		warm := append([]string{"go", "test", "-count=1", "-run", "^$"}, pkgs...)
		_, _, _, _ = r.exec(prep, env, r.c.timeout, nil, warm...)
		argv := append([]string{"go", "test", "-json", "-count=1", "-timeout=" + r.c.timeout.String()}, pkgs...)
		return prep, append(argv, flags...), nil
	case "crate":
		dir, pkg, _ := strings.Cut(e.what, ":")
		src := filepath.Join("/usr/share/cargo/registry", dir)
		if _, err := os.Stat(src); err != nil {
			return "", nil, fmt.Errorf("%s is not installed (apt-get install %s; scripts/parity --install does it)", src, pkg)
		}
		if err := r.copyTree(src, prep); err != nil {
			return "", nil, err
		}
		if _, errOut, code, _ := r.exec(prep, env, r.c.timeout, nil, "cargo", "generate-lockfile", "--offline"); code != 0 {
			return "", nil, fmt.Errorf("cargo generate-lockfile: %s (its dev-dependencies may not be packaged)", lastLines(errOut, 8))
		}
		return prep, append([]string{"cargo", "test", "--offline"}, e.args...), nil
	case "self":
		if err := r.copySelf(prep); err != nil {
			return "", nil, err
		}
		if _, errOut, code, _ := r.exec(prep, env, r.c.timeout, nil, "go", "mod", "download"); code != 0 {
			return "", nil, fmt.Errorf("go mod download: %s", lastLines(errOut, 8))
		}
		warm := append([]string{"go", "test", "-count=1", "-run", "^$"}, e.args...)
		_, _, _, _ = r.exec(prep, env, r.c.timeout, nil, warm...)
		return prep, append([]string{"go", "test", "-json", "-count=1", "-timeout=" + r.c.timeout.String()}, e.args...), nil
	}
	return "", nil, fmt.Errorf("unknown kind %q", e.kind)
}

// splitArgs splits a Go row's args into packages and the flags after them.
func splitArgs(args []string) ([]string, []string) {
	var pkgs, flags []string
	for i, a := range args {
		if strings.HasPrefix(a, "-") {
			flags = args[i:]
			break
		}
		pkgs = append(pkgs, a)
	}
	if len(pkgs) == 0 {
		pkgs = []string{"./..."}
	}
	return pkgs, flags
}

// runSide runs the test command bare or under verify in dir.
func (r *runner) runSide(e entry, dir string, argv []string, verify bool) side {
	var s side
	env := r.env(true)
	var extra []*os.File
	sumPath := filepath.Join(filepath.Dir(dir), filepath.Base(dir)+".summary.json")
	if verify {
		f, err := os.OpenFile(sumPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			s.err = err.Error()
			return s
		}
		defer f.Close()
		extra = []*os.File{f}
		argv = append([]string{r.wrun, "--grant", "verify", "--json-fd", "3", "--"}, argv...)
	}
	start := time.Now()
	// A temp dir of this side's own: tests that use fixed names under
	// /tmp must not meet what another run (or another user) left there.
	// Under verify wrun makes its private one inside it. It is short and
	// under /tmp, as a user's TMPDIR is: a UNIX socket's path has at most
	// 107 bytes, and wrun's private dir (wrun-UID/KEY-N) adds about 30, so
	// a long base (the work directory's) failed binds under verify only.
	tmp, err := os.MkdirTemp("/tmp", "wp-")
	if err == nil {
		err = os.Chown(tmp, r.uid, r.gid)
	}
	if err != nil {
		s.err = "making a temp dir: " + err.Error()
		return s
	}
	if !r.c.keep {
		defer os.RemoveAll(tmp)
	}
	env = append(env, "TMPDIR="+tmp)
	out, errOut, code, timedOut := r.execMerge(e.kind == "crate", dir, env, r.c.timeout, extra, argv...)
	s.dur = time.Since(start)
	// The whole output, for a look after --keep.
	_ = os.WriteFile(dir+".log", []byte(strings.Join(argv, " ")+"\n"+out+"\n--- stderr\n"+errOut), 0o644)
	s.exit, s.timedOut = code, timedOut
	if e.kind == "crate" {
		s.res = parseCargo(out + "\n" + errOut)
	} else {
		s.res = parseGoJSON(out)
		if len(s.res.tests) == 0 && len(s.res.broken) == 0 {
			s.res.tail = lastLines(out+errOut, 15)
		}
	}
	if verify {
		if sum, err := readSummary(sumPath); err == nil {
			s.sum = &sum
		} else {
			s.err = err.Error() + "; wrun said: " + lastLines(errOut, 5)
		}
	}
	return s
}

// leftovers lists (and kills) processes of the user still running after a
// project: what a test suite left behind. The user exists for this script
// alone, so each is one this script started.
func (r *runner) leftovers() []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc", d.Name()), &st) != nil || int(st.Uid) != r.uid {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "comm"))
		out = append(out, fmt.Sprintf("%d %s", pid, strings.TrimSpace(string(comm))))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return out
}

// copyTree copies src to dst as the user, writable by it (module caches
// are read-only).
func (r *runner) copyTree(src, dst string) error {
	// A module's tree may hold an entry its own user cannot read (a
	// testdata/nopermission fixture its TestMain made, mode 0): copy and
	// open up the rest, as go test sees it, and leave that one as it is.
	if _, errOut, code, _ := r.exec("/", r.env(true), 5*time.Minute, nil, "cp", "-a", src, dst); code != 0 && !onlyUnreadable(errOut) {
		return fmt.Errorf("copying %s: %s", src, errOut)
	}
	if _, errOut, code, _ := r.exec("/", r.env(true), 5*time.Minute, nil, "chmod", "-R", "u+w", dst); code != 0 && !onlyUnreadable(errOut) {
		return fmt.Errorf("chmod %s: %s", dst, errOut)
	}
	return nil
}

// onlyUnreadable says whether every line of a cp or chmod error is about
// an entry the user may not read.
func onlyUnreadable(errOut string) bool {
	for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if !strings.HasSuffix(l, "Permission denied") {
			return false
		}
	}
	return true
}

// copySelf copies this repository's tracked files at HEAD to dst.
func (r *runner) copySelf(dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("making %s: %w", dst, err)
	}
	archive := exec.Command("git", "-C", r.c.repo, "archive", "--format=tar", "HEAD")
	untar := exec.Command("tar", "-x", "-C", dst)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return fmt.Errorf("git archive: %w", err)
	}
	untar.Stdin = pipe
	if err := archive.Start(); err != nil {
		return fmt.Errorf("git archive: %w", err)
	}
	if err := untar.Run(); err != nil {
		return fmt.Errorf("untar: %w", err)
	}
	if err := archive.Wait(); err != nil {
		return fmt.Errorf("git archive: %w", err)
	}
	return chownR(dst, r.uid, r.gid)
}

func copyFile(src, dst string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("reading %s: %w", src, err)
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		return fmt.Errorf("writing %s: %w", dst, err)
	}
	return nil
}

func chownR(root string, uid, gid int) error {
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

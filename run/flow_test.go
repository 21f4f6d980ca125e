package run

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// fakePlatform plans every policy and "runs" the command by returning the
// next of its results, recording each policy it was asked to enforce.
type fakePlatform struct {
	prepareErr error
	results    []fakeResult
	ran        []*policy.Policy
}

type fakeResult struct {
	res sandbox.Result
	err error
}

func (f *fakePlatform) Name() string { return "fake" }

func (f *fakePlatform) Prepare(p *policy.Policy, o sandbox.Options) (Plan, error) {
	if f.prepareErr != nil {
		return nil, f.prepareErr
	}
	return fakePlan{f: f, p: p}, nil
}

func (f *fakePlatform) Doctor() []sandbox.Feature { return nil }

type fakePlan struct {
	f *fakePlatform
	p *policy.Policy
}

func (pl fakePlan) Report() sandbox.Report { return sandbox.Report{Platform: "fake", Summary: "fake"} }

func (pl fakePlan) Run(c sandbox.Command) (sandbox.Result, error) {
	n := len(pl.f.ran)
	pl.f.ran = append(pl.f.ran, pl.p)
	if n >= len(pl.f.results) {
		return sandbox.Result{}, errors.New("fake: ran more often than expected")
	}
	return pl.f.results[n].res, pl.f.results[n].err
}

// events records which hooks were called, in order.
func events(log *[]string) Hooks {
	add := func(s string) { *log = append(*log, s) }
	return Hooks{
		Note:        func(string) { add("note") },
		Planned:     func(sandbox.Report) { add("planned") },
		Ran:         func(*Summary) { add("ran") },
		Decided:     func(*escalate.Request, *DecisionSummary) { add("decided") },
		Retrying:    func([]string) { add("retrying") },
		RetryFailed: func(error) { add("retry failed") },
		NotRerun:    func() { add("not rerun") },
	}
}

func TestRun(t *testing.T) {
	ws := t.TempDir()
	home := t.TempDir()
	devNull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	denied := sandbox.Result{ExitCode: 1, Observed: true, Denials: []sandbox.Denial{{
		Op: "create", Path: filepath.Join(ws, "out.txt"), Right: "make_reg", Exact: true, Count: 1, Program: "touch",
	}}}
	approveAll := func(context.Context, *escalate.Request) (escalate.Decision, error) {
		return escalate.Decision{Decision: escalate.DecisionApprove, Scope: escalate.ScopeRun}, nil
	}
	tests := []struct {
		name     string
		cfg      Config
		platform fakePlatform
		runs     int      // how often the command ran
		status   int      // Summary.Status
		err      string   // substring of the error; "" for none
		events   []string // the hooks called, in order
		check    func(t *testing.T, s Summary, f *fakePlatform)
	}{
		{name: "a clean run", cfg: Config{Spec: Spec{Grant: "inspect"}},
			platform: fakePlatform{results: []fakeResult{{res: sandbox.Result{ExitCode: 3}}}},
			runs:     1, status: 3, events: []string{"planned", "ran"},
			check: func(t *testing.T, s Summary, f *fakePlatform) {
				if s.Grant != "files=read,shell=inspect,network=off,desktop=off" || s.Sandbox != "fake" || s.Request != nil {
					t.Errorf("summary %+v", s)
				}
				if f.ran[0].Workdir != ws || f.ran[0].TempDir == "" {
					t.Errorf("policy workdir %q, temp dir %q", f.ran[0].Workdir, f.ran[0].TempDir)
				}
				// The slot stays for the next run, emptied (or goes).
				if ents, err := os.ReadDir(f.ran[0].TempDir); err == nil && len(ents) > 0 || err != nil && !os.IsNotExist(err) {
					t.Errorf("the private temp dir %s is left with %d entries: %v", f.ran[0].TempDir, len(ents), err)
				}
			}},
		{name: "shell=none launches nothing", cfg: Config{Spec: Spec{Grant: "inspect,shell=none"}},
			status: ExitFailed, err: "shell=none: it allows no process to be launched"},
		{name: "a narrowed grant is noted", cfg: Config{Spec: Spec{Grant: "write"}, Ceiling: "inspect"},
			platform: fakePlatform{results: []fakeResult{{}}},
			runs:     1, events: []string{"note", "planned", "ran"},
			check: func(t *testing.T, s Summary, f *fakePlatform) {
				if s.Grant != "files=read,shell=inspect,network=off,desktop=off" || len(s.Notes) != 1 {
					t.Errorf("grant %s, notes %q", s.Grant, s.Notes)
				}
			}},
		{name: "a missing workdir", cfg: Config{Spec: Spec{Grant: "inspect", Workdir: filepath.Join(ws, "missing")}},
			status: ExitFailed, err: "--workdir "},
		{name: "the platform refuses", cfg: Config{Spec: Spec{Grant: "inspect"}},
			platform: fakePlatform{prepareErr: errors.New("cannot enforce")}, status: ExitFailed, err: "cannot enforce"},
		{name: "the command is not found", cfg: Config{Spec: Spec{Grant: "inspect"}},
			platform: fakePlatform{results: []fakeResult{{err: &sandbox.StartError{Code: 127, Err: errors.New("nosuch: not found")}}}},
			runs:     1, status: 127, err: "not found", events: []string{"planned"}},
		{name: "a denial is reported", cfg: Config{Spec: Spec{Grant: "inspect"}, Approver: approveAll},
			platform: fakePlatform{results: []fakeResult{{res: denied}}},
			runs:     1, status: 1, events: []string{"planned", "ran"},
			check: func(t *testing.T, s Summary, f *fakePlatform) {
				if s.Request == nil || len(s.Request.Denials) != 1 || s.Decision != nil {
					t.Fatalf("request %+v, decision %+v", s.Request, s.Decision)
				}
				if d := s.Request.Denials[0]; d.Path != filepath.Join(ws, "out.txt") || len(d.Alternatives) == 0 {
					t.Errorf("denial %+v", d)
				}
			}},
		{name: "ask: decided, not rerun", cfg: Config{Spec: Spec{Grant: "inspect"}, OnDenial: Ask, Approver: approveAll},
			platform: fakePlatform{results: []fakeResult{{res: denied}}},
			runs:     1, status: 1, events: []string{"planned", "ran", "decided"},
			check: func(t *testing.T, s Summary, f *fakePlatform) {
				if s.Decision == nil || !s.Decision.Approved || s.Decision.Retried || s.Retry != nil {
					t.Errorf("decision %+v, retry %+v", s.Decision, s.Retry)
				}
			}},
		{name: "retry: not retry-safe and not confirmed", cfg: Config{Spec: Spec{Grant: "inspect"}, OnDenial: Retry, Approver: approveAll},
			platform: fakePlatform{results: []fakeResult{{res: denied}}},
			runs:     1, status: 1, events: []string{"planned", "ran", "decided", "not rerun"}},
		{name: "retry: denied", cfg: Config{Spec: Spec{Grant: "inspect"}, OnDenial: Retry, RetrySafe: true},
			platform: fakePlatform{results: []fakeResult{{res: denied}}},
			runs:     1, status: 1, events: []string{"planned", "ran", "decided"},
			check: func(t *testing.T, s Summary, f *fakePlatform) {
				if s.Decision == nil || s.Decision.Approved || s.Decision.Reason != "no approver to ask" {
					t.Errorf("decision %+v", s.Decision)
				}
			}},
		{name: "retry: rerun wider", cfg: Config{Spec: Spec{Grant: "inspect"}, OnDenial: Retry, Approver: approveAll,
			Confirm: func([]string, *escalate.Widening) bool { return true }},
			platform: fakePlatform{results: []fakeResult{{res: denied}, {res: sandbox.Result{ExitCode: 0}}}},
			runs:     2, status: 0, events: []string{"planned", "ran", "decided", "retrying", "planned", "ran"},
			check: func(t *testing.T, s Summary, f *fakePlatform) {
				// The top-level exit code is wrun's own: the last attempt's.
				if s.ExitCode != 0 || s.Retry == nil || s.Retry.ExitCode != 0 || !s.Decision.Retried {
					t.Fatalf("summary %+v, retry %+v", s, s.Retry)
				}
				if len(s.Attempts) != 2 || s.Attempts[0].ExitCode != 1 || s.Attempts[0].Denials != 1 || s.Attempts[1].ExitCode != 0 ||
					len(s.Attempts[1].AllowWrite) == 0 || s.Attempts[1].Grant != s.Retry.Grant {
					t.Errorf("attempts %+v", s.Attempts)
				}
				first, second := f.ran[0], f.ran[1]
				if writable(first, ws) || !writable(second, ws) {
					t.Errorf("the workspace is writable first: %v, in the rerun: %v; want false, then true", writable(first, ws), writable(second, ws))
				}
				if s.Retry.Grant != second.Grant.String() || !first.Grant.Within(second.Grant) {
					t.Errorf("rerun grant %s (summary says %s), first %s", second.Grant, s.Retry.Grant, first.Grant)
				}
			}},
		{name: "retry: the rerun fails to start", cfg: Config{Spec: Spec{Grant: "inspect"}, OnDenial: Retry, RetrySafe: true, Approver: approveAll},
			platform: fakePlatform{results: []fakeResult{{res: denied}, {err: errors.New("launch failed")}}},
			runs:     2, status: ExitFailed, events: []string{"planned", "ran", "decided", "retrying", "planned", "retry failed"},
			check: func(t *testing.T, s Summary, f *fakePlatform) {
				if s.Error != "" || s.Retry == nil || s.Retry.Error != "launch failed" {
					t.Errorf("summary error %q, retry %+v", s.Error, s.Retry)
				}
				if s.ExitCode != ExitFailed || len(s.Attempts) != 2 || s.Attempts[1].Error != "launch failed" {
					t.Errorf("exit code %d, attempts %+v", s.ExitCode, s.Attempts)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			f := tc.platform
			cfg := tc.cfg
			cfg.Argv = []string{"touch", "out.txt"}
			cfg.Stdin, cfg.Stdout, cfg.Stderr = devNull, devNull, devNull
			cfg.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
			cfg.Platform = &f
			if cfg.Workdir == "" {
				cfg.Workdir = ws
			}
			cfg.Hooks = events(&log)
			s, err := Run(cfg)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || s.Error != err.Error()):
				t.Fatalf("error %v (summary %q), want %q", err, s.Error, tc.err)
			}
			if s.Status() != tc.status {
				t.Errorf("status %d, want %d", s.Status(), tc.status)
			}
			if len(f.ran) != tc.runs {
				t.Errorf("ran %d times, want %d", len(f.ran), tc.runs)
			}
			if strings.Join(log, ",") != strings.Join(tc.events, ",") {
				t.Errorf("hooks %q, want %q", log, tc.events)
			}
			if tc.check != nil && !t.Failed() {
				tc.check(t, s, &f)
			}
		})
	}
}

// writable says whether a rule of p makes dir writable.
func writable(p *policy.Policy, dir string) bool {
	for _, r := range p.Rules {
		if r.Path == dir && r.Access&policy.Write != 0 {
			return true
		}
	}
	return false
}

func TestRunChecksItsConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		err  string
	}{
		{"no command", Config{Spec: Spec{Grant: "inspect"}}, "no command to run"},
		{"an unknown reaction to denials", Config{Spec: Spec{Grant: "inspect"}, Argv: []string{"true"}, OnDenial: "shrug"}, `on denial "shrug"`},
	}
	for _, tc := range tests {
		f := fakePlatform{}
		tc.cfg.Platform = &f
		s, err := Run(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.err) || s.ExitCode != ExitFailed {
			t.Errorf("%s: %v, exit %d; want %q, %d", tc.name, err, s.ExitCode, tc.err, ExitFailed)
		}
	}
}

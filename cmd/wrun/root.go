package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/quote"
	"github.com/wrun-dev/wrun/run"
)

// policyFlags are the flags that shape a policy, shared by the run and
// explain commands.
type policyFlags struct {
	grant      string
	workdir    string
	allowRead  []string
	allowWrite []string
	allowUnix  []string
	allowHost  []string
	keepEnv    []string
	bestEffort bool
	json       bool
}

func (f *policyFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&f.grant, "grant", "g", grant.DefaultPreset, "the grant: a preset (inspect, verify, write, full) and/or fields, e.g. verify,network=off")
	fl.StringVarP(&f.workdir, "workdir", "C", "", "the workspace root the grant's files field applies to (default: the current directory)")
	fl.StringArrayVar(&f.allowRead, "allow-read", nil, "also allow reading `PATH` (repeatable; it must exist)")
	fl.StringArrayVar(&f.allowWrite, "allow-write", nil, "also allow writing beneath `PATH` (repeatable; it must exist)")
	fl.StringArrayVar(&f.allowHost, "allow-host", nil, "with network=loopback, also allow the host's loopback service `HOST[:PORT]` (127.0.0.1:5432, [::1]:6379, localhost:8080); with network=hosts, also any host wrun's proxy may reach (crates.io, *.example.com:443) (repeatable; without a port every port)")
	fl.StringArrayVar(&f.allowUnix, "allow-unix", nil, "also allow connecting and sending to the pathname UNIX socket `PATH` although it was bound outside the sandbox (repeatable; narrower than desktop=on)")
	fl.StringArrayVar(&f.keepEnv, "keep-env", nil, "pass environment variable `NAME` through although the grant would remove it (repeatable)")
	fl.BoolVar(&f.bestEffort, "best-effort", false, "run even if this kernel cannot enforce the whole grant; every output then says DEGRADED")
	fl.BoolVar(&f.json, "json", false, "machine-readable output (for a run: one JSON object on stderr at exit; stderr is shared with the command, so a harness that must trust it uses --json-fd)")
	_ = cmd.RegisterFlagCompletionFunc("grant", completeGrant)
}

// spec is the policy the flags describe.
func (f *policyFlags) spec() run.Spec {
	return run.Spec{
		Grant:      f.grant,
		Workdir:    f.workdir,
		AllowRead:  f.allowRead,
		AllowWrite: f.allowWrite,
		AllowUnix:  f.allowUnix,
		AllowHost:  f.allowHost,
		KeepEnv:    f.keepEnv,
		BestEffort: f.bestEffort,
	}
}

func completeGrant(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var out []string
	for _, p := range grant.Presets() {
		out = append(out, p.Name+"\t"+p.Summary)
	}
	if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
		prefix := toComplete[:i+1]
		out = out[:0]
		for _, field := range grant.FieldNames() {
			for _, v := range grant.FieldValues(field) {
				out = append(out, prefix+field+"="+v)
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
}

// usageError is a bad command line: exit 125 with a one-line message.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// exitError carries an exit status out of a cobra RunE.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

const longHelp = `wrun runs COMMAND under a real kernel sandbox (Landlock and seccomp on
Linux, a generated Seatbelt profile on macOS) computed from one grant. When
the grant does not allow something, the kernel refuses it; nothing runs
unsandboxed behind your back, and if this kernel cannot enforce the grant
wrun refuses to start (exit 125) unless you pass --best-effort.

A grant has five fields (files, shell, network, desktop, tools); a preset
names a common combination:

  preset    files  shell    network  what the child may do
  inspect   read   inspect  off      read (not the home directory beyond
                                     toolchains, nor root-only files), write only
                                     /dev/null and a private TMPDIR  [default]
  verify    read   verify   on       also write build outputs (cargo target/,
                                     a private Go cache) and git fetch plumbing
  write     write  verify   off      also write the workspace, except git
                                     config and hooks
  full      write  full     on       also write the user's tool caches

Fields: files=none|read|write  shell=none|inspect|verify|full
        network=off|loopback|hosts|on           desktop=off|on
        tools=read+search+...   (tool families a harness may give the
                                child: see wrun tools --help)
Give a preset, a preset with overrides (verify,network=off), or fields alone
(they override the default preset, inspect).

Settings come from built-in defaults, your config
($XDG_CONFIG_HOME/wrun/config.toml), the repository's .wrun.toml (which may
only narrow) and the flags, in that order; wrun config shows each and where it
came from. Every run appends a receipt (wrun receipts) and is listed while it
lives (wrun roster); a second writer into a live run's workspace is refused.

Exit status: the command's own; 128+N if signal N killed it; 125 if wrun
failed before the command started (bad flag, bad grant, unenforceable grant,
missing path) or a step it must take after a successful command failed
("wrun: FAILED after the run" says which); 126 if the command could not be
executed; 127 if it was not found.`

const examples = `  # read-only: look around, nothing can be written (the default grant)
  wrun -- git log -p

  # run the tests: the build may write its outputs, nothing else
  wrun --grant verify -- cargo test
  wrun --grant verify,network=off -- go test ./...

  # let a tool edit the workspace (but never .git/config or .git/hooks)
  wrun --grant write -- make fmt

  # one more writable path, for one run
  wrun --grant verify --allow-write ~/.cache/mytool -- mytool check

  # a role: its grant, model and thinking (wrun roles lists them)
  wrun --role verifier --thinking high -- go test ./...

  # what ran, what was refused, what runs now, which settings apply
  wrun receipts --denied
  wrun roster
  wrun config

  # what exactly does a grant allow here, and what does this kernel enforce?
  wrun explain --grant verify
  wrun profile --os darwin --grant verify   # the macOS profile, for review
  wrun doctor`

func newRootCmd(stdin, stdout, stderr *os.File) *cobra.Command {
	var pf policyFlags
	var rf runFlags
	var observe string
	root := &cobra.Command{
		Use:           "wrun [flags] -- COMMAND [ARGS...]",
		Short:         "Run a command under a kernel sandbox derived from one grant",
		Long:          longHelp,
		Example:       examples,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version(),
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			switch {
			case len(args) == 0:
				return &usageError{"no command: put it after --, e.g. wrun --grant verify -- cargo test"}
			case dash != 0:
				return &usageError{fmt.Sprintf("put the command after --: wrun [flags] -- %s", strings.Join(args, " "))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if observe != "on" && observe != "off" {
				return &usageError{fmt.Sprintf("--observe=%q: want on or off", observe)}
			}
			rf.noObserve = observe == "off"
			switch rf.onDenial {
			case "report", "ask", "retry", "hold":
			default:
				return &usageError{fmt.Sprintf("--on-denial=%q: want report, ask, retry or hold", rf.onDenial)}
			}
			if err := checkLiveFlags(rf, stdin, stdout, stderr); err != nil {
				return err
			}
			if rf.killAfter < 0 {
				return &usageError{fmt.Sprintf("--kill-after=%s: want a duration of 0 or more, e.g. 10s", rf.killAfter)}
			}
			if rf.retrySafe && rf.onDenial != "retry" {
				return &usageError{"--retry-safe goes with --on-denial=retry"}
			}
			if rf.jsonFD != 0 {
				// Checked before anything runs: a descriptor wrun was not
				// given, or one of the standard three, is refused.
				if rf.jsonFD < 3 {
					return &usageError{fmt.Sprintf("--json-fd=%d: want a descriptor above 2 that wrun inherited open (e.g. 3>summary.json)", rf.jsonFD)}
				}
				if _, err := unix.FcntlInt(uintptr(rf.jsonFD), unix.F_GETFD, 0); err != nil {
					return &usageError{fmt.Sprintf("--json-fd=%d: not an open descriptor of wrun (%v); open it for wrun, e.g. 3>summary.json", rf.jsonFD, err)}
				}
				if name := sharedWithCommand(rf.jsonFD, stdin, stdout, stderr); name != "" {
					return &usageError{fmt.Sprintf("--json-fd=%d is the same file as wrun's %s, which the command gets: it could write into the summary's channel; give the summary a file of its own (e.g. 3>summary.json)", rf.jsonFD, name)}
				}
			}
			if pf.json && rf.jsonFD == 0 && rf.keepBackground {
				return &usageError{"--json with --keep-background: the summary would go to stderr, which the command shares, and the processes it leaves running can write there after wrun's summary (a harness reading the last JSON object would take theirs); put the summary where the command cannot write: --json-fd N (e.g. --json-fd 3 3>summary.json)"}
			}
			if rf.approverTimeout <= 0 {
				return &usageError{fmt.Sprintf("--approver-timeout=%s: want a positive duration", rf.approverTimeout)}
			}
			if rf.approver != "" && rf.onDenial == "report" {
				return &usageError{"--approver goes with --on-denial=ask, retry or hold"}
			}
			fl := cmd.Flags()
			rf.grantSet = fl.Changed("grant")
			rf.timeoutSet = fl.Changed("approver-timeout")
			rf.onDenialSet = fl.Changed("on-denial")
			if rf.noReceipt && rf.receiptFile != "" {
				return &usageError{"--no-receipt and --receipt-file: give one"}
			}
			return runCommand(&pf, rf, args, stdin, stdout, stderr)
		},
	}
	root.Flags().SetInterspersed(false)
	pf.register(root)
	fl := root.Flags()
	fl.DurationVar(&rf.killAfter, "kill-after", 10*time.Second, "after wrun forwards a SIGTERM, SIGINT or SIGHUP, give the command this `DURATION` to end, then kill everything in the sandbox (0: wait as long as it takes)")
	fl.BoolVar(&rf.keepBackground, "keep-background", false, "leave processes the command started in the background running after it exits (default: wrun ends them)")
	fl.StringVar(&observe, "observe", "on", "on: report exactly what the sandbox denied (seccomp user notification); off: infer it from the command's stderr")
	fl.StringVar(&rf.escalationFile, "escalation-file", "", "when something was denied, write the escalation request (JSON) to `PATH`")
	fl.StringVar(&rf.onDenial, "on-denial", "report", "report: say what was denied and what to do instead; ask: also ask for approval (terminal or --approver); retry: ask, then rerun once with the approved widening; hold: hold a write or create the grant withholds while the command runs, ask on --control-fd, and perform it if approved (Linux)")
	fl.StringVar(&rf.approver, "approver", "", "run `CMD` (sh -c) with the request on stdin; it answers with a JSON decision on stdout")
	fl.IntVar(&rf.jsonFD, "json-fd", 0, "write the run's JSON summary alone to descriptor `N` (opened for wrun, e.g. 3>summary.json; never passed to the command); stderr keeps the human lines")
	fl.IntVar(&rf.eventsFD, "events-fd", 0, "write JSON lines to descriptor `N` while the command runs (started, each denial as it happens, held calls and their answers, exited with the summary); never passed to the command")
	fl.IntVar(&rf.controlFD, "control-fd", 0, "with --on-denial=hold: ask and read answers on socket descriptor `N` (JSON lines both ways; docs/harness.md; without it, --approver is asked); never passed to the command")
	fl.DurationVar(&rf.holdTimeout, "hold-timeout", run.DefaultHoldTimeout, "with --on-denial=hold: how long a held call waits for its answer (`DURATION`), then fails as denied")
	fl.DurationVar(&rf.approverTimeout, "approver-timeout", run.DefaultApproverTimeout, "give the --approver command this `DURATION` to answer, then kill its process group and take it as a denial")
	fl.StringVar(&rf.ceiling, "ceiling", "", "no grant or approval may exceed this grant `SPEC` (default: WRUN_CEILING, else full with desktop off); exported to children as WRUN_CEILING")
	fl.BoolVar(&rf.retrySafe, "retry-safe", false, "the command may be rerun without asking (with --on-denial=retry)")
	fl.StringVar(&rf.role, "role", "", "run in role `NAME` (scout, planner, verifier, worker, conductor, or one from the config; see wrun roles): its grant, model and thinking; --grant then narrows the role's grant")
	fl.StringVar(&rf.model, "model", "", "the `MODEL` the child runs (recorded in the roster and receipts; the thinking level is checked against what it supports)")
	fl.StringVar(&rf.thinking, "thinking", "", "the thinking `LEVEL`: off, low, medium, high or max (checked against the model's supported levels)")
	fl.StringVar(&rf.receiptFile, "receipt-file", "", "append this run's receipt to `PATH` instead of $XDG_STATE_HOME/wrun/receipts.jsonl")
	fl.BoolVar(&rf.noReceipt, "no-receipt", false, "write no receipt for this run")
	fl.BoolVar(&rf.shareWorkdir, "share-workdir", false, "allow another live run that also passes --share-workdir to write the same directories (otherwise a second writer is refused)")
	fl.BoolVarP(&rf.verbose, "verbose", "v", false, "also say which environment variables the command did not get (names only; they are not on the allowlist)")
	root.SetVersionTemplate("wrun {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err.Error()} })
	root.AddCommand(newExplainCmd(stdout), newDoctorCmd(stdout), newProfileCmd(stdout), newToolsCmd(stdin, stdout),
		newConfigCmd(stdout), newRolesCmd(stdout), newReceiptsCmd(stdout), newRosterCmd(stdout), newCacheCmd(stdout),
		newHookCmd(stdin, stdout, stderr))
	return root
}

// execute runs wrun with args (os.Args[1:]) and returns its exit status.
func execute(args []string, stdin, stdout, stderr *os.File) int {
	if err := run.Init(); err != nil {
		fmt.Fprintln(stderr, "wrun:", quote.Line(err.Error()))
		return exitWrunFailed
	}
	root := newRootCmd(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	var ee *exitError
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "wrun: %s\nRun 'wrun --help' for usage.\n", ue.msg)
		return exitWrunFailed
	default:
		if strings.HasPrefix(err.Error(), "unknown command") {
			fmt.Fprintf(stderr, "wrun: %s\nPut the command after --, e.g. wrun -- %s\n", err, strings.Join(args, " "))
			return exitWrunFailed
		}
		fmt.Fprintln(stderr, "wrun:", quote.Line(err.Error()))
		return exitWrunFailed
	}
}

func writeJSON(w io.Writer, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) == nil {
		_, _ = w.Write(quote.JSON(buf.Bytes()))
	}
}

// sharedWithCommand names the standard stream of wrun (stdin, stdout,
// stderr: the command's own) that descriptor fd is the same file as, or
// "" when it is none of them. /dev/null is shared harmlessly.
func sharedWithCommand(fd int, stdin, stdout, stderr *os.File) string {
	// A duplicate, so that closing it (or its finalizer) leaves fd open.
	dup, err := unix.Dup(fd)
	if err != nil {
		return ""
	}
	f := os.NewFile(uintptr(dup), "json-fd")
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		return ""
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
		return ""
	}
	for _, s := range []struct {
		name string
		f    *os.File
	}{{"stdin", stdin}, {"stdout", stdout}, {"stderr", stderr}} {
		if s.f == nil {
			continue
		}
		if sfi, err := s.f.Stat(); err == nil && os.SameFile(fi, sfi) {
			return s.name
		}
	}
	return ""
}

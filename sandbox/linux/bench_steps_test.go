//go:build linux

package linux

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// The launch, step by step, for `go test -run '^$' -bench Step
// ./sandbox/linux` (and ./policy, ./verify, ./run for the steps that live
// there). Each benchmark times one step of `wrun --grant inspect -- true`
// with this package's directory as the workspace and the host as wrun
// sees it (the real home, the search for private files of the user
// running the benchmark), so that the cost of each protection shows. The
// total is BenchmarkStepLaunch; scripts/bench times the whole program.

// benchNoopArg0 makes this test binary exit at once when re-executed: the
// cost of starting a Go program again, the floor of the stage.
const benchNoopArg0 = "wrun:bench-noop"

func init() {
	// This test binary doubles as the stage (Run re-executes
	// /proc/self/exe), as wrun's main does.
	switch os.Args[0] {
	case Stage2Arg0:
		Stage2()
	case benchNoopArg0:
		os.Exit(0)
	}
}

// hostPlan is the plan wrun makes for `--grant inspect` here, as run's
// hostFacts fills the host in: with the caller's identity and its search
// for private files (scan) or without it.
func hostPlan(b *testing.B, tmp string, scan bool, o sandbox.Options) *Plan {
	b.Helper()
	p := hostPolicy(b, tmp, scan)
	pl, err := NewPlan(p, probed(), o)
	if err != nil {
		b.Fatal(err)
	}
	return pl
}

func hostPolicy(b *testing.B, tmp string, scan bool) *policy.Policy {
	b.Helper()
	wd, err := os.Getwd()
	if err != nil {
		b.Fatal(err)
	}
	g, err := grant.Parse("inspect")
	if err != nil {
		b.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	h := policy.Host{Workdir: wd, Home: filepath.Clean(home), Env: os.Environ(), TempDir: tmp, Sandbox: Platform,
		Identity: policy.Identity{Uid: os.Geteuid(), Gids: []int{os.Getegid()}}}
	if scan {
		h.Scan = policy.ScanRoots(h.Identity.Uid)
	}
	p, err := policy.Compute(g, h, policy.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// scanModes runs f with and without the search for private files: the
// difference is what hiding them (and carving around them) costs.
func scanModes(b *testing.B, f func(b *testing.B, scan bool)) {
	for _, scan := range []bool{false, true} {
		name := "noscan"
		if scan {
			name = "scan"
		}
		b.Run(name, func(b *testing.B) { f(b, scan) })
	}
}

// BenchmarkStepPlan is NewPlan alone: the policy made concrete, carving
// included (policy.BenchmarkStepCarve has the carving alone).
func BenchmarkStepPlan(b *testing.B) {
	scanModes(b, func(b *testing.B, scan bool) {
		p := hostPolicy(b, b.TempDir(), scan)
		f := probed()
		var n int
		for b.Loop() {
			pl, err := NewPlan(p, f, sandbox.Options{BestEffort: true})
			if err != nil {
				b.Fatal(err)
			}
			n = len(pl.Rules)
		}
		b.ReportMetric(float64(n), "rules")
	})
}

// BenchmarkStepRuleset is building the Landlock ruleset: one open, fstat
// and landlock_add_rule per rule.
func BenchmarkStepRuleset(b *testing.B) {
	requireABI(b, 1)
	scanModes(b, func(b *testing.B, scan bool) {
		pl := hostPlan(b, b.TempDir(), scan, sandbox.Options{BestEffort: true})
		r := pl.restriction(false)
		for b.Loop() {
			rs, err := r.ruleset()
			if err != nil {
				b.Fatal(err)
			}
			rs.close()
		}
		b.ReportMetric(float64(len(r.Rules)), "rules")
	})
}

// BenchmarkStepFilter is building and assembling the seccomp program, as
// restrict does (built once, assembled by loadFilter).
func BenchmarkStepFilter(b *testing.B) {
	for _, obs := range []bool{false, true} {
		name := "plain"
		if obs {
			name = "observe"
		}
		b.Run(name, func(b *testing.B) {
			spec := seccompSpec{DenyInet: true, IsolatedIPC: true, Observe: obs}
			for b.Loop() {
				if _, err := bpf.Assemble(buildFilter(spec)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStepSpec is handing the stage its sandbox: the JSON wrun
// encodes and the stage decodes (the rules dominate).
func BenchmarkStepSpec(b *testing.B) {
	scanModes(b, func(b *testing.B, scan bool) {
		pl := hostPlan(b, b.TempDir(), scan, sandbox.Options{BestEffort: true})
		spec := stage2Spec{Restriction: *pl.restriction(false), Writable: pl.writable(),
			Argv: []string{"true"}, Env: pl.Policy.Env, Cwd: pl.Policy.Cwd}
		var size int
		for b.Loop() {
			raw, err := json.Marshal(spec)
			if err != nil {
				b.Fatal(err)
			}
			var back stage2Spec
			if err := json.Unmarshal(raw, &back); err != nil {
				b.Fatal(err)
			}
			size = len(raw)
		}
		b.ReportMetric(float64(size), "bytes")
	})
}

// BenchmarkStepClone is starting and reaping /bin/true (fork/exec, wait4)
// plainly, in the stage's namespaces (PID, IPC, mount), and in them inside
// a new user namespace (the unprivileged path): what the namespaces cost.
func BenchmarkStepClone(b *testing.B) {
	truePath := "/bin/true"
	if _, err := os.Stat(truePath); err != nil {
		b.Skip("no /bin/true")
	}
	uid, gid := os.Getuid(), os.Getgid()
	cases := []struct {
		name string
		attr *syscall.SysProcAttr
	}{
		{"fork", &syscall.SysProcAttr{}},
		{"namespaces", &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWNS}},
		{"userns", &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWNS,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			GidMappingsEnableSetgroups: false}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if c.attr.Cloneflags&unix.CLONE_NEWUSER != 0 && !probed().UserNS {
				b.Skip("user namespaces are not available")
			}
			if c.attr.Cloneflags&unix.CLONE_NEWNS != 0 && c.attr.Cloneflags&unix.CLONE_NEWUSER == 0 && !probed().MountNS {
				b.Skip("no CAP_SYS_ADMIN for namespaces without a user namespace")
			}
			for b.Loop() {
				forkWait(b, truePath, []string{"true"}, c.attr)
			}
		})
	}
}

// BenchmarkStepReexec is the stage's own floor: re-executing this (Go)
// binary, which exits from an init function, plainly and into the
// stage's namespaces. Compare with BenchmarkStepClone: the difference is
// the Go runtime's start. (A test binary is larger than wrun; its start
// is an upper bound of wrun's.)
func BenchmarkStepReexec(b *testing.B) {
	cases := []struct {
		name  string
		flags uintptr
	}{
		{"plain", 0},
		{"namespaces", unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWNS},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if c.flags != 0 && !probed().MountNS {
				b.Skip("no CAP_SYS_ADMIN for namespaces without a user namespace")
			}
			for b.Loop() {
				forkWait(b, "/proc/self/exe", []string{benchNoopArg0}, &syscall.SysProcAttr{Cloneflags: c.flags})
			}
		})
	}
}

func forkWait(b *testing.B, path string, argv []string, attr *syscall.SysProcAttr) {
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: []string{}, Sys: attr})
	if err != nil {
		b.Fatal(err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		b.Fatal(err)
	}
	if ws.ExitStatus() != 0 {
		b.Fatalf("%s exited with %v", path, ws)
	}
}

// onThrowawayThread runs f on a locked thread that the Go runtime discards
// afterwards, so what f changes of its thread (mount namespace, Landlock
// domain, seccomp filter, capabilities) goes with it.
func onThrowawayThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		errc <- f()
	}()
	return <-errc
}

// BenchmarkStepView is the stage's view of the file system (makeView): a
// private mount namespace, everything read-only and nosuid, the writable
// paths bound back, the protected paths bound over themselves, a /proc.
// Made on a throwaway thread (plus its unshare), as root only.
func BenchmarkStepView(b *testing.B) {
	if !probed().MountNS {
		b.Skip("needs CAP_SYS_ADMIN (the stage has it in its user namespace; a benchmark cannot)")
	}
	pl := hostPlan(b, b.TempDir(), true, sandbox.Options{BestEffort: true})
	for _, cr := range pl.Create {
		if err := create(cr); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		spec := stage2Spec{Restriction: *pl.restriction(false), Writable: pl.writable()}
		err := onThrowawayThread(func() error {
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				return err
			}
			return makeView(&spec)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(pl.writable())), "writable")
	b.ReportMetric(float64(len(pl.Mounts)), "protected")
}

// BenchmarkStepRestrict is restrict on a throwaway thread with the
// ruleset and filter built: no_new_privs, dropping capabilities,
// landlock_restrict_self, loading the seccomp filter (with the observer's
// listener). The mounts are BenchmarkStepView's.
func BenchmarkStepRestrict(b *testing.B) {
	requireABI(b, 1)
	pl := hostPlan(b, b.TempDir(), true, sandbox.Options{BestEffort: true})
	r := pl.restriction(false)
	r.Mounts = nil
	rs, err := r.ruleset()
	if err != nil {
		b.Fatal(err)
	}
	defer rs.close()
	prog := r.filter()
	for b.Loop() {
		err := onThrowawayThread(func() error {
			l, err := restrict(r, rs, prog)
			if l >= 0 {
				unix.Close(l)
			}
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStepLaunch is Run of the inspect plan with `true`, every step
// from the plan on: through the stage where this process may make
// namespaces (as root, or in a user namespace), the observer and the
// audit reader on or off. The plan itself (and the policy) is not in it:
// see BenchmarkStepPlan and policy's benchmarks.
func BenchmarkStepLaunch(b *testing.B) {
	truePath := "/bin/true"
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer null.Close()
	for _, noObs := range []bool{true, false} {
		name := "observe"
		if noObs {
			name = "noobserve"
		}
		b.Run(name, func(b *testing.B) {
			pl := hostPlan(b, b.TempDir(), true, sandbox.Options{BestEffort: true, NoObserve: noObs})
			for b.Loop() {
				res, err := Run(pl, sandbox.Command{Argv: []string{truePath}, Stdin: null, Stdout: null, Stderr: null})
				if err != nil {
					b.Fatal(err)
				}
				if res.ExitCode != 0 {
					b.Fatalf("true exited %d: %v", res.ExitCode, res.Warnings)
				}
			}
			b.ReportMetric(float64(len(pl.Rules)), "rules")
			if pl.stage {
				b.ReportMetric(1, "stage")
			}
		})
	}
}

// BenchmarkStepMaskByMount is the stage hiding the plan's masked hidden
// paths (maskHidden: an empty, read-only file or directory of mode 000
// bound over each), which replaced carving their siblings into Landlock
// rules (BenchmarkStepPlan, BenchmarkStepRuleset and BenchmarkStepSpec show
// what is left of carving). Made on a throwaway thread, as root only.
func BenchmarkStepMaskByMount(b *testing.B) {
	if !probed().MountNS {
		b.Skip("needs CAP_SYS_ADMIN")
	}
	pl := hostPlan(b, b.TempDir(), true, sandbox.Options{BestEffort: true})
	masks := pl.maskPaths()
	for b.Loop() {
		err := onThrowawayThread(func() error {
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				return err
			}
			if err := enterMountNS(false); err != nil {
				return err
			}
			return maskHidden(masks)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(masks)), "masks")
}

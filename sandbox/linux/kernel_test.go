//go:build linux

package linux

// Kernel tests: a Landlock domain or a seccomp filter cannot be lifted once
// applied, so each case that restricts runs in a fresh process of this test
// binary. The test process makes the case's directory, then re-runs the one
// subtest (-test.run) with the case's name and directory in the
// environment. That child restricts a locked thread with restrictLaunch,
// as the launcher does, performs one operation on it and
// prints the errno on a marked line, which the parent
// compares with the table. The thread is never unlocked, so the Go runtime
// discards it when the subtest returns.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

const (
	envChild   = "WRUN_KERNEL_TEST_CHILD" // the full name of the subtest a child runs
	envDir     = "WRUN_KERNEL_TEST_DIR"   // the case's directory
	envArg     = "WRUN_KERNEL_TEST_ARG"   // what the case's setup returned
	resultMark = "wrun-kernel-test-result: "
)

var probed = sync.OnceValue(Probe)

// kernelABI is the Landlock ABI of the running kernel (0 without Landlock).
func kernelABI() int { return probed().LandlockABI }

// requireABI skips the test unless the kernel has Landlock ABI n.
func requireABI(t testing.TB, n int) {
	t.Helper()
	if f := probed(); f.LandlockABI < n {
		why := ""
		if f.LandlockError != "" {
			why = ": " + f.LandlockError
		}
		t.Skipf("needs Landlock ABI %d (%s); this kernel has ABI %d%s", n, abiKernel(n), f.LandlockABI, why)
	}
}

// requireSeccomp skips the test unless seccomp filters can be loaded.
func requireSeccomp(t testing.TB) {
	t.Helper()
	if !probed().Seccomp {
		t.Skip("needs seccomp filter mode (CONFIG_SECCOMP_FILTER)")
	}
}

// kcase is one operation under one restriction, run in a child process.
type kcase struct {
	name string
	// abi is the Landlock ABI the case needs (0: none).
	abi int
	// landlock builds the ruleset for the case's directory; nil applies no
	// Landlock ruleset. It runs in the child, before the restriction.
	landlock func(t testing.TB, dir string) (rulesetAttr, []fsRule)
	// seccomp, if set, is loaded after the ruleset.
	seccomp *seccompSpec
	// enclosed: before the restriction, a filter with a listener is
	// loaded, as an enclosing wrun's would be.
	enclosed bool
	// setup prepares dir in the test process (never in the child) and
	// returns an argument for op.
	setup func(t *testing.T, dir string) string
	// op is the one operation, performed on the restricted thread.
	op func(dir, arg string) error
	// want is op's errno; 0 means it must succeed.
	want unix.Errno
}

// runCases runs each case as a subtest, in parallel.
func runCases(t *testing.T, cases []kcase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.abi > 0 {
				requireABI(t, c.abi)
			}
			if c.seccomp != nil {
				requireSeccomp(t)
			}
			if os.Getenv(envChild) == t.Name() {
				childRun(t, c)
				return
			}
			got := parentRun(t, c)
			if got != c.want {
				t.Errorf("got %s, want %s", errnoString(got), errnoString(c.want))
			}
		})
	}
}

// parentRun prepares the case's directory and runs the case in a child.
func parentRun(t *testing.T, c kcase) unix.Errno {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var arg string
	if c.setup != nil {
		arg = c.setup(t, dir)
	}
	cmd := exec.Command(os.Args[0], "-test.run="+runPattern(t.Name()), "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envChild+"="+t.Name(), envDir+"="+dir, envArg+"="+arg)
	out, err := cmd.CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		v, ok := strings.CutPrefix(l, resultMark)
		if !ok {
			continue
		}
		n, perr := strconv.Atoi(v)
		if perr != nil {
			t.Fatalf("the child could not run the case: %s\n%s", v, out)
		}
		return unix.Errno(n)
	}
	t.Fatalf("the child reported no result (%v):\n%s", err, out)
	return 0
}

// childRun restricts the calling thread and performs the operation.
func childRun(t *testing.T, c kcase) {
	// Never unlocked: the restricted thread ends with this goroutine.
	runtime.LockOSThread()
	dir, arg := os.Getenv(envDir), os.Getenv(envArg)
	report := func(s string) { fmt.Printf("\n%s%s\n", resultMark, s) }
	if err := restrictForTest(t, c, dir); err != nil {
		var errno unix.Errno
		switch {
		case errors.Is(err, errListenerTaken):
			report(strconv.Itoa(int(unix.EBUSY)))
		case errors.As(err, &errno):
			report(strconv.Itoa(int(errno)))
		default:
			report(strings.ReplaceAll(err.Error(), "\n", " "))
		}
		return
	}
	err := c.op(dir, arg)
	var errno unix.Errno
	switch {
	case err == nil:
		report("0")
	case errors.As(err, &errno):
		report(strconv.Itoa(int(errno)))
	default:
		report("not an errno: " + err.Error())
	}
}

func restrictForTest(t *testing.T, c kcase, dir string) error {
	if c.enclosed {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("no_new_privs: %w", err)
		}
		// Never served: the filter sends nothing to it.
		raw, err := bpf.Assemble(buildFilter(seccompSpec{}))
		if err != nil {
			return err
		}
		if _, err := loadFilter(raw, true, false); err != nil {
			return fmt.Errorf("the enclosing filter: %w", err)
		}
	}
	r := launchRestriction{}
	if c.landlock != nil {
		attr, rules := c.landlock(t, dir)
		rs, err := buildRuleset(attr, rules)
		if err != nil {
			return err
		}
		defer rs.close()
		r.rs = rs
	}
	if c.seccomp != nil {
		r.seccomp, r.spec = true, *c.seccomp
		r.listen = c.seccomp.Mediate
	}
	listener, _, err := restrictLaunch(r)
	if listener >= 0 {
		// Nothing serves it: closed, the calls it would see fail with
		// ENOSYS rather than wait.
		unix.Close(listener)
	}
	return err
}

// runPattern is a -test.run pattern that matches exactly the test named.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

func errnoString(e unix.Errno) string {
	if e == 0 {
		return "success"
	}
	if n := unix.ErrnoName(e); n != "" {
		return n + " (" + e.Error() + ")"
	}
	return e.Error()
}

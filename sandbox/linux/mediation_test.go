//go:build linux

package linux

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// The mediation for real: each case runs in a fresh process of this test
// binary, which plans a policy (a writable workspace that is a git
// repository, its config and hooks protected), restricts one locked
// thread exactly as the launch thread is restricted, serves the
// thread's listener with the supervisor from its other threads, and
// makes one call on the restricted thread. The parent checks the call's
// errno, the denials the supervisor recorded, and what is on disk.
//
// The workspace, $W: .git/{config,hooks/,objects/,HEAD}, src/a.c,
// README; outside it, $O/victim.

const (
	envMedChild = "WRUN_MEDIATION_TEST_CHILD"
	envMedDir   = "WRUN_MEDIATION_TEST_DIR"
	medMark     = "wrun-mediation-test-result: "
)

// mcase is one call under the workspace's plan.
type mcase struct {
	name string
	// grant is the plan's grant ("write" unless set).
	grant string
	op    func(w, o string) error
	want  unix.Errno
	// effect says what the call left on disk that it must not have ("":
	// nothing); made, what it must have made ("" when nothing).
	effect func(w, o string) string
	// denial is a substring of a recorded denial ("op path-relative-to-W")
	// the call must leave; "" for none.
	denial string
}

type medResult struct {
	Errno   int      `json:"errno"`
	Err     string   `json:"err,omitempty"`
	Denials []string `json:"denials"`
}

func medTree(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{"w/.git/hooks", "w/.git/objects", "w/src", "o"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, c := range map[string]string{"w/.git/config": "[core]\n", "w/.git/HEAD": "ref: refs/heads/main\n",
		"w/src/a.c": "int a;\n", "w/README": "hi\n", "o/victim": "victim\n"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func medPolicy(t testing.TB, dir, grantSpec string) *policy.Policy {
	g, err := grant.Parse(grantSpec)
	if err != nil {
		t.Fatal(err)
	}
	w := filepath.Join(dir, "w")
	p := &policy.Policy{Grant: g, Rules: []policy.Rule{{Path: "/", Access: policy.ReadExec}}}
	if g.Files == grant.FilesWrite {
		p.Rules = append(p.Rules, policy.Rule{Path: w, Access: policy.ReadWrite})
	}
	p.Protected = []policy.Protected{
		{Path: filepath.Join(w, ".git/config"), Exists: true, Within: w},
		{Path: filepath.Join(w, ".git/hooks"), Dir: true, Exists: true, Within: w},
		{Path: filepath.Join(w, ".git"), Dir: true, Exists: true, Pin: true, Within: w},
		{Path: filepath.Join(w, ".git/commondir"), Within: w},
	}
	return p
}

// runMediation runs each case as a subtest in a child process.
func runMediation(t *testing.T, cases []mcase) {
	t.Helper()
	requireABI(t, 2)
	f := probed()
	if !f.mediates() {
		t.Skipf("needs the mediation: seccomp user notification with ADDFD and ptrace access to children (this machine: %s)", f.Name())
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if os.Getenv(envMedChild) == t.Name() {
				// Not parallel: what the test made for the case (a
				// listener) lives until the test function returns.
				medChild(t, c)
				return
			}
			t.Parallel()
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			medTree(t, dir)
			cmd := exec.Command(os.Args[0], "-test.run="+runPattern(t.Name()), "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), envMedChild+"="+t.Name(), envMedDir+"="+dir)
			out, _ := cmd.CombinedOutput()
			var res *medResult
			for _, l := range strings.Split(string(out), "\n") {
				if v, ok := strings.CutPrefix(l, medMark); ok {
					res = new(medResult)
					if err := json.Unmarshal([]byte(v), res); err != nil {
						t.Fatalf("bad result %q: %v", v, err)
					}
				}
			}
			if res == nil {
				t.Fatalf("the child reported no result:\n%s", out)
			}
			if res.Err != "" {
				t.Fatalf("the child could not run the case: %s\n%s", res.Err, out)
			}
			w, o := filepath.Join(dir, "w"), filepath.Join(dir, "o")
			if got := unix.Errno(res.Errno); got != c.want {
				t.Errorf("got %s, want %s (denials %q)", errnoString(got), errnoString(c.want), res.Denials)
			}
			if c.effect != nil {
				if e := c.effect(w, o); e != "" {
					t.Errorf("effect: %s", e)
				}
			}
			joined := strings.Join(res.Denials, "; ")
			if c.denial == "" && len(res.Denials) > 0 && c.want == 0 {
				t.Errorf("a call that succeeded left denials: %q", res.Denials)
			}
			if c.denial != "" && !strings.Contains(joined, c.denial) {
				t.Errorf("denials %q, want one with %q", res.Denials, c.denial)
			}
		})
	}
}

// medChild is the child's side: plan, restrict, serve, call.
func medChild(t *testing.T, c mcase) {
	report := func(r medResult) {
		b, _ := json.Marshal(r)
		fmt.Printf("\n%s%s\n", medMark, b)
	}
	dir := os.Getenv(envMedDir)
	g := c.grant
	if g == "" {
		g = "write"
	}
	pl, err := NewPlan(medPolicy(t, dir, g), probed(), sandbox.Options{BestEffort: true})
	if err != nil {
		report(medResult{Err: err.Error()})
		return
	}
	rs, err := buildRuleset(pl.attr, fsRules(pl.Rules))
	if err != nil {
		report(medResult{Err: err.Error()})
		return
	}
	type restricted struct {
		listener, tid int
		err           error
	}
	ready := make(chan restricted, 1)
	go_ := make(chan *supervisor, 1)
	result := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: restricted for good
		l, _, err := restrictLaunch(launchRestriction{rs: rs, seccomp: true, spec: pl.seccomp,
			listen: true, waitKillable: pl.Features.WaitKillable})
		ready <- restricted{l, unix.Gettid(), err}
		if err != nil {
			return
		}
		if <-go_ == nil {
			return
		}
		result <- c.op(filepath.Join(dir, "w"), filepath.Join(dir, "o"))
	}()
	r := <-ready
	if r.err != nil {
		report(medResult{Err: r.err.Error()})
		return
	}
	sup, err := newSupervisor(r.listener, pl, r.tid, rs)
	if err != nil {
		go_ <- nil
		report(medResult{Err: err.Error()})
		return
	}
	go sup.run()
	go_ <- sup
	opErr := <-result
	denials, _ := sup.stop()
	res := medResult{}
	var errno unix.Errno
	switch {
	case opErr == nil:
	case errors.As(opErr, &errno):
		res.Errno = int(errno)
	default:
		res.Err = "not an errno: " + opErr.Error()
	}
	w := filepath.Join(dir, "w") + "/"
	for _, d := range denials {
		res.Denials = append(res.Denials, d.Op+" "+strings.TrimPrefix(strings.TrimPrefix(d.Path, w), dir+"/")+" "+d.Right)
	}
	report(res)
}

func creat(p string) error {
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	_, err = unix.Write(fd, []byte("made\n"))
	unix.Close(fd)
	return err
}

func appendTo(p string) error {
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	_, err = unix.Write(fd, []byte("planted\n"))
	unix.Close(fd)
	return err
}

// made says the file at p must exist with content want.
func made(rel, want string) func(w, o string) string {
	return func(w, _ string) string {
		b, err := os.ReadFile(filepath.Join(w, rel))
		if err != nil {
			return rel + " was not made: " + err.Error()
		}
		if string(b) != want {
			return fmt.Sprintf("%s holds %q, want %q", rel, b, want)
		}
		return ""
	}
}

// absent says nothing may be at rel.
func absent(rel string) func(w, o string) string {
	return func(w, _ string) string {
		if _, err := os.Lstat(filepath.Join(w, rel)); err == nil {
			return rel + " exists"
		}
		return ""
	}
}

// unchanged says the file at rel keeps its content.
func unchanged(rel, want string) func(w, o string) string {
	return func(w, _ string) string {
		b, err := os.ReadFile(filepath.Join(w, rel))
		if err != nil || string(b) != want {
			return fmt.Sprintf("%s now holds %q (%v)", rel, b, err)
		}
		return ""
	}
}

// TestMediationCreates: what Landlock cannot grant beside protected paths
// (new entries in the workspace root and .git, and beneath what is made
// there) is made by wrun; protected names and inodes are refused whatever
// name reaches them; what Landlock decides stays decided by it.
func TestMediationCreates(t *testing.T) {
	j := filepath.Join
	runMediation(t, []mcase{
		{name: "a new file in the workspace root", op: func(w, _ string) error { return creat(j(w, "new.txt")) }, effect: made("new.txt", "made\n")},
		{name: "git's index.lock in .git", op: func(w, _ string) error { return creat(j(w, ".git/index.lock")) }, effect: made(".git/index.lock", "made\n")},
		{name: "a file in a directory made in the root", op: func(w, _ string) error {
			if err := unix.Mkdir(j(w, "build"), 0o755); err != nil {
				return err
			}
			if err := unix.Mkdir(j(w, "build/sub"), 0o755); err != nil {
				return err
			}
			return creat(j(w, "build/sub/out.o"))
		}, effect: made("build/sub/out.o", "made\n")},
		{name: "a new file in a carved sibling (Landlock decides)", op: func(w, _ string) error { return creat(j(w, "src/b.c")) }, effect: made("src/b.c", "made\n")},
		{name: "a hook", op: func(w, _ string) error { return creat(j(w, ".git/hooks/pre-commit")) }, want: unix.EACCES,
			effect: absent(".git/hooks/pre-commit"), denial: ".git/hooks/pre-commit"},
		{name: "append to the config", op: func(w, _ string) error { return appendTo(j(w, ".git/config")) }, want: unix.EACCES,
			effect: unchanged(".git/config", "[core]\n"), denial: ".git/config"},
		{name: "the config through a link made in the root", op: func(w, _ string) error {
			if err := unix.Symlink(".git/config", j(w, "cfg")); err != nil {
				return err
			}
			return appendTo(j(w, "cfg"))
		}, want: unix.EACCES, effect: unchanged(".git/config", "[core]\n"), denial: ".git/config"},
		{name: "a hard link to the config", op: func(w, _ string) error { return unix.Link(j(w, ".git/config"), j(w, "cfg")) },
			want: unix.EACCES, effect: absent("cfg"), denial: ".git/config"},
		{name: "rename the config away", op: func(w, _ string) error { return unix.Rename(j(w, ".git/config"), j(w, "cfg")) },
			want: unix.EACCES, effect: unchanged(".git/config", "[core]\n"), denial: ".git/config"},
		{name: "rename a file over the config", op: func(w, _ string) error { return unix.Rename(j(w, "README"), j(w, ".git/config")) },
			want: unix.EACCES, effect: unchanged(".git/config", "[core]\n"), denial: ".git/config"},
		{name: "exchange the config", op: func(w, _ string) error {
			return unix.Renameat2(unix.AT_FDCWD, j(w, "README"), unix.AT_FDCWD, j(w, ".git/config"), unix.RENAME_EXCHANGE)
		}, want: unix.EACCES, effect: unchanged(".git/config", "[core]\n"), denial: ".git/config"},
		{name: "rename the gitdir", op: func(w, _ string) error { return unix.Rename(j(w, ".git"), j(w, "git2")) },
			want: unix.EACCES, effect: absent("git2"), denial: ".git"},
		{name: "unlink the config", op: func(w, _ string) error { return unix.Unlink(j(w, ".git/config")) },
			want: unix.EACCES, effect: unchanged(".git/config", "[core]\n"), denial: ".git/config"},
		{name: "remove the hooks", op: func(w, _ string) error { return unix.Rmdir(j(w, ".git/hooks")) },
			want: unix.EACCES, denial: ".git/hooks"},
		{name: "a commondir, which git never makes in a git dir (refused when made)", op: func(w, _ string) error { return creat(j(w, ".git/commondir")) },
			want: unix.EACCES, effect: absent(".git/commondir"), denial: ".git/commondir"},
		{name: "an editor's save: write a temporary, rename it over the file", op: func(w, _ string) error {
			if err := creat(j(w, ".README.swp")); err != nil {
				return err
			}
			return unix.Rename(j(w, ".README.swp"), j(w, "README"))
		}, effect: made("README", "made\n")},
		{name: "a rename from a sibling into the root", op: func(w, _ string) error { return unix.Rename(j(w, "src/a.c"), j(w, "a.c")) }, effect: made("a.c", "int a;\n")},
		{name: "a file outside", op: func(_, o string) error { return creat(filepath.Join(o, "new")) }, want: unix.EACCES,
			denial: "create o/new make_reg"},
		{name: "a link to a file outside, into the root", op: func(w, o string) error { return unix.Link(filepath.Join(o, "victim"), j(w, "v")) },
			want: unix.EXDEV, effect: absent("v")},
		{name: "mkdir setuid", op: func(w, _ string) error { return unix.Mkdir(j(w, "d"), 0o4755) }, want: unix.EPERM, denial: "set_id"},
		{name: "create setgid", op: func(w, _ string) error {
			fd, err := unix.Open(j(w, "s"), unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o2755)
			if err == nil {
				unix.Close(fd)
			}
			return err
		}, want: unix.EPERM, effect: absent("s"), denial: "set_id"},
		{name: "under inspect, a new file in the workspace", grant: "inspect", op: func(w, _ string) error { return creat(j(w, "x")) },
			want: unix.EACCES, effect: absent("x"), denial: "create x make_reg"},
		{name: "openat2 creating in the root", op: func(w, _ string) error {
			how := unix.OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_CLOEXEC, Mode: 0o644}
			fd, err := unix.Openat2(unix.AT_FDCWD, j(w, "o2"), &how)
			if err == nil {
				unix.Close(fd)
			}
			return err
		}, effect: func(w, _ string) string {
			if _, err := os.Stat(j(w, "o2")); err != nil {
				return "o2 was not made"
			}
			return ""
		}},
		{name: "openat2 reading a file beneath a directory", op: func(w, _ string) error {
			d, err := unix.Open(w, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(d)
			how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH}
			fd, err := unix.Openat2(d, "src/a.c", &how)
			if err == nil {
				unix.Close(fd)
			}
			return err
		}},
		{name: "openat2 escaping with RESOLVE_BENEATH", op: func(w, _ string) error {
			d, err := unix.Open(w, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(d)
			how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH}
			fd, err := unix.Openat2(d, "../o/victim", &how)
			if err == nil {
				unix.Close(fd)
			}
			return err
		}, want: unix.EXDEV},
		{name: "openat2 with a setuid mode", op: func(w, _ string) error {
			how := unix.OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_CLOEXEC, Mode: 0o4755}
			fd, err := unix.Openat2(unix.AT_FDCWD, j(w, "src/suid"), &how)
			if err == nil {
				unix.Close(fd)
			}
			return err
		}, want: unix.EPERM, effect: absent("src/suid"), denial: "set_id"},
	})
}

// TestMediationMetadata: Landlock has no hook for chmod, chown, utimes or
// xattrs: wrun performs each inside the write scope only.
func TestMediationMetadata(t *testing.T) {
	j := filepath.Join
	mode := func(rel string, want os.FileMode) func(w, o string) string {
		return func(w, o string) string {
			p := j(w, rel)
			if strings.HasPrefix(rel, "/") {
				p = rel
			}
			fi, err := os.Stat(p)
			if err != nil || fi.Mode().Perm() != want {
				return fmt.Sprintf("%s has mode %v (%v), want %v", rel, fi.Mode().Perm(), err, want)
			}
			return ""
		}
	}
	runMediation(t, []mcase{
		{name: "chmod a file of the workspace", op: func(w, _ string) error { return unix.Chmod(j(w, "src/a.c"), 0o600) }, effect: mode("src/a.c", 0o600)},
		{name: "chmod a file made in the root", op: func(w, _ string) error {
			if err := creat(j(w, "run.sh")); err != nil {
				return err
			}
			return unix.Chmod(j(w, "run.sh"), 0o755)
		}, effect: mode("run.sh", 0o755)},
		{name: "chmod a file outside", op: func(_, o string) error { return unix.Chmod(filepath.Join(o, "victim"), 0o777) }, want: unix.EPERM,
			denial: "chmod o/victim"},
		{name: "chmod a hook directory", op: func(w, _ string) error { return unix.Chmod(j(w, ".git/hooks"), 0o777) }, want: unix.EPERM,
			effect: mode(".git/hooks", 0o755), denial: ".git/hooks"},
		{name: "chmod the config through a descriptor", op: func(w, _ string) error {
			fd, err := unix.Open(j(w, ".git/config"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.Fchmod(fd, 0o666)
		}, want: unix.EPERM, effect: mode(".git/config", 0o644), denial: ".git/config"},
		{name: "utimes of a file outside", op: func(_, o string) error {
			return unix.UtimesNano(filepath.Join(o, "victim"), []unix.Timespec{{Sec: 1}, {Sec: 1}})
		}, want: unix.EPERM, denial: "o/victim"},
		{name: "utimes of a file of the workspace", op: func(w, _ string) error {
			return unix.UtimesNano(j(w, "src/a.c"), []unix.Timespec{{Sec: 1}, {Sec: 1}})
		}, effect: func(w, _ string) string {
			fi, err := os.Stat(j(w, "src/a.c"))
			if err != nil || fi.ModTime().Unix() != 1 {
				return "the times were not set"
			}
			return ""
		}},
		{name: "chmod setuid", op: func(w, _ string) error { return unix.Chmod(j(w, "src/a.c"), 0o4755) }, want: unix.EPERM,
			effect: mode("src/a.c", 0o644), denial: "set_id"},
		{name: "chmod a directory setgid", op: func(w, _ string) error { return unix.Chmod(j(w, "src"), 0o2755) },
			effect: func(w, _ string) string {
				fi, err := os.Stat(j(w, "src"))
				if err != nil || fi.Mode()&os.ModeSetgid == 0 {
					return "the setgid bit of a directory was not set"
				}
				return ""
			}},
		{name: "chmod through /proc/self/fd", op: func(_, o string) error {
			fd, err := unix.Open(filepath.Join(o, "victim"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), 0o777)
		}, want: unix.EPERM},
		{name: "truncate the config", op: func(w, _ string) error { return unix.Truncate(j(w, ".git/config"), 0) }, want: unix.EACCES,
			effect: unchanged(".git/config", "[core]\n")},
	})
}

// TestMediationSockets: connect and addressed sends reach only sockets
// the sandbox bound; binding a chosen abstract name is refused.
func TestMediationSockets(t *testing.T) {
	if !probed().PidfdGetfd {
		t.Skip("needs pidfd_getfd: without it UNIX sockets are refused, not mediated")
	}
	outside := filepath.Join(t.TempDir(), "outside.sock")
	ln, err := net.Listen("unix", outside)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	connect := func(path string) error {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Connect(fd, &unix.SockaddrUnix{Name: path})
	}
	runMediation(t, []mcase{
		{name: "a socket outside", grant: "write,network=on", op: func(_, _ string) error { return connect(outside) }, want: unix.EACCES, denial: "connect"},
		{name: "the sandbox's own", grant: "write,network=on", op: func(w, _ string) error {
			l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(l)
			p := filepath.Join(w, "src", "own.sock")
			if err := unix.Bind(l, &unix.SockaddrUnix{Name: p}); err != nil {
				return err
			}
			if err := unix.Listen(l, 1); err != nil {
				return err
			}
			return connect(p)
		}},
		{name: "an abstract name chosen", grant: "write,network=on", op: func(_, _ string) error {
			l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(l)
			return unix.Bind(l, &unix.SockaddrUnix{Name: "@wrun-test-squat-" + strconv.Itoa(os.Getpid())})
		}, want: unix.EACCES, denial: "bind_abstract_unix"},
	})
}

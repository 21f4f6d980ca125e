//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// observeTree adds to mkTree's tree what the observer tests need:
//
//	a/link -> file.txt  b/new.txt  b/fifo
func observeTree(t *testing.T, dir string) string {
	t.Helper()
	mkTree(t, dir)
	if err := os.Symlink("file.txt", filepath.Join(dir, "a/link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b/new.txt"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "b/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ""
}

// TestObservedOp: how a call becomes the operation the access model
// judges, as the kernel will find it.
func TestObservedOp(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	observeTree(t, dir)
	if err := os.Symlink("a", filepath.Join(dir, "alink")); err != nil {
		t.Fatal(err)
	}
	p := func(rel string) string { return filepath.Join(dir, rel) }
	tests := []struct {
		name string
		ev   event
		want access.Op // Kind "" for none
		as   string    // the name reported, when not Kind
	}{
		{"read an existing file with O_CREAT", event{op: opOpen, path: p("a/file.txt"), flags: unix.O_RDONLY | unix.O_CREAT},
			access.Op{Kind: access.OpOpen, Path: p("a/file.txt"), Rights: policy.ReadFile}, ""},
		{"write and truncate", event{op: opOpen, path: p("a/file.txt"), flags: unix.O_WRONLY | unix.O_TRUNC},
			access.Op{Kind: access.OpOpen, Path: p("a/file.txt"), Rights: policy.WriteFile | policy.Truncate}, ""},
		{"read and write", event{op: opOpen2, path: p("a/file.txt"), flags: unix.O_RDWR},
			access.Op{Kind: access.OpOpen, Path: p("a/file.txt"), Rights: policy.ReadFile | policy.WriteFile}, ""},
		{"create", event{op: opOpen, path: p("b/x"), flags: unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC},
			access.Op{Kind: access.OpCreate, Path: p("b/x"), Rights: policy.WriteFile}, ""},
		{"creat", event{op: opCreate, path: p("b/x")},
			access.Op{Kind: access.OpCreate, Path: p("b/x"), Rights: policy.WriteFile}, ""},
		{"create through a linked directory", event{op: opOpen, path: p("alink/x"), flags: unix.O_WRONLY | unix.O_CREAT},
			access.Op{Kind: access.OpCreate, Path: p("a/x"), Rights: policy.WriteFile}, ""},
		{"write through a symbolic link", event{op: opOpen, path: p("a/link"), flags: unix.O_WRONLY},
			access.Op{Kind: access.OpOpen, Path: p("a/file.txt"), Rights: policy.WriteFile}, ""},
		{"O_TMPFILE opens a file in the directory", event{op: opOpen, path: p("b"), flags: unix.O_TMPFILE | unix.O_RDWR},
			access.Op{Kind: access.OpOpen, Path: p("b"), Rights: policy.ReadFile | policy.WriteFile}, ""},
		{"missing without O_CREAT: ENOENT", event{op: opOpen, path: p("b/none"), flags: unix.O_WRONLY}, access.Op{}, ""},
		{"existing with O_CREAT|O_EXCL: EEXIST", event{op: opOpen, path: p("a/file.txt"), flags: unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL}, access.Op{}, ""},
		{"O_PATH", event{op: opOpen, path: p("a/file.txt"), flags: unix.O_PATH | unix.O_WRONLY}, access.Op{}, ""},
		{"a pipe through /proc", event{op: opOpen, path: "/proc/self/fd/" + pipeFD(t), flags: unix.O_WRONLY}, access.Op{}, ""},
		{"mkdir", event{op: opMkdir, path: p("b/d")}, access.Op{Kind: access.OpMkdir, Path: p("b/d")}, ""},
		{"mkdir an existing directory: EEXIST", event{op: opMkdir, path: p("a/empty")}, access.Op{}, ""},
		{"mkfifo", event{op: opMknod, path: p("b/f"), flags: unix.S_IFIFO | 0o644},
			access.Op{Kind: access.OpMknod, Path: p("b/f"), Rights: policy.MakeFifo}, ""},
		{"symlink", event{op: opSymlink, path: p("b/l")}, access.Op{Kind: access.OpSymlink, Path: p("b/l")}, ""},
		{"symlink over an existing entry: EEXIST", event{op: opSymlink, path: p("a/link")}, access.Op{}, ""},
		{"unlink", event{op: opUnlink, path: p("a/old.txt")}, access.Op{Kind: access.OpUnlink, Path: p("a/old.txt")}, ""},
		{"unlink a symbolic link, not its target", event{op: opUnlink, path: p("a/link")}, access.Op{Kind: access.OpUnlink, Path: p("a/link")}, ""},
		{"unlinkat AT_REMOVEDIR", event{op: opUnlink, path: p("a/empty"), flags: unix.AT_REMOVEDIR}, access.Op{Kind: access.OpRmdir, Path: p("a/empty")}, ""},
		{"rmdir", event{op: opRmdir, path: p("a/empty")}, access.Op{Kind: access.OpRmdir, Path: p("a/empty")}, ""},
		{"unlink a missing file: ENOENT", event{op: opUnlink, path: p("a/none")}, access.Op{}, ""},
		{"rename a file", event{op: opRename, path: p("a/old.txt"), path2: p("b/x")},
			access.Op{Kind: access.OpRename, Path: p("a/old.txt"), Dest: p("b/x")}, ""},
		{"rename replacing a file", event{op: opRename, path: p("a/old.txt"), path2: p("b/new.txt")},
			access.Op{Kind: access.OpRename, Path: p("a/old.txt"), Dest: p("b/new.txt"), Replace: true}, ""},
		{"rename with RENAME_NOREPLACE onto a file: EEXIST", event{op: opRename, path: p("a/old.txt"), path2: p("b/new.txt"), flags: unix.RENAME_NOREPLACE}, access.Op{}, ""},
		{"rename a directory", event{op: opRename, path: p("a/sub"), path2: p("b/sub")},
			access.Op{Kind: access.OpRename, Path: p("a/sub"), Dest: p("b/sub"), Dir: true}, ""},
		{"rename a symbolic link", event{op: opRename, path: p("a/link"), path2: p("b/link")},
			access.Op{Kind: access.OpRename, Path: p("a/link"), Dest: p("b/link"), Rights: policy.MakeSym}, ""},
		{"rename a fifo", event{op: opRename, path: p("b/fifo"), path2: p("a/fifo")},
			access.Op{Kind: access.OpRename, Path: p("b/fifo"), Dest: p("a/fifo"), Rights: policy.MakeFifo}, ""},
		{"rename a missing file: ENOENT", event{op: opRename, path: p("a/none"), path2: p("b/x")}, access.Op{}, ""},
		{"link", event{op: opLink, path: p("a/file.txt"), path2: p("b/h")},
			access.Op{Kind: access.OpLink, Path: p("a/file.txt"), Dest: p("b/h")}, ""},
		{"link onto an existing entry: EEXIST", event{op: opLink, path: p("a/file.txt"), path2: p("b/new.txt")}, access.Op{}, ""},
		{"truncate through a symbolic link", event{op: opTruncate, path: p("a/link")}, access.Op{Kind: access.OpTrunc, Path: p("a/file.txt")}, ""},
		{"chmod follows a symbolic link", event{op: opChmod, path: p("a/link")}, access.Op{Kind: access.OpChmod, Path: p("a/file.txt")}, ""},
		{"chown", event{op: opChown, path: p("a/file.txt")}, access.Op{Kind: access.OpChown, Path: p("a/file.txt")}, ""},
		{"tcp connect", event{op: opConnect, family: unix.AF_INET, addr: "127.0.0.1:80"},
			access.Op{Kind: access.OpConnect, Addr: "127.0.0.1:80"}, ""},
		{"tcp bind", event{op: opBind, family: unix.AF_INET6, addr: "[::1]:80"},
			access.Op{Kind: access.OpBind, Addr: "[::1]:80"}, ""},
		{"bind a pathname socket makes a socket file", event{op: opBind, family: unix.AF_UNIX, addr: "unix:" + p("alink/s"), path: p("alink/s")},
			access.Op{Kind: access.OpMknod, Path: p("a/s"), Rights: policy.MakeSock}, access.OpBind},
		{"connect to a pathname socket", event{op: opConnect, family: unix.AF_UNIX, addr: "unix:" + p("b/s"), path: p("b/s")}, access.Op{}, ""},
		{"connect to an abstract socket", event{op: opConnect, family: unix.AF_UNIX, addr: "unix:@x"}, access.Op{}, ""},
		{"bind an abstract socket", event{op: opBind, family: unix.AF_UNIX, addr: "unix:@x"}, access.Op{}, ""},
		{"netlink", event{op: opBind, family: unix.AF_NETLINK, addr: "AF_NETLINK"}, access.Op{}, ""},
	}
	for _, tt := range tests {
		op, name, ok := observedOp(tt.ev)
		if ok != (tt.want.Kind != "") || op != tt.want {
			t.Errorf("%s: observedOp = %+v, %v\n want %+v", tt.name, op, ok, tt.want)
			continue
		}
		want := tt.as
		if want == "" {
			want = tt.want.Kind
		}
		if ok && name != want {
			t.Errorf("%s: reported as %q, want %q", tt.name, name, want)
		}
	}
}

// pipeFD opens a pipe in this process and returns its write end's number.
func pipeFD(t *testing.T) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return strconv.Itoa(int(w.Fd()))
}

// TestPlanPlatform: what the plan enforces, as the access model's facts.
func TestPlanPlatform(t *testing.T) {
	dir := t.TempDir()
	p := &policy.Policy{
		Rules:     []policy.Rule{{Path: dir, Access: policy.ReadWrite}},
		Protected: []policy.Protected{{Path: filepath.Join(dir, "x"), Exists: true, Within: dir}},
	}
	tests := []struct {
		name string
		f    Features
		want access.Platform
	}{
		{"no Landlock", Features{}, access.Platform{Unhandled: policy.All, TCPUnhandled: true}},
		{"ABI 1", Features{LandlockABI: 1}, access.Platform{Unhandled: policy.Refer | policy.Truncate | policy.IoctlDev, TCPUnhandled: true}},
		{"ABI 3", Features{LandlockABI: 3}, access.Platform{Unhandled: policy.IoctlDev, TCPUnhandled: true}},
		{"ABI 4", Features{LandlockABI: 4}, access.Platform{Unhandled: policy.IoctlDev}},
		{"ABI 7", Features{LandlockABI: 7}, access.Platform{}},
		{"ABI 9", Features{LandlockABI: 9}, access.Platform{UnixConfined: true}},
		{"mount namespace", Features{LandlockABI: 7, MountNS: true}, access.Platform{Protection: access.ProtectMounted}},
		{"user namespace", Features{LandlockABI: 7, UserNS: true}, access.Platform{Protection: access.ProtectMounted}},
	}
	for _, tt := range tests {
		pl, err := NewPlan(p, tt.f, sandbox.Options{BestEffort: true})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got := pl.platform()
		// Through the stage, the rules it adds for its own /dev/pts and
		// /dev/shm are installed too.
		want := pl.Rules
		if pl.stage {
			want = append(slices.Clone(pl.Rules), privateDevRules()...)
		}
		if !reflect.DeepEqual(got.Installed, want) || len(pl.Rules) == 0 {
			t.Errorf("%s: installed rules %+v, want %+v", tt.name, got.Installed, want)
		}
		got.Installed = nil
		if got.Protection != tt.want.Protection || got.Unhandled != tt.want.Unhandled ||
			got.TCPUnhandled != tt.want.TCPUnhandled || got.UnixConfined != tt.want.UnixConfined {
			t.Errorf("%s: platform %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// rel is a policy rule on a path relative to a case's directory.
type rel struct {
	path   string
	access policy.Access
}

// predictCase is one call under one policy: what the observer predicts
// (the operation, the path relative to the case's directory and the
// missing right, "; "-joined; "" for nothing) and the errno the kernel
// ends the call with under the plan's ruleset.
type predictCase struct {
	name    string
	abi     int // the plan's Landlock ABI; 0 means the kernel's
	rules   []rel
	hidden  []string // holes that withhold everything but listing
	protect []string // protected paths (carved: no mount namespace here)
	ev      event    // paths relative to the case's directory
	op      func(dir string) error
	predict string
	want    unix.Errno
}

func (c predictCase) policy(dir string) *policy.Policy {
	p := &policy.Policy{}
	for _, r := range c.rules {
		p.Rules = append(p.Rules, policy.Rule{Path: filepath.Join(dir, r.path), Access: r.access})
	}
	for _, h := range c.hidden {
		p.Hidden = append(p.Hidden, policy.Hole{Path: filepath.Join(dir, h), Withheld: policy.All &^ policy.ReadDir})
	}
	for _, pr := range c.protect {
		p.Protected = append(p.Protected, policy.Protected{Path: filepath.Join(dir, pr), Exists: true, Within: dir})
	}
	return p
}

func (c predictCase) plan(t testing.TB, dir string) *Plan {
	abi := c.abi
	if abi == 0 {
		abi = kernelABI()
	}
	pl, err := NewPlan(c.policy(dir), Features{LandlockABI: abi, Seccomp: true}, sandbox.Options{BestEffort: true})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// TestPredictAgainstLandlock holds the observer's prediction to the
// kernel: each case's call is predicted in the test process and made under
// the plan's real ruleset in a child, and a predicted denial must be the
// kernel's EACCES or EXDEV, no prediction anything else.
func TestPredictAgainstLandlock(t *testing.T) {
	const rw, ro = policy.ReadWrite, policy.ReadExec
	all := []rel{{".", rw}}
	readOnly := []rel{{".", ro}}
	noTrunc := policy.ReadWrite &^ policy.Truncate
	abs := func(dir, p string) string { return filepath.Join(dir, p) }
	open := func(p string, flags int) func(string) error {
		return func(dir string) error { return openFile(abs(dir, p), flags) }
	}
	rename := func(from, to string) func(string) error {
		return func(dir string) error { return unix.Rename(abs(dir, from), abs(dir, to)) }
	}
	bind := func(p string) func(string) error {
		return func(dir string) error {
			fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.Bind(fd, &unix.SockaddrUnix{Name: abs(dir, p)})
		}
	}
	cases := []predictCase{
		{name: "create where only reading is granted", rules: readOnly,
			ev: event{op: opOpen, path: "b/x", flags: unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL},
			op: open("b/x", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL), predict: "create b/x make_reg", want: unix.EACCES},
		{name: "write and truncate a read-only file", rules: readOnly,
			ev: event{op: opOpen, path: "a/file.txt", flags: unix.O_WRONLY | unix.O_TRUNC},
			op: open("a/file.txt", unix.O_WRONLY|unix.O_TRUNC), predict: "open a/file.txt write_file,truncate", want: unix.EACCES},
		{name: "read an existing file with O_CREAT where only reading is granted", rules: readOnly,
			ev: event{op: opOpen, path: "a/file.txt", flags: unix.O_RDONLY | unix.O_CREAT},
			op: open("a/file.txt", unix.O_RDONLY|unix.O_CREAT)},
		{name: "read and write a hidden file", rules: all, hidden: []string{"a/sub"},
			ev: event{op: opOpen, path: "a/sub/inner.txt", flags: unix.O_RDWR},
			op: open("a/sub/inner.txt", unix.O_RDWR), predict: "open a/sub/inner.txt write_file,read_file", want: unix.EACCES},
		{name: "open a missing file without O_CREAT", rules: readOnly,
			ev: event{op: opOpen, path: "b/none", flags: unix.O_WRONLY},
			op: open("b/none", unix.O_WRONLY), want: unix.ENOENT},
		{name: "mkdir an existing directory", rules: readOnly, ev: event{op: opMkdir, path: "a/empty"},
			op: func(dir string) error { return unix.Mkdir(abs(dir, "a/empty"), 0o755) }, want: unix.EEXIST},
		{name: "mkfifo where fifos are not made", rules: []rel{{".", ro}, {"b", policy.ReadWritePlain}},
			ev: event{op: opMknod, path: "b/f", flags: unix.S_IFIFO | 0o644},
			op: func(dir string) error { return unix.Mkfifo(abs(dir, "b/f"), 0o644) }, predict: "mknod b/f make_fifo", want: unix.EACCES},
		{name: "unlink in a read-only directory", rules: readOnly, ev: event{op: opUnlink, path: "a/old.txt"},
			op: func(dir string) error { return unix.Unlink(abs(dir, "a/old.txt")) }, predict: "unlink a/old.txt remove_file", want: unix.EACCES},
		{name: "rmdir in a read-only directory", rules: readOnly, ev: event{op: opRmdir, path: "a/empty"},
			op: func(dir string) error { return unix.Rmdir(abs(dir, "a/empty")) }, predict: "rmdir a/empty remove_dir", want: unix.EACCES},
		{name: "carved: create beside a protected file", rules: all, protect: []string{"a/file.txt"},
			ev: event{op: opOpen, path: "a/new", flags: unix.O_WRONLY | unix.O_CREAT},
			op: open("a/new", unix.O_WRONLY|unix.O_CREAT), predict: "create a/new make_reg", want: unix.EACCES},
		{name: "carved: write a protected file", rules: all, protect: []string{"a/file.txt"},
			ev: event{op: opOpen, path: "a/file.txt", flags: unix.O_WRONLY},
			op: open("a/file.txt", unix.O_WRONLY), predict: "open a/file.txt write_file", want: unix.EACCES},
		{name: "carved: create in a sibling directory", rules: all, protect: []string{"a/file.txt"},
			ev: event{op: opOpen, path: "a/sub/new", flags: unix.O_WRONLY | unix.O_CREAT},
			op: open("a/sub/new", unix.O_WRONLY|unix.O_CREAT)},
		// Moves.
		{name: "rename across directories", rules: all, ev: event{op: opRename, path: "a/old.txt", path2: "b/x"},
			op: rename("a/old.txt", "b/x")},
		{name: "rename that would gain truncate", rules: []rel{{".", ro}, {"a", noTrunc}, {"b", rw}},
			ev: event{op: opRename, path: "a/old.txt", path2: "b/x"},
			op: rename("a/old.txt", "b/x"), predict: "rename b/x refer", want: unix.EXDEV},
		{name: "rename onto an entry with a rule of its own", rules: []rel{{".", ro}, {"a", noTrunc}, {"b", noTrunc}, {"b/new.txt", policy.ReadFile | policy.WriteExisting}},
			ev: event{op: opRename, path: "a/old.txt", path2: "b/new.txt"}, op: rename("a/old.txt", "b/new.txt")},
		{name: "rename replacing needs remove at the destination", rules: []rel{{".", ro}, {"a", rw}, {"b", rw &^ policy.RemoveFile}},
			ev: event{op: opRename, path: "a/old.txt", path2: "b/new.txt"},
			op: rename("a/old.txt", "b/new.txt"), predict: "rename b/new.txt remove_file", want: unix.EACCES},
		{name: "rename a symbolic link where links are not made", rules: []rel{{".", ro}, {"a", rw}, {"b", policy.ReadWritePlain}},
			ev: event{op: opRename, path: "a/link", path2: "b/link"},
			op: rename("a/link", "b/link"), predict: "rename b/link make_sym", want: unix.EACCES},
		{name: "link across directories without refer", rules: []rel{{".", rw &^ policy.Refer}},
			ev:      event{op: opLink, path: "a/file.txt", path2: "b/h"},
			op:      func(dir string) error { return unix.Link(abs(dir, "a/file.txt"), abs(dir, "b/h")) },
			predict: "link a/file.txt refer; link b/h refer", want: unix.EXDEV},
		// Rights an older ABI does not handle.
		{name: "ABI 2: truncate is not restricted", abi: 2, rules: readOnly, ev: event{op: opTruncate, path: "a/file.txt"},
			op: func(dir string) error { return unix.Truncate(abs(dir, "a/file.txt"), 0) }},
		{name: "ABI 1: no move across directories", abi: 1, rules: all, ev: event{op: opRename, path: "a/old.txt", path2: "b/x"},
			op: rename("a/old.txt", "b/x"), predict: "rename a/old.txt refer; rename b/x refer", want: unix.EXDEV},
		{name: "ABI 1: a move within a directory", abi: 1, rules: all, ev: event{op: opRename, path: "a/old.txt", path2: "a/x"},
			op: rename("a/old.txt", "a/x")},
		// Sockets.
		{name: "bind a socket in a read-only directory", rules: readOnly,
			ev: event{op: opBind, family: unix.AF_UNIX, addr: "unix:b/s", path: "b/s"},
			op: bind("b/s"), predict: "bind b/s make_sock", want: unix.EACCES},
		{name: "bind a socket in a writable directory", rules: all,
			ev: event{op: opBind, family: unix.AF_UNIX, addr: "unix:b/s", path: "b/s"}, op: bind("b/s")},
	}
	var ks []kcase
	for _, c := range cases {
		if landlockErr(c.want) != (c.predict != "") {
			t.Fatalf("%s: the table contradicts itself: %s predicted as %q", c.name, errnoString(c.want), c.predict)
		}
		ks = append(ks, kcase{
			name: c.name,
			abi:  max(c.abi, 1),
			landlock: func(t testing.TB, dir string) (rulesetAttr, []fsRule) {
				pl := c.plan(t, dir)
				return pl.attr, pl.fsRules()
			},
			setup: func(t *testing.T, dir string) string {
				observeTree(t, dir)
				ev := c.ev
				for _, p := range []*string{&ev.path, &ev.path2} {
					if *p != "" {
						*p = abs(dir, *p)
					}
				}
				name, missing := predict(c.plan(t, dir).accessModel(), ev)
				var got []string
				for _, m := range missing {
					r, _ := filepath.Rel(dir, m.Path)
					got = append(got, name+" "+r+m.Addr+" "+m.Right)
				}
				if s := strings.Join(got, "; "); s != c.predict {
					t.Errorf("predicted %q, want %q", s, c.predict)
				}
				return ""
			},
			op:   func(dir, _ string) error { return c.op(dir) },
			want: c.want,
		})
	}
	runCases(t, ks)
}

// landlockErr reports whether errno is how Landlock refuses a call.
func landlockErr(errno unix.Errno) bool { return errno == unix.EACCES || errno == unix.EXDEV }

//go:build linux

package linux

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The tree every file system case starts from, fresh for each case:
//
//	a/file.txt  a/old.txt  a/empty/  a/sub/inner.txt  b/
func mkTree(t *testing.T, dir string) string {
	t.Helper()
	for _, d := range []string{"a/empty", "a/sub", "b"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"a/file.txt", "a/old.txt", "a/sub/inner.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("data\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ""
}

// relRule is a rule on a path relative to the case's directory (or
// absolute).
type relRule struct {
	path   string
	access uint64
}

func on(path string, access uint64) relRule { return relRule{path, access} }

// fsCase is one row of a file system family: the rules, and the errno the
// family's operation must end with under them.
type fsCase struct {
	name  string
	abi   int
	rules []relRule
	want  unix.Errno
}

// runFSFamily runs op under each case's rules, with every file system
// right this kernel knows handled (as the launcher does).
func runFSFamily(t *testing.T, op func(dir, arg string) error, cases []fsCase) {
	t.Helper()
	requireABI(t, 1)
	var ks []kcase
	for _, c := range cases {
		ks = append(ks, kcase{
			name:     c.name,
			abi:      max(c.abi, 1),
			landlock: treeRules(c.rules...),
			setup:    mkTree,
			op:       op,
			want:     c.want,
		})
	}
	runCases(t, ks)
}

// treeRules handles every file system right of this kernel's ABI and allows
// the rules given.
func treeRules(rules ...relRule) func(testing.TB, string) (rulesetAttr, []fsRule) {
	return func(_ testing.TB, dir string) (rulesetAttr, []fsRule) {
		var out []fsRule
		for _, r := range rules {
			p := r.path
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			out = append(out, fsRule{Path: p, Access: r.access})
		}
		return rulesetAttr{handledFS: handledFS(kernelABI())}, out
	}
}

// Operations. They use the system calls directly so that the errno is the
// kernel's.

func openFile(path string, flags int) error {
	fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0o644)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

func TestLandlockOpenForRead(t *testing.T) {
	op := func(dir, _ string) error { return openFile(filepath.Join(dir, "a/file.txt"), unix.O_RDONLY) }
	runFSFamily(t, op, []fsCase{
		{name: "read_file on the directory", rules: []relRule{on("a", llReadFile)}},
		{name: "read_file on the file", rules: []relRule{on("a/file.txt", llReadFile)}},
		{name: "read_file on an ancestor", rules: []relRule{on(".", llReadFile)}},
		{name: "no rule", want: unix.EACCES},
		{name: "read_dir only", rules: []relRule{on("a", llReadDir)}, want: unix.EACCES},
		{name: "write_file only", rules: []relRule{on("a", llWriteFile)}, want: unix.EACCES},
		{name: "read_file on a sibling", rules: []relRule{on("b", llReadFile)}, want: unix.EACCES},
		{name: "read_file on a subdirectory", rules: []relRule{on("a/sub", llReadFile)}, want: unix.EACCES},
	})
}

func TestLandlockWriteExisting(t *testing.T) {
	op := func(dir, _ string) error { return openFile(filepath.Join(dir, "a/file.txt"), unix.O_WRONLY) }
	runFSFamily(t, op, []fsCase{
		{name: "write_file", rules: []relRule{on("a", llWriteFile)}},
		{name: "read_file only", rules: []relRule{on("a", llReadFile)}, want: unix.EACCES},
		{name: "make_reg only", rules: []relRule{on("a", llMakeReg)}, want: unix.EACCES},
	})
}

func TestLandlockReadDir(t *testing.T) {
	op := func(dir, _ string) error {
		fd, err := unix.Open(filepath.Join(dir, "a"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.Getdents(fd, make([]byte, 4096))
		return err
	}
	runFSFamily(t, op, []fsCase{
		{name: "read_dir", rules: []relRule{on("a", llReadDir)}},
		{name: "read_dir on an ancestor", rules: []relRule{on(".", llReadDir)}},
		{name: "no rule", want: unix.EACCES},
		{name: "read_file only", rules: []relRule{on("a", llReadFile)}, want: unix.EACCES},
		{name: "read_dir on a subdirectory only", rules: []relRule{on("a/sub", llReadDir)}, want: unix.EACCES},
	})
}

func TestLandlockCreateFile(t *testing.T) {
	op := func(dir, _ string) error {
		return openFile(filepath.Join(dir, "a/new.txt"), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL)
	}
	runFSFamily(t, op, []fsCase{
		{name: "make_reg and write_file", rules: []relRule{on("a", llMakeReg|llWriteFile)}},
		{name: "no rule", want: unix.EACCES},
		{name: "write_file only", rules: []relRule{on("a", llWriteFile)}, want: unix.EACCES},
		{name: "make_reg only: created but not opened for writing", rules: []relRule{on("a", llMakeReg)}, want: unix.EACCES},
		{name: "make_dir only", rules: []relRule{on("a", llMakeDir|llWriteFile)}, want: unix.EACCES},
	})
}

func TestLandlockMkdir(t *testing.T) {
	op := func(dir, _ string) error { return unix.Mkdir(filepath.Join(dir, "a/newdir"), 0o755) }
	runFSFamily(t, op, []fsCase{
		{name: "make_dir", rules: []relRule{on("a", llMakeDir)}},
		{name: "no rule", want: unix.EACCES},
		{name: "make_reg only", rules: []relRule{on("a", llMakeReg)}, want: unix.EACCES},
		{name: "make_dir on a subdirectory only", rules: []relRule{on("a/sub", llMakeDir)}, want: unix.EACCES},
	})
}

func TestLandlockUnlink(t *testing.T) {
	op := func(dir, _ string) error { return unix.Unlink(filepath.Join(dir, "a/old.txt")) }
	runFSFamily(t, op, []fsCase{
		{name: "remove_file", rules: []relRule{on("a", llRemoveFile)}},
		{name: "no rule", want: unix.EACCES},
		{name: "remove_dir only", rules: []relRule{on("a", llRemoveDir)}, want: unix.EACCES},
		// Rights on the file itself do not let it be unlinked: removal is
		// a right on the directory.
		{name: "every file right on the file", rules: []relRule{on("a/old.txt", llFileRights)}, want: unix.EACCES},
	})
}

func TestLandlockRmdir(t *testing.T) {
	op := func(dir, _ string) error { return unix.Rmdir(filepath.Join(dir, "a/empty")) }
	runFSFamily(t, op, []fsCase{
		{name: "remove_dir", rules: []relRule{on("a", llRemoveDir)}},
		{name: "remove_file only", rules: []relRule{on("a", llRemoveFile)}, want: unix.EACCES},
	})
}

func TestLandlockMkfifo(t *testing.T) {
	op := func(dir, _ string) error { return unix.Mkfifo(filepath.Join(dir, "a/fifo"), 0o644) }
	runFSFamily(t, op, []fsCase{
		{name: "make_fifo", rules: []relRule{on("a", llMakeFifo)}},
		{name: "no rule", want: unix.EACCES},
		{name: "make_reg only", rules: []relRule{on("a", llMakeReg)}, want: unix.EACCES},
	})
}

func TestLandlockSymlink(t *testing.T) {
	op := func(dir, _ string) error { return unix.Symlink("file.txt", filepath.Join(dir, "a/link")) }
	runFSFamily(t, op, []fsCase{
		{name: "make_sym", rules: []relRule{on("a", llMakeSym)}},
		{name: "no rule", want: unix.EACCES},
		{name: "make_reg only", rules: []relRule{on("a", llMakeReg)}, want: unix.EACCES},
	})
}

func TestLandlockRenameWithinDirectory(t *testing.T) {
	op := func(dir, _ string) error {
		return unix.Rename(filepath.Join(dir, "a/old.txt"), filepath.Join(dir, "a/new.txt"))
	}
	runFSFamily(t, op, []fsCase{
		// Within one directory REFER is not needed.
		{name: "remove_file and make_reg", rules: []relRule{on("a", llRemoveFile|llMakeReg)}},
		{name: "make_reg only", rules: []relRule{on("a", llMakeReg)}, want: unix.EACCES},
		{name: "remove_file only", rules: []relRule{on("a", llRemoveFile)}, want: unix.EACCES},
	})
}

func TestLandlockRenameAcrossDirectories(t *testing.T) {
	op := func(dir, _ string) error {
		return unix.Rename(filepath.Join(dir, "a/old.txt"), filepath.Join(dir, "b/new.txt"))
	}
	const move = llRemoveFile | llMakeReg
	runFSFamily(t, op, []fsCase{
		{name: "refer on both sides", abi: 2, rules: []relRule{on("a", llRemoveFile|llRefer), on("b", llMakeReg|llRefer)}},
		{name: "refer on the common parent", abi: 2, rules: []relRule{on(".", move|llRefer)}},
		// What git does when the writable tree lacks REFER: EXDEV, so it
		// would fall back to copying, or fail.
		{name: "without refer", abi: 2, rules: []relRule{on(".", move)}, want: unix.EXDEV},
		{name: "refer only on the source", abi: 2, rules: []relRule{on("a", llRemoveFile|llRefer), on("b", llMakeReg)}, want: unix.EXDEV},
		{name: "refer without make_reg at the target", abi: 2, rules: []relRule{on("a", llRemoveFile|llRefer), on("b", llRefer)}, want: unix.EACCES},
		{name: "no rule", want: unix.EACCES},
	})
}

func TestLandlockLinkAcrossDirectories(t *testing.T) {
	op := func(dir, _ string) error {
		return unix.Link(filepath.Join(dir, "a/file.txt"), filepath.Join(dir, "b/hard.txt"))
	}
	runFSFamily(t, op, []fsCase{
		{name: "make_reg and refer", abi: 2, rules: []relRule{on(".", llMakeReg|llRefer)}},
		{name: "make_reg without refer", abi: 2, rules: []relRule{on(".", llMakeReg)}, want: unix.EXDEV},
	})
}

func TestLandlockTruncate(t *testing.T) {
	path := func(dir string) string { return filepath.Join(dir, "a/file.txt") }
	truncate := func(dir, _ string) error { return unix.Truncate(path(dir), 0) }
	runFSFamily(t, truncate, []fsCase{
		{name: "truncate", abi: 3, rules: []relRule{on("a", llTruncate)}},
		{name: "truncate on the file", abi: 3, rules: []relRule{on("a/file.txt", llTruncate)}},
		{name: "write_file without truncate", abi: 3, rules: []relRule{on("a", llWriteFile)}, want: unix.EACCES},
		{name: "no rule", abi: 3, want: unix.EACCES},
	})
	t.Run("O_TRUNC", func(t *testing.T) {
		otrunc := func(dir, _ string) error { return openFile(path(dir), unix.O_WRONLY|unix.O_TRUNC) }
		runFSFamily(t, otrunc, []fsCase{
			{name: "write_file and truncate", abi: 3, rules: []relRule{on("a", llWriteFile|llTruncate)}},
			{name: "write_file without truncate", abi: 3, rules: []relRule{on("a", llWriteFile)}, want: unix.EACCES},
		})
	})
	t.Run("ftruncate", func(t *testing.T) {
		// The right is taken when the file is opened.
		ftrunc := func(dir, _ string) error {
			fd, err := unix.Open(path(dir), unix.O_WRONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.Ftruncate(fd, 0)
		}
		runFSFamily(t, ftrunc, []fsCase{
			{name: "write_file and truncate", abi: 3, rules: []relRule{on("a", llWriteFile|llTruncate)}},
			{name: "write_file without truncate", abi: 3, rules: []relRule{on("a", llWriteFile)}, want: unix.EACCES},
		})
	})
}

func TestLandlockIoctlDev(t *testing.T) {
	// TCGETS on /dev/null: ENOTTY when the ioctl reaches the driver,
	// EACCES when Landlock stops it first.
	ioctl := func(path string) func(dir, _ string) error {
		return func(dir, _ string) error {
			p := path
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			_, err = unix.IoctlGetTermios(fd, unix.TCGETS)
			return err
		}
	}
	if _, err := os.Stat("/dev/null"); err != nil {
		t.Skip("no /dev/null:", err)
	}
	runFSFamily(t, ioctl("/dev/null"), []fsCase{
		{name: "ioctl_dev", abi: 5, rules: []relRule{on("/dev/null", llReadFile|llIoctlDev)}, want: unix.ENOTTY},
		{name: "read_file without ioctl_dev", abi: 5, rules: []relRule{on("/dev/null", llReadFile)}, want: unix.EACCES},
	})
	t.Run("regular file", func(t *testing.T) {
		// IOCTL_DEV is about device files; a regular file's ioctls pass.
		runFSFamily(t, ioctl("a/file.txt"), []fsCase{
			{name: "read_file without ioctl_dev", abi: 5, rules: []relRule{on("a", llReadFile)}, want: unix.ENOTTY},
		})
	})
}

func TestLandlockTCP(t *testing.T) {
	requireABI(t, 4)
	listen := func(t *testing.T, _ string) string {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	}
	connect := func(_, port string) error {
		p, _ := strconv.Atoi(port)
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Connect(fd, &unix.SockaddrInet4{Port: p, Addr: [4]byte{127, 0, 0, 1}})
	}
	bind := func(_, _ string) error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
	}
	handle := func(handled uint64) func(testing.TB, string) (rulesetAttr, []fsRule) {
		return func(testing.TB, string) (rulesetAttr, []fsRule) {
			return rulesetAttr{handledNet: handled}, nil
		}
	}
	runCases(t, []kcase{
		{name: "connect, not handled", abi: 4, landlock: handle(llNetBindTCP), setup: listen, op: connect},
		{name: "connect, handled", abi: 4, landlock: handle(llNetBindTCP | llNetConnectTCP), setup: listen, op: connect, want: unix.EACCES},
		{name: "bind, not handled", abi: 4, landlock: handle(llNetConnectTCP), op: bind},
		{name: "bind, handled", abi: 4, landlock: handle(llNetBindTCP | llNetConnectTCP), op: bind, want: unix.EACCES},
	})
}

func TestLandlockScopes(t *testing.T) {
	requireABI(t, 6)
	scoped := func(scope uint64) func(testing.TB, string) (rulesetAttr, []fsRule) {
		return func(testing.TB, string) (rulesetAttr, []fsRule) {
			// A file system right is handled too, as in every real
			// ruleset; the scope alone must do the work.
			return rulesetAttr{handledFS: llMakeReg, scoped: scope}, nil
		}
	}
	// The child's parent, this test process, lies outside its domain.
	signal := func(_, _ string) error { return unix.Kill(os.Getppid(), 0) }
	listen := func(t *testing.T, _ string) string {
		name := "@wrun-test-" + strconv.Itoa(os.Getpid()) + "-" + strings.ReplaceAll(t.Name(), "/", "-")
		l, err := net.Listen("unix", name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return name
	}
	connect := func(_, name string) error {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Connect(fd, &unix.SockaddrUnix{Name: name})
	}
	runCases(t, []kcase{
		{name: "signal outside, not scoped", abi: 6, landlock: scoped(llScopeAbstractUnix), op: signal},
		{name: "signal outside, scoped", abi: 6, landlock: scoped(llScopeSignal), op: signal, want: unix.EPERM},
		{name: "abstract socket outside, not scoped", abi: 6, landlock: scoped(llScopeSignal), setup: listen, op: connect},
		{name: "abstract socket outside, scoped", abi: 6, landlock: scoped(llScopeAbstractUnix), setup: listen, op: connect, want: unix.EPERM},
	})
}

// TestBuildRuleset covers what buildRuleset does before any restriction:
// which rules it adds, skips or refuses. Nothing is restricted here.
func TestBuildRuleset(t *testing.T) {
	requireABI(t, 1)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mkTree(t, dir)
	if err := os.Symlink("a", filepath.Join(dir, "alink")); err != nil {
		t.Fatal(err)
	}
	attr := rulesetAttr{handledFS: handledFS(kernelABI())}
	all := handledFS(kernelABI())
	p := func(rel string) string { return filepath.Join(dir, rel) }
	tests := []struct {
		name        string
		rule        fsRule
		wantErr     string // substring; "" for success
		wantSkipped bool
	}{
		{name: "directory", rule: fsRule{Path: p("a"), Access: all}},
		// Directory rights on a file would make landlock_add_rule fail
		// with EINVAL; they are dropped.
		{name: "file with directory rights", rule: fsRule{Path: p("a/file.txt"), Access: all}},
		{name: "file with directory rights only", rule: fsRule{Path: p("a/file.txt"), Access: llMakeDir | llReadDir}},
		{name: "optional and missing", rule: fsRule{Path: p("nope"), Access: all, Optional: true}, wantSkipped: true},
		{name: "optional under a file", rule: fsRule{Path: p("a/file.txt/x"), Access: all, Optional: true}, wantSkipped: true},
		{name: "missing", rule: fsRule{Path: p("nope"), Access: all}, wantErr: "no such file"},
		{name: "no-follow symlink gets no rule", rule: fsRule{Path: p("alink"), Access: all, NoFollow: true}},
		{name: "beneath", rule: fsRule{Path: p("a/sub"), Access: all, Beneath: dir}},
		{name: "beneath through a symlink", rule: fsRule{Path: p("alink/sub"), Access: all, Beneath: dir}, wantErr: "symbolic link"},
		// An optional rule wrun cannot reach safely is dropped: less
		// access, never more.
		{name: "optional beneath through a symlink", rule: fsRule{Path: p("alink/sub"), Access: all, Beneath: dir, Optional: true}, wantSkipped: true},
		{name: "not beneath", rule: fsRule{Path: "/etc", Access: all, Beneath: dir}, wantErr: "not beneath"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := buildRuleset(attr, []fsRule{tt.rule})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer rs.close()
			if skipped := len(rs.skipped) > 0; skipped != tt.wantSkipped {
				t.Errorf("skipped %v, want skipped %v", rs.skipped, tt.wantSkipped)
			}
		})
	}
	t.Run("unhandled rights are dropped", func(t *testing.T) {
		rs, err := buildRuleset(rulesetAttr{handledFS: llReadFile}, []fsRule{{Path: p("a"), Access: all}})
		if err != nil {
			t.Fatal(err)
		}
		rs.close()
	})
	t.Run("a right the kernel does not know is refused", func(t *testing.T) {
		_, err := buildRuleset(rulesetAttr{handledFS: 1 << 40}, nil)
		if !errors.Is(err, unix.EINVAL) {
			t.Fatalf("got %v, want EINVAL", err)
		}
	})
}

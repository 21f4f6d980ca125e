package escalate

import (
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/policy"
)

func render(ms []Missing) string {
	var out []string
	for _, m := range ms {
		s := m.Path + m.Addr + " " + m.Right
		if m.Reason != "" {
			s += " (" + m.Reason + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// TestCheck is the access model, one operation family per block, with what
// the kernel refuses ("" for allowed). It mirrors Landlock: rights inherit
// beneath a rule, rules add up, holes and protected paths take rights away
// (from the directories above them too, when carved), directory rights are
// checked on the parent, moves across directories need refer on both
// sides and may not gain rights.
func TestCheck(t *testing.T) {
	w, r := policy.WriteFile, policy.ReadFile
	tests := []struct {
		name  string
		grant string
		prot  Protection
		unix  bool
		extra []policy.Rule
		op    Op
		want  string
	}{
		// open
		{name: "read in the workspace", grant: "verify", op: Op{Kind: OpOpen, Path: ws + "/src/main.rs"}},
		{name: "write in a read-only workspace", grant: "verify", op: Op{Kind: OpOpen, Path: ws + "/src/main.rs", Rights: w | r},
			want: ws + "/src/main.rs write_file"},
		{name: "truncate on open", grant: "verify", op: Op{Kind: OpOpen, Path: ws + "/Cargo.lock", Rights: w | policy.Truncate},
			want: ws + "/Cargo.lock write_file,truncate"},
		{name: "write build output", grant: "verify", op: Op{Kind: OpOpen, Path: ws + "/target/debug/app", Rights: w}},
		{name: "write the private temp dir", grant: "inspect", op: Op{Kind: OpOpen, Path: tmp + "/x", Rights: w}},
		{name: "write /dev/null", grant: "inspect", op: Op{Kind: OpOpen, Path: "/dev/null", Rights: w | r}},
		{name: "write a device", grant: "full", op: Op{Kind: OpOpen, Path: "/dev/sda", Rights: w},
			want: "/dev/sda write_file"},
		{name: "read a credential store", grant: "full", op: Op{Kind: OpOpen, Path: home + "/.ssh/id_ed25519"},
			want: home + "/.ssh/id_ed25519 read_file"},
		{name: "list a credential store", grant: "full", op: Op{Kind: OpOpen, Path: home + "/.ssh", Dir: true}},
		{name: "read beside a credential store", grant: "inspect", op: Op{Kind: OpOpen, Path: home + "/.cargo/config.toml"}},
		{name: "read a file credential store", grant: "inspect", op: Op{Kind: OpOpen, Path: home + "/.cargo/credentials.toml"},
			want: home + "/.cargo/credentials.toml read_file"},
		{name: "files=none hides the workspace", grant: "inspect,files=none", op: Op{Kind: OpOpen, Path: ws + "/README"},
			want: ws + "/README read_file"},
		{name: "exec from the temp dir", grant: "inspect", op: Op{Kind: OpExec, Path: tmp + "/a.out"}},
		// create, mkdir, mknod, symlink
		{name: "create in a read-only workspace", grant: "verify", op: Op{Kind: OpCreate, Path: ws + "/new.txt"},
			want: ws + "/new.txt make_reg"},
		{name: "create in the target dir", grant: "verify", op: Op{Kind: OpCreate, Path: ws + "/target/debug/x"}},
		{name: "create in a tool cache under verify", grant: "verify", op: Op{Kind: OpCreate, Path: home + "/.cargo/registry/x"},
			want: home + "/.cargo/registry/x make_reg"},
		{name: "create in a tool cache under full", grant: "full", op: Op{Kind: OpCreate, Path: home + "/.cargo/registry/x"}},
		{name: "mkdir outside", grant: "verify", op: Op{Kind: OpMkdir, Path: "/opt/x"}, want: "/opt/x make_dir"},
		{name: "mkdir in temp", grant: "inspect", op: Op{Kind: OpMkdir, Path: tmp + "/d"}},
		{name: "mkfifo in temp", grant: "inspect", op: Op{Kind: OpMknod, Path: tmp + "/f", Rights: policy.MakeFifo}},
		{name: "mknod a device in temp", grant: "inspect", op: Op{Kind: OpMknod, Path: tmp + "/sda", Rights: policy.MakeBlock},
			want: tmp + "/sda make_block"},
		{name: "symlink in the workspace", grant: "verify", op: Op{Kind: OpSymlink, Path: ws + "/link"}, want: ws + "/link make_sym"},
		// unlink, rmdir, truncate
		{name: "unlink in a read-only workspace", grant: "verify", op: Op{Kind: OpUnlink, Path: ws + "/Cargo.toml"},
			want: ws + "/Cargo.toml remove_file"},
		{name: "rmdir in the target dir", grant: "verify", op: Op{Kind: OpRmdir, Path: ws + "/target/debug"}},
		{name: "truncate outside", grant: "verify", op: Op{Kind: OpTrunc, Path: "/etc/passwd"}, want: "/etc/passwd truncate"},
		// rename and link
		{name: "rename within the target dir", grant: "verify", op: Op{Kind: OpRename, Path: ws + "/target/a", Dest: ws + "/target/b/a"}},
		{name: "rename from temp into target", grant: "verify", op: Op{Kind: OpRename, Path: tmp + "/x", Dest: ws + "/target/x"}},
		{name: "rename from target into the workspace", grant: "verify", op: Op{Kind: OpRename, Path: ws + "/target/x", Dest: ws + "/x"},
			want: ws + "/x make_reg; " + ws + "/x refer"},
		{name: "rename a directory replacing one", grant: "verify", op: Op{Kind: OpRename, Path: ws + "/target/a", Dest: ws + "/src", Dir: true, Replace: true},
			want: ws + "/src remove_dir; " + ws + "/src make_dir; " + ws + "/src refer"},
		{name: "rename that would gain rights", grant: "inspect",
			extra: []policy.Rule{{Path: "/a", Access: policy.ReadWrite &^ policy.Truncate}, {Path: "/b", Access: policy.ReadWrite}},
			op:    Op{Kind: OpRename, Path: "/a/f", Dest: "/b/f"}, want: "/b/f refer (would gain rights (truncate))"},
		{name: "rename that loses rights", grant: "inspect",
			extra: []policy.Rule{{Path: "/a", Access: policy.ReadWrite &^ policy.Truncate}, {Path: "/b", Access: policy.ReadWrite}},
			op:    Op{Kind: OpRename, Path: "/b/f", Dest: "/a/f"}},
		{name: "link across directories", grant: "inspect", op: Op{Kind: OpLink, Path: tmp + "/a", Dest: tmp + "/d/a"}},
		// protected paths, carved
		{name: "carved: create in a workspace subdirectory", grant: "write", op: Op{Kind: OpCreate, Path: ws + "/src/new.rs"}},
		{name: "carved: create at the workspace root", grant: "write", op: Op{Kind: OpCreate, Path: ws + "/new.txt"},
			want: ws + "/new.txt make_reg"},
		{name: "carved: plant a hook", grant: "write", op: Op{Kind: OpCreate, Path: ws + "/.git/hooks/pre-commit"},
			want: ws + "/.git/hooks/pre-commit make_reg"},
		{name: "carved: rewrite git config", grant: "write", op: Op{Kind: OpOpen, Path: ws + "/.git/config", Rights: w},
			want: ws + "/.git/config write_file"},
		{name: "carved: new object", grant: "write", op: Op{Kind: OpCreate, Path: ws + "/.git/objects/ab/cdef"}},
		{name: "carved: rename the gitdir", grant: "write", op: Op{Kind: OpRename, Path: ws + "/.git", Dest: ws + "/old", Dir: true},
			want: ws + "/.git remove_dir; " + ws + "/old make_dir"},
		{name: "carved: chmod git config (Landlock does not see it)", grant: "write", op: Op{Kind: OpChmod, Path: ws + "/.git/config"}},
		{name: "carved: rc file outside any writable rule", grant: "full", op: Op{Kind: OpOpen, Path: home + "/.bashrc", Rights: w},
			want: home + "/.bashrc write_file"},
		// protected paths, mounted read-only
		{name: "mounted: create at the workspace root", grant: "write", prot: ProtectMounted, op: Op{Kind: OpCreate, Path: ws + "/new.txt"}},
		{name: "mounted: plant a hook", grant: "write", prot: ProtectMounted, op: Op{Kind: OpCreate, Path: ws + "/.git/hooks/pre-commit"},
			want: ws + "/.git/hooks/pre-commit make_reg (read-only mount)"},
		{name: "mounted: chmod git config", grant: "write", prot: ProtectMounted, op: Op{Kind: OpChmod, Path: ws + "/.git/config"},
			want: ws + "/.git/config change_metadata (read-only mount)"},
		{name: "mounted: unlink git config", grant: "write", prot: ProtectMounted, op: Op{Kind: OpUnlink, Path: ws + "/.git/config"},
			want: ws + "/.git/config remove_file (mount point)"},
		{name: "mounted: rename the gitdir", grant: "write", prot: ProtectMounted, op: Op{Kind: OpRename, Path: ws + "/.git", Dest: ws + "/old", Dir: true},
			want: ws + "/.git remove_dir (mount point)"},
		{name: "mounted: a missing protected path is swept, not refused", grant: "write", prot: ProtectMounted, op: Op{Kind: OpCreate, Path: ws + "/.wrun.toml"}},
		// sockets
		{name: "tcp with network on", grant: "verify", op: Op{Kind: OpConnect, Addr: "127.0.0.1:8080"}},
		{name: "tcp with network off", grant: "inspect", op: Op{Kind: OpConnect, Addr: "127.0.0.1:8080"}, want: "127.0.0.1:8080 connect_tcp"},
		{name: "tcp bind with network off", grant: "inspect", op: Op{Kind: OpBind, Addr: "tcp:0.0.0.0:80"}, want: "0.0.0.0:80 bind_tcp"},
		{name: "udp with network off", grant: "inspect", op: Op{Kind: OpConnect, Addr: "udp:10.0.0.1:53"}, want: "udp:10.0.0.1:53 socket_inet"},
		{name: "inet socket with network off", grant: "inspect", op: Op{Kind: OpSocket, Addr: "inet6"}, want: "inet6 socket_inet"},
		{name: "unix socket, unconfinable kernel", grant: "inspect", op: Op{Kind: OpSocket, Addr: "unix"}, want: "unix socket_unix"},
		{name: "unix socket, ABI 9", grant: "inspect", unix: true, op: Op{Kind: OpSocket, Addr: "unix"}},
		{name: "D-Bus, ABI 9", grant: "inspect", unix: true, op: Op{Kind: OpConnect, Addr: "unix:/run/user/1000/bus"},
			want: "unix:/run/user/1000/bus connect_unix"},
		{name: "D-Bus, desktop on", grant: "inspect,desktop=on", op: Op{Kind: OpConnect, Addr: "unix:/run/user/1000/bus"}},
		{name: "bind a socket in temp, ABI 9", grant: "inspect", unix: true, op: Op{Kind: OpBind, Addr: "unix:" + tmp + "/s"}},
		{name: "bind a socket in the workspace, ABI 9", grant: "inspect", unix: true, op: Op{Kind: OpBind, Addr: "unix:" + ws + "/s"},
			want: ws + "/s make_sock"},
		{name: "abstract socket", grant: "verify", op: Op{Kind: OpConnect, Addr: "unix:@/tmp/.X11-unix/X0"},
			want: "unix:@/tmp/.X11-unix/X0 connect_abstract_unix"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := analyzer(t, tc.grant, Facts{Protection: tc.prot, UnixConfined: tc.unix}, tc.extra...)
			got := render(a.Check(tc.op))
			if got != tc.want {
				t.Errorf("Check(%+v)\n got %q\nwant %q", tc.op, got, tc.want)
			}
			if a.WouldDeny(tc.op) != (tc.want != "") {
				t.Errorf("WouldDeny disagrees with Check")
			}
			if tc.prot == ProtectCarved && !tc.unix && WouldDeny(a.p, tc.op) != (tc.want != "") {
				t.Errorf("package WouldDeny disagrees with Check")
			}
		})
	}
}

func TestOpDenials(t *testing.T) {
	op := Op{Kind: OpCreate, Path: ws + "/x"}
	a := analyzer(t, "verify", Facts{})
	ds := op.Denials(a.Check(op))
	if len(ds) != 1 || ds[0].Op != OpCreate || ds[0].Path != ws+"/x" || ds[0].Right != "make_reg" || !ds[0].Exact || ds[0].Count != 1 {
		t.Errorf("Denials = %+v", ds)
	}
}

func TestParseRights(t *testing.T) {
	for in, want := range map[string]policy.Access{
		"write_file":          policy.WriteFile,
		"make_reg,refer":      policy.MakeReg | policy.Refer,
		"connect_tcp":         0,
		"":                    0,
		policy.Write.String(): policy.Write,
	} {
		if got := ParseRights(in); got != want {
			t.Errorf("ParseRights(%q) = %v, want %v", in, got, want)
		}
	}
}

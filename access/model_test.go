package access

import (
	"slices"
	"testing"

	"github.com/wrun-dev/wrun/policy"
)

// The model, one table per operation family, with what the kernel refuses
// ("" for allowed) and what decided it. It mirrors Landlock: rights
// inherit beneath a rule, rules add up, holes and protected paths take
// rights away (from the directories above them too, when carved),
// directory rights are checked on the parent, moves across directories
// need refer on both sides and may not gain rights.

var (
	w, r = policy.WriteFile, policy.ReadFile
	// Two directories whose rules differ by truncate, for the moves.
	aNoTrunc = []policy.Rule{{Path: "/a", Access: policy.ReadWrite &^ policy.Truncate}, {Path: "/b", Access: policy.ReadWrite}}
)

func TestCheckOpen(t *testing.T) {
	checkRows(t, []row{
		{name: "read in the workspace", grant: "verify", op: Op{Kind: OpOpen, Path: ws + "/src/main.rs"}},
		{name: "write in a read-only workspace", grant: "verify", op: Op{Kind: OpOpen, Path: ws + "/src/main.rs", Rights: w | r},
			want: ws + "/src/main.rs write_file <- no-rule /"},
		{name: "truncate on open", grant: "verify", op: Op{Kind: OpOpen, Path: ws + "/Cargo.lock", Rights: w | policy.Truncate},
			want: ws + "/Cargo.lock write_file,truncate <- no-rule /"},
		{name: "write build output", grant: "verify", op: Op{Kind: OpOpen, Path: ws + "/target/debug/app", Rights: w}},
		{name: "write the private temp dir", grant: "inspect", op: Op{Kind: OpOpen, Path: tmp + "/x", Rights: w}},
		{name: "write /dev/null", grant: "inspect", op: Op{Kind: OpOpen, Path: "/dev/null", Rights: w | r}},
		{name: "write a device", grant: "full", op: Op{Kind: OpOpen, Path: "/dev/sda", Rights: w},
			want: "/dev/sda write_file <- hole /dev"},
		{name: "read a credential store", grant: "full", op: Op{Kind: OpOpen, Path: home + "/.ssh/id_ed25519"},
			want: home + "/.ssh/id_ed25519 read_file <- hole " + home + "/.ssh"},
		{name: "read and write a credential store", grant: "full", op: Op{Kind: OpOpen, Path: home + "/.ssh/known_hosts", Rights: r | w},
			want: home + "/.ssh/known_hosts write_file,read_file <- hole " + home + "/.ssh"},
		{name: "list a credential store", grant: "full", op: Op{Kind: OpOpen, Path: home + "/.ssh", Dir: true}},
		{name: "read beside a credential store", grant: "inspect", op: Op{Kind: OpOpen, Path: home + "/.cargo/config.toml"}},
		{name: "read a file credential store", grant: "inspect", op: Op{Kind: OpOpen, Path: home + "/.cargo/credentials.toml"},
			want: home + "/.cargo/credentials.toml read_file <- hole " + home + "/.cargo/credentials.toml"},
		{name: "files=none hides the workspace", grant: "inspect,files=none", op: Op{Kind: OpOpen, Path: ws + "/README"},
			want: ws + "/README read_file <- hole " + ws},
		{name: "carved: rewrite git config", grant: "write", op: Op{Kind: OpOpen, Path: ws + "/.git/config", Rights: w},
			want: ws + "/.git/config write_file <- hole " + ws + "/.git/config"},
		{name: "carved: read git config", grant: "write", op: Op{Kind: OpOpen, Path: ws + "/.git/config"}},
		{name: "carved: rc file outside any writable rule", grant: "full", op: Op{Kind: OpOpen, Path: home + "/.bashrc", Rights: w},
			want: home + "/.bashrc write_file <- no-rule /"},
		{name: "mounted: rewrite git config", grant: "write", pf: mounted, op: Op{Kind: OpOpen, Path: ws + "/.git/config", Rights: w | policy.Truncate},
			want: ws + "/.git/config write_file,truncate (read-only mount) <- read-only-mount " + ws + "/.git/config"},
		// A read-only mount refuses writes only.
		{name: "mounted: read git config", grant: "write", pf: mounted, op: Op{Kind: OpOpen, Path: ws + "/.git/config", Rights: r}},
	})
}

func TestCheckCreate(t *testing.T) {
	checkRows(t, []row{
		{name: "create in a read-only workspace", grant: "verify", op: Op{Kind: OpCreate, Path: ws + "/new.txt"},
			want: ws + "/new.txt make_reg <- no-rule /"},
		{name: "create in the target dir", grant: "verify", op: Op{Kind: OpCreate, Path: ws + "/target/debug/x"}},
		{name: "create in a tool cache under verify", grant: "verify", op: Op{Kind: OpCreate, Path: home + "/.cargo/registry/x"},
			want: home + "/.cargo/registry/x make_reg <- no-rule /"},
		{name: "create in a tool cache under full", grant: "full", op: Op{Kind: OpCreate, Path: home + "/.cargo/registry/x"}},
		{name: "create for reading in temp", grant: "inspect", op: Op{Kind: OpCreate, Path: tmp + "/x", Rights: r}},
		// Landlock refuses the creation before the open.
		{name: "create where nothing is granted reports make_reg only", grant: "inspect", op: Op{Kind: OpCreate, Path: "/opt/x", Rights: r | w},
			want: "/opt/x make_reg <- no-rule /"},
		{name: "create where the file may be made but not written", grant: "inspect",
			extra: []policy.Rule{{Path: "/a", Access: policy.MakeReg | policy.ReadFile}},
			op:    Op{Kind: OpCreate, Path: "/a/f"}, want: "/a/f write_file <- no-rule /a"},
		{name: "carved: create in a workspace subdirectory", grant: "write", op: Op{Kind: OpCreate, Path: ws + "/src/new.rs"}},
		{name: "carved: create at the workspace root", grant: "write", op: Op{Kind: OpCreate, Path: ws + "/new.txt"},
			want: ws + "/new.txt make_reg <- carved " + ws + "/.git/config"},
		{name: "carved: plant a hook", grant: "write", op: Op{Kind: OpCreate, Path: ws + "/.git/hooks/pre-commit"},
			want: ws + "/.git/hooks/pre-commit make_reg <- hole " + ws + "/.git/hooks"},
		{name: "carved: new object", grant: "write", op: Op{Kind: OpCreate, Path: ws + "/.git/objects/ab/cdef"}},
		{name: "mounted: create at the workspace root", grant: "write", pf: mounted, op: Op{Kind: OpCreate, Path: ws + "/new.txt"}},
		{name: "mounted: plant a hook", grant: "write", pf: mounted, op: Op{Kind: OpCreate, Path: ws + "/.git/hooks/pre-commit"},
			want: ws + "/.git/hooks/pre-commit make_reg (read-only mount) <- read-only-mount " + ws + "/.git/hooks"},
		{name: "mounted: a missing protected path is swept, not refused", grant: "write", pf: mounted, op: Op{Kind: OpCreate, Path: ws + "/.wrun.toml"}},
		{name: "carved: a missing protected path is swept, not refused", grant: "write", op: Op{Kind: OpCreate, Path: ws + "/src/.wrun.toml"}},
	})
}

func TestCheckMkdir(t *testing.T) {
	checkRows(t, []row{
		{name: "mkdir outside", grant: "verify", op: Op{Kind: OpMkdir, Path: "/opt/x"}, want: "/opt/x make_dir <- no-rule /"},
		{name: "mkdir in temp", grant: "inspect", op: Op{Kind: OpMkdir, Path: tmp + "/d"}},
		{name: "mkdir in the target dir", grant: "verify", op: Op{Kind: OpMkdir, Path: ws + "/target/debug"}},
		{name: "carved: mkdir in .git", grant: "write", op: Op{Kind: OpMkdir, Path: ws + "/.git/new"},
			want: ws + "/.git/new make_dir <- carved " + ws + "/.git/config"},
		{name: "mounted: mkdir in the hooks", grant: "write", pf: mounted, op: Op{Kind: OpMkdir, Path: ws + "/.git/hooks/d"},
			want: ws + "/.git/hooks/d make_dir (read-only mount) <- read-only-mount " + ws + "/.git/hooks"},
	})
}

func TestCheckMknod(t *testing.T) {
	checkRows(t, []row{
		{name: "mkfifo in temp", grant: "inspect", op: Op{Kind: OpMknod, Path: tmp + "/f", Rights: policy.MakeFifo}},
		{name: "mknod a regular file in temp", grant: "inspect", op: Op{Kind: OpMknod, Path: tmp + "/f"}},
		{name: "mknod a device in temp", grant: "inspect", op: Op{Kind: OpMknod, Path: tmp + "/sda", Rights: policy.MakeBlock},
			want: tmp + "/sda make_block <- no-rule " + tmp},
		{name: "mknod a character device in temp", grant: "inspect", op: Op{Kind: OpMknod, Path: tmp + "/tty", Rights: policy.MakeChar},
			want: tmp + "/tty make_char <- no-rule " + tmp},
		{name: "mkfifo where links and fifos are not made", grant: "inspect",
			extra: []policy.Rule{{Path: "/a", Access: policy.ReadWritePlain}},
			op:    Op{Kind: OpMknod, Path: "/a/f", Rights: policy.MakeFifo}, want: "/a/f make_fifo <- no-rule /a"},
		{name: "mounted: a socket in the hooks", grant: "write", pf: mounted, op: Op{Kind: OpMknod, Path: ws + "/.git/hooks/s", Rights: policy.MakeSock},
			want: ws + "/.git/hooks/s make_sock (read-only mount) <- read-only-mount " + ws + "/.git/hooks"},
	})
}

func TestCheckSymlink(t *testing.T) {
	checkRows(t, []row{
		{name: "symlink in the workspace", grant: "verify", op: Op{Kind: OpSymlink, Path: ws + "/link"}, want: ws + "/link make_sym <- no-rule /"},
		{name: "symlink in temp", grant: "inspect", op: Op{Kind: OpSymlink, Path: tmp + "/link"}},
		{name: "symlink where links are not made", grant: "inspect",
			extra: []policy.Rule{{Path: "/a", Access: policy.ReadWritePlain}},
			op:    Op{Kind: OpSymlink, Path: "/a/l"}, want: "/a/l make_sym <- no-rule /a"},
	})
}

func TestCheckRemove(t *testing.T) {
	checkRows(t, []row{
		{name: "unlink in a read-only workspace", grant: "verify", op: Op{Kind: OpUnlink, Path: ws + "/Cargo.toml"},
			want: ws + "/Cargo.toml remove_file <- no-rule /"},
		{name: "unlink as rmdir in a read-only workspace", grant: "verify", op: Op{Kind: OpUnlink, Path: ws + "/src", Dir: true},
			want: ws + "/src remove_dir <- no-rule /"},
		{name: "rmdir in the target dir", grant: "verify", op: Op{Kind: OpRmdir, Path: ws + "/target/debug"}},
		{name: "unlink in temp", grant: "inspect", op: Op{Kind: OpUnlink, Path: tmp + "/x"}},
		{name: "carved: unlink git config", grant: "write", op: Op{Kind: OpUnlink, Path: ws + "/.git/config"},
			want: ws + "/.git/config remove_file <- carved " + ws + "/.git/config"},
		{name: "carved: unlink an object", grant: "write", op: Op{Kind: OpUnlink, Path: ws + "/.git/objects/ab/cdef"}},
		{name: "mounted: unlink git config", grant: "write", pf: mounted, op: Op{Kind: OpUnlink, Path: ws + "/.git/config"},
			want: ws + "/.git/config remove_file (mount point) <- mount-point " + ws + "/.git/config"},
		{name: "mounted: unlink a hook", grant: "write", pf: mounted, op: Op{Kind: OpUnlink, Path: ws + "/.git/hooks/pre-commit"},
			want: ws + "/.git/hooks/pre-commit remove_file (read-only mount) <- read-only-mount " + ws + "/.git/hooks"},
		// A pinned directory is a mount point, not read-only.
		{name: "mounted: rmdir the gitdir", grant: "write", pf: mounted, op: Op{Kind: OpRmdir, Path: ws + "/.git"},
			want: ws + "/.git remove_dir (mount point) <- mount-point " + ws + "/.git"},
		{name: "mounted: unlink in the gitdir", grant: "write", pf: mounted, op: Op{Kind: OpUnlink, Path: ws + "/.git/index"}},
	})
}

func TestCheckTruncate(t *testing.T) {
	checkRows(t, []row{
		{name: "truncate outside", grant: "verify", op: Op{Kind: OpTrunc, Path: "/etc/passwd"}, want: "/etc/passwd truncate <- no-rule /"},
		{name: "truncate build output", grant: "verify", op: Op{Kind: OpTrunc, Path: ws + "/target/debug/app"}},
		{name: "truncate /dev/null", grant: "inspect", op: Op{Kind: OpTrunc, Path: "/dev/null"}},
		{name: "truncate where only writing is granted", grant: "inspect", extra: aNoTrunc,
			op: Op{Kind: OpTrunc, Path: "/a/f"}, want: "/a/f truncate <- no-rule /a"},
		{name: "mounted: truncate git config", grant: "write", pf: mounted, op: Op{Kind: OpTrunc, Path: ws + "/.git/config"},
			want: ws + "/.git/config truncate (read-only mount) <- read-only-mount " + ws + "/.git/config"},
	})
}

func TestCheckExec(t *testing.T) {
	checkRows(t, []row{
		{name: "exec from the temp dir", grant: "inspect", op: Op{Kind: OpExec, Path: tmp + "/a.out"}},
		{name: "exec a system program", grant: "inspect", op: Op{Kind: OpExec, Path: "/usr/bin/git"}},
		{name: "exec from a credential store", grant: "full", op: Op{Kind: OpExec, Path: home + "/.ssh/x"},
			want: home + "/.ssh/x execute <- hole " + home + "/.ssh"},
		{name: "exec where no rule grants it", grant: "inspect",
			extra: []policy.Rule{{Path: "/a", Access: policy.Read}}, op: Op{Kind: OpExec, Path: "/a/x"}},
		{name: "exec in a hidden workspace", grant: "inspect,files=none", op: Op{Kind: OpExec, Path: ws + "/run.sh"},
			want: ws + "/run.sh execute <- hole " + ws},
	})
}

func TestCheckRenameAndLink(t *testing.T) {
	checkRows(t, []row{
		// Same directory: no refer needed.
		{name: "rename within a directory without refer", grant: "inspect",
			extra: []policy.Rule{{Path: "/a", Access: policy.Read | policy.RemoveFile | policy.MakeReg}},
			op:    Op{Kind: OpRename, Path: "/a/x", Dest: "/a/y"}},
		{name: "rename within a directory without remove", grant: "inspect",
			extra: []policy.Rule{{Path: "/a", Access: policy.Read | policy.MakeReg}},
			op:    Op{Kind: OpRename, Path: "/a/x", Dest: "/a/y"}, want: "/a/x remove_file <- no-rule /a"},
		{name: "rename within the target dir", grant: "verify", op: Op{Kind: OpRename, Path: ws + "/target/a", Dest: ws + "/target/b/a"}},
		{name: "rename from temp into target", grant: "verify", op: Op{Kind: OpRename, Path: tmp + "/x", Dest: ws + "/target/x"}},
		{name: "rename from target into the workspace", grant: "verify", op: Op{Kind: OpRename, Path: ws + "/target/x", Dest: ws + "/x"},
			want: ws + "/x make_reg <- no-rule /; " + ws + "/x refer <- no-rule /"},
		{name: "rename across directories without refer", grant: "inspect",
			extra: []policy.Rule{{Path: "/a", Access: policy.ReadWrite &^ policy.Refer}, {Path: "/b", Access: policy.ReadWrite &^ policy.Refer}},
			op:    Op{Kind: OpRename, Path: "/a/x", Dest: "/b/x"}, want: "/a/x refer <- no-rule /a; /b/x refer <- no-rule /b"},
		{name: "rename a directory replacing one", grant: "verify", op: Op{Kind: OpRename, Path: ws + "/target/a", Dest: ws + "/src", Dir: true, Replace: true},
			want: ws + "/src remove_dir <- no-rule /; " + ws + "/src make_dir <- no-rule /; " + ws + "/src refer <- no-rule /"},
		{name: "rename replacing a file needs remove at the destination", grant: "inspect",
			extra: []policy.Rule{{Path: "/a", Access: policy.ReadWrite}, {Path: "/b", Access: policy.ReadWrite &^ policy.RemoveFile}},
			op:    Op{Kind: OpRename, Path: "/a/f", Dest: "/b/f", Replace: true}, want: "/b/f remove_file <- no-rule /b"},
		// The node kind decides the make right.
		{name: "rename a symbolic link where links are not made", grant: "inspect",
			extra: []policy.Rule{{Path: "/a", Access: policy.ReadWrite}, {Path: "/b", Access: policy.ReadWritePlain}},
			op:    Op{Kind: OpRename, Path: "/a/l", Dest: "/b/l", Rights: policy.MakeSym}, want: "/b/l make_sym <- no-rule /b"},
		{name: "rename a fifo where fifos are not made", grant: "inspect",
			extra: []policy.Rule{{Path: "/a", Access: policy.ReadWrite}, {Path: "/b", Access: policy.ReadWritePlain}},
			op:    Op{Kind: OpRename, Path: "/a/f", Dest: "/b/f", Rights: policy.MakeFifo}, want: "/b/f make_fifo <- no-rule /b"},
		{name: "rename a regular file where links are not made", grant: "inspect",
			extra: []policy.Rule{{Path: "/a", Access: policy.ReadWrite}, {Path: "/b", Access: policy.ReadWritePlain}},
			op:    Op{Kind: OpRename, Path: "/a/f", Dest: "/b/f"}},
		// Landlock's EXDEV: the moved entry may not gain rights.
		{name: "rename that would gain rights", grant: "inspect", extra: aNoTrunc,
			op: Op{Kind: OpRename, Path: "/a/f", Dest: "/b/f"}, want: "/b/f refer (would gain rights (truncate)) <- refer-gain /b"},
		{name: "rename that loses rights", grant: "inspect", extra: aNoTrunc,
			op: Op{Kind: OpRename, Path: "/b/f", Dest: "/a/f"}},
		{name: "link that would gain rights", grant: "inspect", extra: aNoTrunc,
			op: Op{Kind: OpLink, Path: "/a/f", Dest: "/b/f"}, want: "/b/f refer (would gain rights (truncate)) <- refer-gain /b"},
		{name: "rename a directory that would gain directory rights", grant: "inspect",
			extra: []policy.Rule{{Path: "/a", Access: policy.ReadWritePlain}, {Path: "/b", Access: policy.ReadWrite}},
			op:    Op{Kind: OpRename, Path: "/a/d", Dest: "/b/d", Dir: true}, want: "/b/d refer (would gain rights (make_sock,make_fifo,make_sym)) <- refer-gain /b"},
		{name: "rename a file where only directory rights differ", grant: "inspect",
			extra: []policy.Rule{{Path: "/a", Access: policy.ReadWritePlain}, {Path: "/b", Access: policy.ReadWrite}},
			op:    Op{Kind: OpRename, Path: "/a/f", Dest: "/b/f"}},
		// The rules on a replaced entry stay with it: the moved entry gets
		// only its new directory's.
		{name: "replacing an entry with a rule of its own gains nothing from it", grant: "inspect",
			extra: []policy.Rule{{Path: "/a", Access: policy.ReadWrite &^ policy.Truncate}, {Path: "/b", Access: policy.ReadWrite &^ policy.Truncate},
				{Path: "/b/f", Access: policy.ReadFile | policy.WriteExisting}},
			op: Op{Kind: OpRename, Path: "/a/g", Dest: "/b/f", Replace: true}},
		// The moved entry keeps the rules on itself.
		{name: "a rule on the moved entry counts", grant: "inspect",
			extra: append([]policy.Rule{{Path: "/a/f", Access: policy.Truncate}}, aNoTrunc...),
			op:    Op{Kind: OpRename, Path: "/a/f", Dest: "/b/f"}},
		{name: "link across directories", grant: "inspect", op: Op{Kind: OpLink, Path: tmp + "/a", Dest: tmp + "/d/a"}},
		{name: "link into a read-only workspace", grant: "verify", op: Op{Kind: OpLink, Path: tmp + "/a", Dest: ws + "/a"},
			want: ws + "/a make_reg <- no-rule /; " + ws + "/a refer <- no-rule /"},
		{name: "carved: rename the gitdir", grant: "write", op: Op{Kind: OpRename, Path: ws + "/.git", Dest: ws + "/old", Dir: true},
			want: ws + "/.git remove_dir <- carved " + ws + "/.git/config; " + ws + "/old make_dir <- carved " + ws + "/.git/config"},
		{name: "mounted: rename the gitdir", grant: "write", pf: mounted, op: Op{Kind: OpRename, Path: ws + "/.git", Dest: ws + "/old", Dir: true},
			want: ws + "/.git remove_dir (mount point) <- mount-point " + ws + "/.git"},
		{name: "mounted: rename onto git config", grant: "write", pf: mounted, op: Op{Kind: OpRename, Path: ws + "/x", Dest: ws + "/.git/config", Replace: true},
			want: ws + "/.git/config remove_file (mount point) <- mount-point " + ws + "/.git/config"},
		{name: "mounted: move into the hooks", grant: "write", pf: mounted, op: Op{Kind: OpRename, Path: ws + "/x", Dest: ws + "/.git/hooks/x"},
			want: ws + "/.git/hooks/x make_reg (read-only mount) <- read-only-mount " + ws + "/.git/hooks; " +
				ws + "/.git/hooks/x refer (read-only mount) <- read-only-mount " + ws + "/.git/hooks"},
		{name: "mounted: move a hook out", grant: "write", pf: mounted, op: Op{Kind: OpRename, Path: ws + "/.git/hooks/pre-commit", Dest: ws + "/x"},
			want: ws + "/.git/hooks/pre-commit remove_file (read-only mount) <- read-only-mount " + ws + "/.git/hooks; " +
				ws + "/.git/hooks/pre-commit refer (read-only mount) <- read-only-mount " + ws + "/.git/hooks"},
	})
}

func TestCheckMetadata(t *testing.T) {
	checkRows(t, []row{
		{name: "carved: chmod git config (Landlock does not see it)", grant: "write", op: Op{Kind: OpChmod, Path: ws + "/.git/config"}},
		{name: "chmod in a read-only workspace (Landlock does not see it)", grant: "verify", op: Op{Kind: OpChmod, Path: ws + "/Cargo.toml"}},
		{name: "mounted: chmod git config", grant: "write", pf: mounted, op: Op{Kind: OpChmod, Path: ws + "/.git/config"},
			want: ws + "/.git/config change_metadata (read-only mount) <- read-only-mount " + ws + "/.git/config"},
		{name: "mounted: chown a hook", grant: "write", pf: mounted, op: Op{Kind: OpChown, Path: ws + "/.git/hooks/pre-commit"},
			want: ws + "/.git/hooks/pre-commit change_metadata (read-only mount) <- read-only-mount " + ws + "/.git/hooks"},
		{name: "mounted: touch git config", grant: "write", pf: mounted, op: Op{Kind: OpUtime, Path: ws + "/.git/config"},
			want: ws + "/.git/config change_metadata (read-only mount) <- read-only-mount " + ws + "/.git/config"},
		{name: "mounted: setxattr on the hooks", grant: "write", pf: mounted, op: Op{Kind: OpXattr, Path: ws + "/.git/hooks"},
			want: ws + "/.git/hooks change_metadata (read-only mount) <- read-only-mount " + ws + "/.git/hooks"},
		{name: "mounted: chmod the pinned gitdir", grant: "write", pf: mounted, op: Op{Kind: OpChmod, Path: ws + "/.git"}},
		{name: "mounted: chmod beside git config", grant: "write", pf: mounted, op: Op{Kind: OpChmod, Path: ws + "/.git/HEAD"}},
	})
}

func TestCheckSockets(t *testing.T) {
	checkRows(t, []row{
		{name: "tcp with network on", grant: "verify", op: Op{Kind: OpConnect, Addr: "127.0.0.1:8080"}},
		{name: "tcp with network off", grant: "inspect", op: Op{Kind: OpConnect, Addr: "127.0.0.1:8080"},
			want: "127.0.0.1:8080 connect_tcp <- network"},
		{name: "tcp bind with network off", grant: "inspect", op: Op{Kind: OpBind, Addr: "tcp:0.0.0.0:80"}, want: "0.0.0.0:80 bind_tcp <- network"},
		{name: "tcp with network off, kernel without TCP rules", grant: "inspect", pf: Platform{TCPUnhandled: true},
			op: Op{Kind: OpConnect, Addr: "[::1]:8080"}},
		{name: "udp with network off", grant: "inspect", op: Op{Kind: OpConnect, Addr: "udp:10.0.0.1:53"}, want: "udp:10.0.0.1:53 socket_inet <- network"},
		{name: "udp with network on", grant: "verify", op: Op{Kind: OpConnect, Addr: "udp:10.0.0.1:53"}},
		{name: "inet socket with network off", grant: "inspect", op: Op{Kind: OpSocket, Addr: "inet6"}, want: "inet6 socket_inet <- network"},
		{name: "inet socket with network on", grant: "verify", op: Op{Kind: OpSocket, Addr: "inet"}},
		{name: "unix socket, unconfinable kernel", grant: "inspect", op: Op{Kind: OpSocket, Addr: "unix"}, want: "unix socket_unix <- ipc"},
		{name: "unix socket, ABI 9", grant: "inspect", pf: abi9, op: Op{Kind: OpSocket, Addr: "unix"}},
		{name: "unix socket, desktop on", grant: "inspect,desktop=on", op: Op{Kind: OpSocket, Addr: "local"}},
		{name: "D-Bus, unconfinable kernel", grant: "inspect", op: Op{Kind: OpConnect, Addr: "unix:/run/user/1000/bus"},
			want: "unix:/run/user/1000/bus socket_unix <- ipc"},
		{name: "D-Bus, ABI 9", grant: "inspect", pf: abi9, op: Op{Kind: OpConnect, Addr: "unix:/run/user/1000/bus"},
			want: "unix:/run/user/1000/bus connect_unix <- ipc"},
		{name: "D-Bus, desktop on", grant: "inspect,desktop=on", op: Op{Kind: OpConnect, Addr: "unix:/run/user/1000/bus"}},
		{name: "bind a socket in temp, ABI 9", grant: "inspect", pf: abi9, op: Op{Kind: OpBind, Addr: "unix:" + tmp + "/s"}},
		{name: "bind a socket in the workspace, ABI 9", grant: "inspect", pf: abi9, op: Op{Kind: OpBind, Addr: "unix:" + ws + "/s"},
			want: ws + "/s make_sock <- no-rule /"},
		{name: "bind a socket in the workspace, desktop on", grant: "inspect,desktop=on", op: Op{Kind: OpBind, Addr: "unix:" + ws + "/s"},
			want: ws + "/s make_sock <- no-rule /"},
		{name: "abstract socket", grant: "verify", op: Op{Kind: OpConnect, Addr: "unix:@/tmp/.X11-unix/X0"},
			want: "unix:@/tmp/.X11-unix/X0 connect_abstract_unix <- ipc"},
		{name: "abstract socket, desktop on", grant: "verify,desktop=on", op: Op{Kind: OpConnect, Addr: "unix:@/tmp/.X11-unix/X0"}},
		{name: "bind an abstract socket", grant: "verify", op: Op{Kind: OpBind, Addr: "unix:@name"}},
	})
}

// TestCheckKernelABI: a right the kernel does not restrict is never
// denied, but refer, which Landlock denies across directories whenever it
// restricts anything.
func TestCheckKernelABI(t *testing.T) {
	abi1 := Platform{Unhandled: policy.Refer | policy.Truncate | policy.IoctlDev}
	abi2 := Platform{Unhandled: policy.Truncate | policy.IoctlDev}
	none := Platform{Unhandled: policy.All}
	noneMounted := Platform{Unhandled: policy.All, Protection: ProtectExact}
	checkRows(t, []row{
		{name: "ABI 2: truncate is not restricted", grant: "verify", pf: abi2, op: Op{Kind: OpTrunc, Path: "/etc/passwd"}},
		{name: "ABI 2: truncate on open is not restricted", grant: "verify", pf: abi2,
			op: Op{Kind: OpOpen, Path: ws + "/Cargo.lock", Rights: w | policy.Truncate}, want: ws + "/Cargo.lock write_file <- no-rule /"},
		{name: "ABI 2: a move gains no unrestricted right", grant: "inspect", pf: abi2, extra: aNoTrunc,
			op: Op{Kind: OpRename, Path: "/a/f", Dest: "/b/f"}},
		{name: "ABI 1: no move across directories", grant: "verify", pf: abi1, op: Op{Kind: OpRename, Path: ws + "/target/a", Dest: ws + "/target/b/a"},
			want: ws + "/target/a refer (the kernel cannot grant refer) <- kernel; " + ws + "/target/b/a refer (the kernel cannot grant refer) <- kernel"},
		{name: "ABI 1: no link across directories", grant: "inspect", pf: abi1, op: Op{Kind: OpLink, Path: tmp + "/a", Dest: tmp + "/d/a"},
			want: tmp + "/a refer (the kernel cannot grant refer) <- kernel; " + tmp + "/d/a refer (the kernel cannot grant refer) <- kernel"},
		{name: "ABI 1: a move within a directory", grant: "verify", pf: abi1, op: Op{Kind: OpRename, Path: ws + "/target/a", Dest: ws + "/target/b"}},
		{name: "ABI 1: creating is restricted", grant: "verify", pf: abi1, op: Op{Kind: OpCreate, Path: ws + "/x"},
			want: ws + "/x make_reg <- no-rule /"},
		{name: "no Landlock: nothing refused", grant: "verify", pf: none, op: Op{Kind: OpCreate, Path: ws + "/x"}},
		{name: "no Landlock: moves across directories", grant: "verify", pf: none, op: Op{Kind: OpRename, Path: ws + "/a", Dest: "/opt/a"}},
		{name: "no Landlock: a read-only mount still refuses", grant: "write", pf: noneMounted, op: Op{Kind: OpCreate, Path: ws + "/.git/hooks/x"},
			want: ws + "/.git/hooks/x make_reg (read-only mount) <- read-only-mount " + ws + "/.git/hooks"},
	})
}

// TestCheckInstalled: with the rules as installed (carved when the plan
// was made), an entry made later in a carved directory gets only the
// directory's narrowed rights, as the kernel gives them; the simulation
// assumes it existed.
func TestCheckInstalled(t *testing.T) {
	p := fixture(t, "write")
	var holes []policy.Hole
	for _, h := range New(p, Platform{}).Holes() {
		holes = append(holes, h.Hole)
	}
	listing := map[string][]policy.Entry{
		ws:                   {{Name: ".git"}, {Name: "src"}, {Name: "link", Symlink: true}},
		ws + "/.git":         {{Name: "config"}, {Name: "hooks"}, {Name: "objects"}, {Name: "HEAD"}},
		"/":                  {{Name: "dev"}, {Name: "home"}, {Name: "tmp"}},
		"/dev":               {{Name: "null"}, {Name: "pts"}},
		home:                 {{Name: ".ssh"}, {Name: ".cargo"}, {Name: "proj"}},
		home + "/.cargo":     {{Name: "credentials.toml"}, {Name: "registry"}},
		ws + "/.git/objects": {{Name: "ab"}},
	}
	installed, notes := policy.Carve(p.Rules, holes, func(dir string) ([]policy.Entry, error) { return listing[dir], nil })
	if len(notes) != 0 {
		t.Fatal(notes)
	}
	sim := New(p, Platform{})
	inst := New(p, Platform{Installed: installed})
	tests := []struct {
		name      string
		op        Op
		sim, inst string
	}{
		{"a listed file", Op{Kind: OpOpen, Path: ws + "/src/main.rs", Rights: w}, "", ""},
		{"a file made at the root after carving", Op{Kind: OpOpen, Path: ws + "/late.txt", Rights: w},
			"", ws + "/late.txt write_file <- carved " + ws + "/.git/config"},
		{"a directory made in .git after carving", Op{Kind: OpCreate, Path: ws + "/.git/late/x"},
			"", ws + "/.git/late/x make_reg <- carved " + ws + "/.git/config"},
		{"through a symbolic link among the siblings", Op{Kind: OpOpen, Path: ws + "/link", Rights: w},
			"", ws + "/link write_file <- carved " + ws + "/.git/config"},
		{"a protected file", Op{Kind: OpOpen, Path: ws + "/.git/config", Rights: w},
			ws + "/.git/config write_file <- hole " + ws + "/.git/config", ws + "/.git/config write_file <- hole " + ws + "/.git/config"},
		{"at the carved root", Op{Kind: OpCreate, Path: ws + "/new"},
			ws + "/new make_reg <- carved " + ws + "/.git/config", ws + "/new make_reg <- carved " + ws + "/.git/config"},
		{"a hidden file", Op{Kind: OpOpen, Path: home + "/.ssh/id"},
			home + "/.ssh/id read_file <- hole " + home + "/.ssh", home + "/.ssh/id read_file <- hole " + home + "/.ssh"},
		{"an object", Op{Kind: OpCreate, Path: ws + "/.git/objects/ab/cd"}, "", ""},
	}
	for _, tc := range tests {
		if got := render(sim.Check(tc.op)); got != tc.sim {
			t.Errorf("%s, simulated: got %q, want %q", tc.name, got, tc.sim)
		}
		if got := render(inst.Check(tc.op)); got != tc.inst {
			t.Errorf("%s, installed: got %q, want %q", tc.name, got, tc.inst)
		}
	}
}

func TestRightsAndGranted(t *testing.T) {
	m := New(fixture(t, "write"), Platform{})
	rw := policy.ReadWrite
	tests := []struct {
		path           string
		rights, grants policy.Access
	}{
		{ws + "/src/", rw, rw},
		{ws, rw &^ policy.Write, rw},
		{ws + "/.git/config", rw &^ policy.Write, rw},
		{ws + "/.git/objects", rw, rw},
		{home + "/.ssh/id", policy.ReadDir, policy.ReadExec},
		{"/opt", policy.ReadExec, policy.ReadExec},
	}
	for _, tt := range tests {
		if got := m.Rights(tt.path); got != tt.rights {
			t.Errorf("Rights(%s) = %s, want %s", tt.path, got, tt.rights)
		}
		if got := m.Granted(tt.path); got != tt.grants {
			t.Errorf("Granted(%s) = %s, want %s", tt.path, got, tt.grants)
		}
	}
	if got := New(fixture(t, "inspect"), Platform{Unhandled: policy.Truncate | policy.Refer}).Rights("/opt"); got != policy.ReadExec|policy.Truncate {
		t.Errorf("unhandled rights: Rights(/opt) = %s, want read, execute and truncate (never refer)", got)
	}
	if got := New(fixture(t, "inspect"), Platform{Unhandled: policy.All}).Rights("/opt"); got != policy.All {
		t.Errorf("without Landlock: Rights(/opt) = %s, want all", got)
	}
}

func TestWith(t *testing.T) {
	m := New(fixture(t, "verify"), Platform{})
	create := Op{Kind: OpCreate, Path: ws + "/src/gen.rs"}
	if len(m.Check(create)) == 0 {
		t.Fatal("verify lets the workspace be written")
	}
	wider := m.With([]policy.Rule{{Path: ws, Access: policy.ReadWrite}}, nil)
	if got := render(wider.Check(create)); got != "" {
		t.Errorf("with a workspace rule: %s", got)
	}
	// Holes that come with the new rule narrow it, as carving would.
	hooks := Hole{Hole: policy.Hole{Path: ws + "/.git/hooks", Withheld: policy.Write, Why: "git hooks"}, Protected: true}
	wider = m.With([]policy.Rule{{Path: ws, Access: policy.ReadWrite}}, []Hole{hooks})
	if got := render(wider.Check(Op{Kind: OpCreate, Path: ws + "/new"})); got != ws+"/new make_reg <- carved "+ws+"/.git/hooks" {
		t.Errorf("with a workspace rule and its protected hooks: %s", got)
	}
	if !slices.ContainsFunc(wider.Holes(), func(h Hole) bool { return h.Path == hooks.Path && h.Protected }) {
		t.Error("With lost the hole")
	}
	// The original is unchanged.
	if len(m.Check(create)) == 0 || len(m.Holes()) != 4 {
		t.Error("With changed the model it was called on")
	}
}

func TestReadOnlyAt(t *testing.T) {
	p := fixture(t, "write")
	if _, ok := New(p, Platform{}).ReadOnlyAt(ws + "/.git/config"); ok {
		t.Error("carved protection has no read-only mount")
	}
	m := New(p, mounted)
	if pr, ok := m.ReadOnlyAt(ws + "/.git/hooks/x"); !ok || pr.Path != ws+"/.git/hooks" {
		t.Errorf("ReadOnlyAt(hooks/x) = %+v, %v", pr, ok)
	}
	if _, ok := m.ReadOnlyAt(ws + "/.git"); ok {
		t.Error("the pinned gitdir is not read-only")
	}
	if _, ok := m.ReadOnlyAt(ws + "/.wrun.toml"); ok {
		t.Error("a swept path is not mounted")
	}
}

func TestNilPolicyGrantsNothing(t *testing.T) {
	if got := render(New(nil, Platform{}).Check(Op{Kind: OpOpen, Path: "/etc/passwd"})); got != "/etc/passwd read_file <- no-rule" {
		t.Errorf("got %q", got)
	}
}

package escalate

import (
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
	"github.com/wrun-dev/wrun/verify"
)

func TestClassify(t *testing.T) {
	verifyScope := []verify.Path{{Path: ws + "/target", Dir: true, Tool: "cargo"}}
	tests := []struct {
		name  string
		grant string
		facts Facts
		extra []policy.Rule
		d     sandbox.Denial
		field string
		rule  string
		path  string
		why   string // substring
		// stays: a substring of why no widening would help (the policy
		// would protect or hide the path under any grant); "" for none.
		stays string
	}{
		{name: "write in the read-only workspace", grant: "verify",
			d:     sandbox.Denial{Op: access.OpCreate, Path: ws + "/src/gen.rs", Right: "make_reg"},
			field: "files", rule: "workspace-read-only", why: "files=read"},
		{name: "stale Cargo.lock", grant: "verify",
			d:     sandbox.Denial{Op: access.OpOpen, Path: ws + "/Cargo.lock", Right: "write_file,truncate"},
			field: "files", rule: "lockfile"},
		{name: "a read outside what the child reads", grant: "inspect",
			d:     sandbox.Denial{Op: access.OpOpen, Path: "/srv/data/private.key", Right: "read_file"},
			field: "hidden", rule: "not-readable", why: "--allow-read"},
		{name: "write outside every rule", grant: "verify",
			d:     sandbox.Denial{Op: access.OpCreate, Path: "/opt/tool/state", Right: "make_reg"},
			field: "shell", rule: "outside-scope", why: "shell=verify"},
		{name: "cargo registry under verify", grant: "verify",
			d:     sandbox.Denial{Op: access.OpCreate, Path: home + "/.cargo/registry/x", Right: "make_reg"},
			field: "shell", rule: "tool-cache", path: home + "/.cargo", why: "CARGO_HOME is shared with unsandboxed builds"},
		{name: "user GOCACHE under verify", grant: "verify",
			d:     sandbox.Denial{Op: access.OpCreate, Path: home + "/.cache/go-build/ab/cd-d", Right: "make_reg"},
			field: "shell", rule: "tool-cache", path: home + "/.cache/go-build", why: "GOCACHE"},
		{name: "GOCACHE from the environment", grant: "verify", facts: Facts{Env: []string{"GOCACHE=/var/cache/go"}},
			d:     sandbox.Denial{Op: access.OpMkdir, Path: "/var/cache/go/00", Right: "make_dir"},
			field: "shell", rule: "tool-cache", path: "/var/cache/go"},
		{name: "module cache", grant: "verify",
			d:     sandbox.Denial{Op: access.OpMkdir, Path: home + "/go/pkg/mod/cache", Right: "make_dir"},
			field: "shell", rule: "tool-cache", path: home + "/go/pkg/mod"},
		{name: "target dir under inspect, verify scope known", grant: "inspect", facts: Facts{VerifyScope: verifyScope},
			d:     sandbox.Denial{Op: access.OpMkdir, Path: ws + "/target/debug", Right: "make_dir"},
			field: "shell", rule: "verify-scope"},
		{name: "target dir under inspect, verify scope unknown", grant: "inspect",
			d:     sandbox.Denial{Op: access.OpMkdir, Path: ws + "/target/debug", Right: "make_dir"},
			field: "files", rule: "workspace-read-only"},
		// The grant never opened it: the missing rule withheld it, and the
		// protection stays as the reason nothing is offered.
		{name: "a linked worktree's .git file, rewritten", grant: "verify",
			d:     sandbox.Denial{Op: access.OpOpen, Path: "/src/wt/.git", Right: "write_file,truncate"},
			field: "shell", rule: "outside-scope", why: "shell=verify", stays: "linked worktree"},
		{name: "a new .git directory is not the .git file", grant: "inspect",
			d:     sandbox.Denial{Op: access.OpMkdir, Path: ws + "/sub/.git", Right: "make_dir"},
			field: "files", rule: "workspace-read-only"},
		{name: "git push under verify", grant: "verify",
			d:     sandbox.Denial{Op: OpGitPush, Addr: "origin", Right: RightGitPush},
			field: "shell", rule: "git-push", why: "not a boundary"},
		{name: "hook under write", grant: "write",
			d:     sandbox.Denial{Op: access.OpCreate, Path: ws + "/.git/hooks/pre-commit", Right: "make_reg"},
			field: "protected", rule: "protected", path: ws + "/.git/hooks", why: "planted hook"},
		{name: "hook under verify (not in the policy's protected list)", grant: "verify",
			d:     sandbox.Denial{Op: access.OpCreate, Path: ws + "/.git/hooks/pre-commit", Right: "make_reg"},
			field: "files", rule: "workspace-read-only", why: "files=read", stays: "planted hook"},
		{name: "git config under write", grant: "write",
			d:     sandbox.Denial{Op: access.OpOpen, Path: ws + "/.git/config", Right: "write_file"},
			field: "protected", rule: "protected", path: ws + "/.git/config", why: "core.fsmonitor"},
		{name: "linked worktree's config", grant: "verify",
			d:     sandbox.Denial{Op: access.OpOpen, Path: "/src/main/.git/worktrees/feature/config.worktree", Right: "write_file"},
			field: "shell", rule: "outside-scope", stays: "git config"},
		{name: "submodule hooks", grant: "verify",
			d:     sandbox.Denial{Op: access.OpCreate, Path: ws + "/.git/modules/lib/hooks/post-checkout", Right: "make_reg"},
			field: "files", rule: "workspace-read-only", stays: "hook"},
		{name: "shell rc file outside the writable rules", grant: "full",
			d:     sandbox.Denial{Op: access.OpOpen, Path: home + "/.bashrc", Right: "write_file"},
			field: "shell", rule: "outside-scope", why: "shell=full", stays: "start-up file"},
		{name: "shell rc file in a writable home", grant: "full", extra: []policy.Rule{{Path: home, Access: policy.ReadWrite, Source: "--allow-write"}},
			d:     sandbox.Denial{Op: access.OpOpen, Path: home + "/.bashrc", Right: "write_file"},
			field: "protected", rule: "protected", path: home + "/.bashrc", why: "start-up file"},
		{name: "cargo bin under verify: CARGO_HOME is read-only, and bin stays protected", grant: "verify",
			d:     sandbox.Denial{Op: access.OpCreate, Path: home + "/.cargo/bin/cargo-evil", Right: "make_reg"},
			field: "shell", rule: "tool-cache", path: home + "/.cargo", stays: "start-up file"},
		// The fresh HOME of a CI container: the go command creates
		// HOME/.config, which no rule of verify opens.
		{name: "HOME/.config in a home no rule opens", grant: "verify",
			d:     sandbox.Denial{Op: access.OpMkdir, Path: home + "/.config", Right: "make_dir"},
			field: "shell", rule: "outside-scope", stays: "dot file or directory of the home directory"},
		{name: "a write into a hidden path no rule opens for writing", grant: "verify",
			d:     sandbox.Denial{Op: access.OpCreate, Path: home + "/.ssh/known_hosts", Right: "make_reg"},
			field: "shell", rule: "outside-scope", stays: "SSH keys"},
		{name: "renaming the gitdir", grant: "write",
			d:     sandbox.Denial{Op: access.OpRename, Path: ws + "/.git", Right: "remove_dir"},
			field: "protected", rule: "protected", path: ws + "/.git", why: "repository directory"},
		{name: "new file beside .git, carved", grant: "write",
			d:     sandbox.Denial{Op: access.OpCreate, Path: ws + "/notes.txt", Right: "make_reg"},
			field: "protected", rule: "protected-ancestor", path: ws + "/.git/config", why: "CAP_SYS_ADMIN"},
		{name: "metadata of a read-only mount", grant: "write", facts: Facts{Protection: access.ProtectExact},
			d:     sandbox.Denial{Op: access.OpChmod, Path: ws + "/.git/config", Right: access.RightMetadata},
			field: "protected", rule: "protected", path: ws + "/.git/config"},
		{name: "credential store", grant: "full",
			d:     sandbox.Denial{Op: access.OpOpen, Path: home + "/.ssh/id_ed25519", Right: "read_file"},
			field: "hidden", rule: "hidden", path: home + "/.ssh", why: "SSH keys"},
		{name: "device", grant: "verify",
			d:     sandbox.Denial{Op: access.OpOpen, Path: "/dev/sda", Right: "read_file"},
			field: "hidden", rule: "hidden", path: "/dev", why: "device nodes"},
		{name: "workspace under files=none", grant: "inspect,files=none",
			d:     sandbox.Denial{Op: access.OpOpen, Path: ws + "/README", Right: "read_file"},
			field: "files", rule: "workspace-hidden", path: ws},
		{name: "tcp with network off", grant: "inspect",
			d:     sandbox.Denial{Op: access.OpConnect, Addr: "127.0.0.1:8080", Right: access.RightConnectTCP},
			field: "network", rule: "network-off"},
		{name: "inet socket with network off", grant: "inspect",
			d:     sandbox.Denial{Op: access.OpSocket, Addr: "inet", Right: access.RightSocketInet},
			field: "network", rule: "network-off"},
		{name: "D-Bus", grant: "verify",
			d:     sandbox.Denial{Op: access.OpConnect, Addr: "unix:/run/user/1000/bus", Right: access.RightConnectUnix},
			field: "desktop", rule: "unix-socket"},
		{name: "X11 abstract socket", grant: "verify",
			d:     sandbox.Denial{Op: access.OpConnect, Addr: "unix:@/tmp/.X11-unix/X0", Right: access.RightConnectAbstract},
			field: "desktop", rule: "abstract-socket"},
		{name: "UNIX socket on an old kernel", grant: "verify",
			d:     sandbox.Denial{Op: access.OpSocket, Addr: "unix", Right: access.RightSocketUnix},
			field: "desktop", rule: "unix-sockets-unconfined", why: "ABI below 9"},
		{name: "move that gains rights", grant: "inspect",
			d:     sandbox.Denial{Op: access.OpRename, Path: tmp + "/b/f", Right: "refer"},
			field: "shell", rule: "refer-gain"},
		{name: "signal outside the sandbox", grant: "full",
			d:     sandbox.Denial{Op: access.OpSignal, Addr: "pid 1 (init)", Right: access.RightSignal},
			field: "boundary", rule: "signal-scope"},
		{name: "nothing to go on", grant: "inspect",
			d:     sandbox.Denial{Op: "ioctl", Right: "ioctl_dev"},
			field: "unknown", rule: "unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := analyzer(t, tc.grant, tc.facts, tc.extra...)
			got := a.Classify(tc.d)
			if stays := a.find(tc.d).stays; tc.stays == "" && stays != "" || !strings.Contains(stays, tc.stays) {
				t.Errorf("stays %q, want %q", stays, tc.stays)
			}
			if got.Field != tc.field || got.Rule != tc.rule || got.Path != tc.path {
				t.Errorf("Classify = %+v, want field %q rule %q path %q", got, tc.field, tc.rule, tc.path)
			}
			if !strings.Contains(got.Why, tc.why) || got.Why == "" {
				t.Errorf("why %q does not contain %q", got.Why, tc.why)
			}
			if strings.Contains(got.Why, "{") {
				t.Errorf("why %q has an unfilled placeholder", got.Why)
			}
		})
	}
}

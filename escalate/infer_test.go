package escalate

import (
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/sandbox"
)

func renderDenials(ds []sandbox.Denial) string {
	var out []string
	for _, d := range ds {
		s := d.Op + " " + d.Path + d.Addr + " " + d.Right
		if d.Program != "" {
			s += " by " + d.Program
		}
		if d.Exact {
			s += " EXACT"
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// TestInfer reads real-looking output lines. Each must give the denial
// the policy makes, or nothing when the policy would not have refused it
// (an ordinary permission error).
func TestInfer(t *testing.T) {
	tests := []struct {
		name  string
		grant string
		argv  []string
		lines []string
		// exists, when set, are the only paths that exist (and their
		// parents); otherwise every path is taken to exist.
		exists []string
		want   string
	}{
		// shells and coreutils
		{name: "dash redirection", grant: "verify", argv: []string{"sh", "-c", "echo x > ~/.cargo/registry/x"},
			lines: []string{"sh: 1: cannot create /home/u/.cargo/registry/x: Permission denied"},
			want:  "create /home/u/.cargo/registry/x make_reg by sh"},
		{name: "bash redirection", grant: "verify", argv: []string{"bash", "-c", "echo > /opt/x"},
			lines: []string{"bash: line 1: /opt/x: Permission denied"}, exists: []string{"/opt"},
			want: "create /opt/x make_reg by bash"},
		{name: "bash redirection onto an existing workspace file", grant: "verify", argv: []string{"bash"},
			lines: []string{"bash: src/main.rs: Permission denied"}, exists: []string{ws + "/src/main.rs"},
			want: "open /home/u/proj/src/main.rs write_file by bash"},
		{name: "touch", grant: "inspect", lines: []string{"touch: cannot touch '/home/u/proj/x': Permission denied"},
			want: "create /home/u/proj/x make_reg by touch"},
		{name: "mkdir with curly quotes", grant: "inspect", lines: []string{"mkdir: cannot create directory ‘/home/u/proj/build’: Permission denied"},
			want: "mkdir /home/u/proj/build make_dir by mkdir"},
		{name: "rm", grant: "verify", lines: []string{"rm: cannot remove 'Cargo.toml': Permission denied"},
			want: "unlink /home/u/proj/Cargo.toml remove_file by rm"},
		{name: "mv", grant: "verify", lines: []string{"mv: cannot move 'target/a' to 'a': Permission denied"},
			want: "rename /home/u/proj/a make_reg by mv"},
		{name: "cp", grant: "verify", lines: []string{"cp: cannot create regular file '/etc/motd': Permission denied"},
			want: "create /etc/motd make_reg by cp"},
		{name: "ln -s", grant: "verify", lines: []string{"ln: failed to create symbolic link '/home/u/proj/latest': Permission denied"},
			want: "symlink /home/u/proj/latest make_sym by ln"},
		{name: "cat of a credential store", grant: "full", lines: []string{"cat: /home/u/.ssh/id_ed25519: Permission denied"},
			want: "open /home/u/.ssh/id_ed25519 read_file by cat"},
		{name: "a shell reading a credential store", grant: "full", argv: []string{"sh"}, lines: []string{"sh: 1: /home/u/.ssh/config: Permission denied"},
			want: "open /home/u/.ssh/config read_file by sh"},
		{name: "chmod on a read-only mount is not Landlock's (carved: allowed)", grant: "write",
			lines: []string{"chmod: changing permissions of '/home/u/proj/.git/config': Operation not permitted"}},
		{name: "read-only file system", grant: "verify", lines: []string{"tee: /home/u/proj/out.log: Read-only file system"}, exists: []string{ws},
			want: "create /home/u/proj/out.log make_reg by tee"},
		// Go
		{name: "go build cache", grant: "verify", argv: []string{"go", "vet", "./..."},
			lines: []string{"go: creating work dir: mkdir /home/u/.cache/go-build/xy: permission denied"},
			want:  "mkdir /home/u/.cache/go-build/xy make_dir by go"},
		{name: "go.sum", grant: "verify", argv: []string{"go", "mod", "tidy"},
			lines: []string{"go: updating go.sum: open /home/u/proj/go.sum: permission denied"},
			want:  "open /home/u/proj/go.sum write_file by go"},
		{name: "go rename", grant: "verify", argv: []string{"go", "test"},
			lines: []string{"rename /home/u/proj/target/x /home/u/proj/x: permission denied"},
			want:  "rename /home/u/proj/x make_reg by go"},
		{name: "go dial tcp", grant: "inspect", argv: []string{"go", "test"},
			lines: []string{"    client_test.go:12: dial tcp 127.0.0.1:8080: connect: operation not permitted"},
			want:  "connect 127.0.0.1:8080 connect_tcp by go"},
		{name: "go dial unix", grant: "verify", argv: []string{"./app"},
			lines: []string{"dial unix /run/user/1000/bus: socket: operation not permitted"},
			want:  "connect unix:/run/user/1000/bus socket_unix by app"},
		// cargo and Rust, across lines
		{name: "stale Cargo.lock", grant: "verify", argv: []string{"cargo", "test"},
			lines: []string{
				"error: failed to write /home/u/proj/Cargo.lock",
				"",
				"Caused by:",
				"  failed to open: /home/u/proj/Cargo.lock",
				"",
				"Caused by:",
				"  Permission denied (os error 13)",
			},
			want: "open /home/u/proj/Cargo.lock write_file by cargo"},
		{name: "cargo registry", grant: "verify", argv: []string{"cargo", "build"},
			lines: []string{
				"error: failed to create directory `/home/u/.cargo/registry/index/index.crates.io-6f17d22bba15001f`",
				"",
				"Caused by:",
				"  Permission denied (os error 13)",
			},
			want: "mkdir /home/u/.cargo/registry/index/index.crates.io-6f17d22bba15001f make_dir by cargo"},
		{name: "a path, then an unrelated error much later", grant: "verify", argv: []string{"cargo", "build"},
			lines: []string{"error: failed to open: /home/u/proj/Cargo.lock", "1", "2", "3", "4", "5", "6", "7", "8", "9",
				"  Permission denied (os error 13)"}},
		{name: "rust on one line", grant: "verify", argv: []string{"./build.sh"},
			lines: []string{"thread 'main' panicked: failed to write /home/u/proj/src/gen.rs: Permission denied (os error 13)"},
			want:  "open /home/u/proj/src/gen.rs write_file by build.sh"},
		// git
		{name: "git config lock", grant: "verify", argv: []string{"git", "config", "user.name", "x"},
			lines: []string{"error: could not lock config file .git/config: Permission denied"},
			want:  "open /home/u/proj/.git/config write_file by git"},
		{name: "git global config", grant: "full", argv: []string{"git", "config", "--global", "a.b", "c"},
			lines: []string{"error: could not lock config file /home/u/.gitconfig: Permission denied"},
			want:  "open /home/u/.gitconfig write_file by git"},
		{name: "git index lock", grant: "verify", argv: []string{"git", "add", "."},
			lines: []string{"fatal: Unable to create '/home/u/proj/.git/index.lock': Permission denied"},
			want:  "create /home/u/proj/.git/index.lock make_reg by git"},
		{name: "git checkout", grant: "verify", argv: []string{"git", "checkout", "main"},
			lines: []string{"error: unable to create file src/lib.rs: Permission denied"},
			want:  "create /home/u/proj/src/lib.rs make_reg by git"},
		{name: "git objects", grant: "verify", argv: []string{"git", "commit", "-m", "x"},
			lines: []string{"error: insufficient permission for adding an object to repository database .git/objects"},
			want:  "create /home/u/proj/.git/objects/tmp_obj_XXXXXX make_reg by git"},
		{name: "git over the network with network off", grant: "inspect", argv: []string{"git", "fetch"},
			lines: []string{"fatal: unable to access 'https://github.com/x/y/': Could not resolve host: github.com"},
			want:  "connect github.com connect_tcp by git"},
		{name: "ssh", grant: "inspect", argv: []string{"git", "fetch"},
			lines: []string{"ssh: connect to host github.com port 22: Operation not permitted"},
			want:  "connect github.com:22 connect_tcp by git"},
		// npm and node, Python
		{name: "npm cache", grant: "verify", argv: []string{"npm", "ci"},
			lines: []string{"npm ERR! Error: EACCES: permission denied, mkdir '/home/u/.npm/_cacache'"},
			want:  "mkdir /home/u/.npm/_cacache make_dir by npm"},
		{name: "node open", grant: "verify", argv: []string{"node", "build.js"},
			lines: []string{"Error: EACCES: permission denied, open '/home/u/proj/dist/app.js'"}, exists: []string{ws + "/dist"},
			want: "create /home/u/proj/dist/app.js make_reg by node"},
		{name: "npm registry with network off", grant: "inspect", argv: []string{"npm", "install"},
			lines: []string{"npm error request to https://registry.npmjs.org/x failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org"},
			want:  "connect registry.npmjs.org connect_tcp by npm"},
		{name: "python", grant: "verify", argv: []string{"python3", "gen.py"},
			lines: []string{"PermissionError: [Errno 13] Permission denied: '/home/u/proj/out.txt'"}, exists: []string{ws},
			want: "create /home/u/proj/out.txt make_reg by python3"},
		{name: "python, an existing file", grant: "verify", argv: []string{"python3", "gen.py"},
			lines: []string{"PermissionError: [Errno 13] Permission denied: '/home/u/proj/README.md'"},
			want:  "open /home/u/proj/README.md write_file by python3"},
		{name: "python, read-only file system", grant: "verify", argv: []string{"python3", "-m", "pytest"},
			lines: []string{"OSError: [Errno 30] Read-only file system: '/home/u/proj/.pytest_cache'"}, exists: []string{ws},
			want: "create /home/u/proj/.pytest_cache make_reg by python3"},
		// git push under verify: wrun's refusal, or git's when it lacks the helper
		{name: "git push refused by wrun", grant: "verify", argv: []string{"git", "push"},
			lines: []string{"wrun: git push to git://127.0.0.1:9418/r.git refused (wrun-verify-refuses-push): shell=verify checks work"},
			want:  "git-push git://127.0.0.1:9418/r.git git_push by git"},
		{name: "git push refused, no helper", grant: "verify", argv: []string{"sh"},
			lines: []string{"git: 'remote-wrun-verify-refuses-push' is not a git command. See 'git --help'."},
			want:  "git-push the default remote git_push by git"},
		{name: "git push message under files=write is the child's own", grant: "write,network=on", argv: []string{"git"},
			lines: []string{"wrun: git push to origin refused (wrun-verify-refuses-push): x"}},
		{name: "git push message under inspect is the child's own", grant: "inspect", argv: []string{"git"},
			lines: []string{"wrun: git push to origin refused (wrun-verify-refuses-push): x"}},
		// false positives kept out: the policy allows these, so the error
		// is the file system's own, not the sandbox's.
		{name: "a file mode, not the sandbox", grant: "verify", argv: []string{"sh"},
			lines: []string{"sh: 1: cannot create /tmp/wrun-1/x: Permission denied"}},
		{name: "build output the grant allows", grant: "verify", argv: []string{"cargo", "build"},
			lines: []string{"error: failed to open: /home/u/proj/target/debug/.cargo-lock", "Caused by:", "  Permission denied (os error 13)"}},
		{name: "network with network on", grant: "verify", argv: []string{"git", "fetch"},
			lines: []string{"fatal: unable to access 'https://github.com/x/y/': Could not resolve host: github.com"}},
		{name: "not an error line", grant: "verify", lines: []string{"test permission_denied_is_reported ... ok", "Permission denied, please try again."}},
		// one act reported twice is one denial, counted
		{name: "repeats", grant: "verify", argv: []string{"sh"},
			lines: []string{"sh: 1: cannot create /opt/a: Permission denied", "sh: 1: cannot create /opt/a: Permission denied"},
			want:  "create /opt/a make_reg by sh"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := Facts{Argv: tc.argv}
			if tc.exists != nil {
				f.Exists = existing(tc.exists...)
			}
			a := analyzer(t, tc.grant, f)
			got := a.Infer(tc.lines)
			if r := renderDenials(got); r != tc.want {
				t.Errorf("Infer\n got %q\nwant %q", r, tc.want)
			}
			for _, d := range got {
				if d.Exact {
					t.Errorf("an inferred denial is marked exact: %+v", d)
				}
			}
			if len(got) > 0 {
				mustRequest(t, a, runEnd, got)
			}
		})
	}
}

func TestInferCounts(t *testing.T) {
	a := analyzer(t, "verify", Facts{Argv: []string{"sh"}})
	got := a.Infer([]string{"sh: 1: cannot create /opt/a: Permission denied", "sh: 1: cannot create /opt/a: Permission denied"})
	if len(got) != 1 || got[0].Count != 2 {
		t.Errorf("Infer = %+v, want one denial counted twice", got)
	}
}

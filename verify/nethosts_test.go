package verify

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// defaults are the registries' hosts when the user configured none.
var defaults = []string{"proxy.golang.org:443", "sum.golang.org:443", "registry.npmjs.org:443", "pypi.org:443",
	"files.pythonhosted.org:443", "index.crates.io:443", "static.crates.io:443", "crates.io:443"}

func TestNetHosts(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name string
		f    HostFiles
		want []string // hosts beyond defaults, in order; "-HOST" is absent
		why  map[string]string
	}{
		{name: "nothing configured", want: nil},
		{name: "remotes", f: HostFiles{GitConfig: `[core]
	bare = false
[remote "origin"]
	url = https://github.com/o/r.git
	fetch = +refs/heads/*:refs/remotes/origin/*
	pushurl = https://push.example.com:8443/o/r
[remote "up"]
	url = "git://git.example.org/r" ; comment
[remote "mirror"]
	url = git@ssh.example.com:o/r.git
[remote "local"]
	url = /srv/git/r.git
`}, want: []string{"github.com:443", "push.example.com:8443", "git.example.org:9418", "-ssh.example.com:22"},
			why: map[string]string{"github.com:443": "remote origin in .git/config", "push.example.com:8443": "remote origin's pushurl in .git/config"}},
		{name: "insteadOf from the user's config, the repository's longer one wins", f: HostFiles{
			GitConfig:     "[remote \"origin\"]\n\turl = gh:o/r\n[url \"https://mirror.example.com/\"]\n\tinsteadOf = gh:o/\n",
			UserGitConfig: []string{"[url \"https://github.com/\"]\n\tinsteadOf = gh:\n"}},
			want: []string{"mirror.example.com:443", "-github.com:443"}},
		{name: "pushInsteadOf for the push url", f: HostFiles{
			GitConfig: "[remote \"origin\"]\n\turl = https://a.example.com/r\n[url \"https://b.example.com/\"]\n\tpushInsteadOf = https://a.example.com/\n"},
			want: []string{"a.example.com:443", "-b.example.com:443"}},
		{name: "GOPROXY list, GOSUMDB with a URL, GOPRIVATE hosts", f: HostFiles{Getenv: env(
			"GOPROXY", "https://goproxy.example.com|http://fallback.example.com:3000,direct",
			"GOSUMDB", "sum.example.com+abc https://sumdb.example.com/x",
			"GOPRIVATE", "git.corp.example.com/team,*.corp.example,nodots")},
			want: []string{"goproxy.example.com:443", "fallback.example.com:3000", "sumdb.example.com:443", "git.corp.example.com:443",
				"-proxy.golang.org:443", "-sum.golang.org:443", "-corp.example:443"},
			why: map[string]string{"goproxy.example.com:443": "GOPROXY from the environment", "git.corp.example.com:443": "GOPRIVATE from the environment"}},
		{name: "GOPROXY off, GOSUMDB off, GOPRIVATE without direct", f: HostFiles{Getenv: env("GOPROXY", "off", "GOSUMDB", "off", "GOPRIVATE", "git.corp.example.com")},
			want: []string{"-proxy.golang.org:443", "-sum.golang.org:443", "-git.corp.example.com:443"}},
		{name: "go env file over go.env, environment over both", f: HostFiles{
			GoEnvFile: "GOPROXY=https://user.example.com\n", GoRootEnv: "GOPROXY=https://root.example.com\nGOSUMDB=sum.root.example.com\n"},
			want: []string{"user.example.com:443", "sum.root.example.com:443", "-root.example.com:443", "-proxy.golang.org:443", "-sum.golang.org:443"},
			why:  map[string]string{"user.example.com:443": "GOPROXY from go env (the user's go env file)", "sum.root.example.com:443": "GOSUMDB from go env (the toolchain's go.env)"}},
		{name: "npmrc registry and scopes", f: HostFiles{Npmrc: "registry=https://npm.corp.example.com/\n@acme:registry=https://acme.example.com/npm/\n//npm.corp.example.com/:_authToken=x\n"},
			want: []string{"npm.corp.example.com:443", "acme.example.com:443", "-registry.npmjs.org:443"},
			why:  map[string]string{"acme.example.com:443": "@acme registry in ~/.npmrc"}},
		{name: "pip index-url replaces PyPI, extra-index-url adds, continuation lines", f: HostFiles{PipConf: []NamedFile{
			{Path: "/etc/pip.conf", Text: "[global]\nindex-url = https://pypi.corp.example.com/simple\n"},
			{Path: "/home/u/.config/pip/pip.conf", Text: "[install]\nextra-index-url =\n    https://x.example.com/simple\n    https://y.example.com/simple\n"}}},
			want: []string{"pypi.corp.example.com:443", "x.example.com:443", "y.example.com:443", "-pypi.org:443", "-files.pythonhosted.org:443"},
			why:  map[string]string{"pypi.corp.example.com:443": "pip index-url in /etc/pip.conf"}},
		{name: "pip from the environment", f: HostFiles{Getenv: env("PIP_INDEX_URL", "http://127.0.0.1:8080/simple")},
			want: []string{"127.0.0.1:8080", "-pypi.org:443", "-files.pythonhosted.org:443"}},
		{name: "cargo registries and crates-io replaced", f: HostFiles{CargoConfig: NamedFile{Path: "/home/u/.cargo/config.toml", Text: `
[registries.corp]
index = "sparse+https://cargo.corp.example.com/index/"
[source.crates-io]
replace-with = "mirror"
[source.mirror]
registry = "sparse+http://mirror.example.com:8080/"
`}}, want: []string{"cargo.corp.example.com:443", "mirror.example.com:8080", "-crates.io:443", "-index.crates.io:443", "-static.crates.io:443"},
			why: map[string]string{"mirror.example.com:8080": "source.mirror.registry in /home/u/.cargo/config.toml"}},
		{name: "a cargo config that is not TOML adds nothing", f: HostFiles{CargoConfig: NamedFile{Text: "[registries\n"}}, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NetHosts(tc.f)
			var names []string
			whys := map[string]string{}
			for _, h := range got {
				names = append(names, h.Host.String())
				whys[h.Host.String()] = h.Why
			}
			if len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
				t.Errorf("a host twice: %v", names)
			}
			absent := map[string]bool{}
			var present []string
			for _, w := range tc.want {
				if n, ok := strings.CutPrefix(w, "-"); ok {
					absent[n] = true
				} else {
					present = append(present, w)
				}
			}
			for _, d := range defaults {
				if !absent[d] {
					present = append(present, d)
				}
			}
			for _, w := range present {
				if !slices.Contains(names, w) {
					t.Errorf("%s missing from %v", w, names)
				}
			}
			for n := range absent {
				if slices.Contains(names, n) {
					t.Errorf("%s present: %v", n, names)
				}
			}
			if len(names) != len(present) {
				t.Errorf("got %v, want exactly %v", names, present)
			}
			for h, w := range tc.why {
				if !strings.Contains(whys[h], w) {
					t.Errorf("why %s = %q, want it to say %q", h, whys[h], w)
				}
			}
		})
	}
}

// TestReadHostFilesNotTheWorkspace: the workspace's own .npmrc and
// .cargo/config.toml name no host; the repository's .git/config and the
// user's ~/.npmrc do.
func TestReadHostFilesNotTheWorkspace(t *testing.T) {
	ws, home := t.TempDir(), t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"refs", "objects"} {
		if err := os.MkdirAll(filepath.Join(ws, ".git", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ws, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(filepath.Join(ws, ".git", "config"), "[remote \"origin\"]\n\turl = https://repo.example.com/r\n")
	write(filepath.Join(ws, ".npmrc"), "registry=https://evil-npm.example.com/\n")
	write(filepath.Join(ws, ".cargo", "config.toml"), "[source.x]\nregistry = \"https://evil-cargo.example.com\"\n")
	write(filepath.Join(ws, ".gitmodules"), "[submodule \"s\"]\n\turl = https://evil-sub.example.com/s\n")
	write(filepath.Join(home, ".npmrc"), "registry=https://npm.example.com/\n")
	in := Input{Workdir: ws, Home: home, Getenv: func(k string) string {
		if k == "CARGO_HOME" {
			return filepath.Join(home, "nocargo")
		}
		return ""
	}}
	var names []string
	for _, h := range NetHosts(ReadHostFiles(in)) {
		names = append(names, h.Host.Name)
	}
	for _, w := range []string{"repo.example.com", "npm.example.com", "crates.io"} {
		if !slices.Contains(names, w) {
			t.Errorf("%s missing: %v", w, names)
		}
	}
	for _, n := range names {
		if strings.HasPrefix(n, "evil") {
			t.Errorf("a workspace file named %s: %v", n, names)
		}
	}
}

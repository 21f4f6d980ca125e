package policy

import (
	"slices"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/envlist"
	"github.com/wrun-dev/wrun/verify"
)

func mustGrant(t *testing.T, spec string) grant.Grant {
	t.Helper()
	g, err := grant.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestEnvDrop(t *testing.T) {
	inspect := mustGrant(t, "inspect")
	desktop := mustGrant(t, "inspect,desktop=on")
	netOn := mustGrant(t, "verify")
	tests := []struct {
		name, value string
		g           grant.Grant
		keep        []string
		want        string // "" passes
	}{
		// The families.
		{name: "PATH", value: "/usr/bin", g: inspect},
		{name: "HOME", value: "/home/u", g: inspect},
		{name: "LANG", value: "C.UTF-8", g: inspect},
		{name: "LC_ALL", value: "C", g: inspect},
		{name: "TZ", value: "UTC", g: inspect},
		{name: "TERM", value: "xterm", g: inspect},
		{name: "NO_COLOR", value: "1", g: inspect},
		{name: "GOFLAGS", value: "-mod=mod", g: inspect},
		{name: "GOPROXY", value: "https://proxy.golang.org,direct", g: inspect},
		{name: "CGO_ENABLED", value: "0", g: inspect},
		{name: "CARGO_HOME", value: "/home/u/.cargo", g: inspect},
		{name: "RUSTUP_TOOLCHAIN", value: "stable", g: inspect},
		{name: "CARGO_TERM_COLOR", value: "always", g: inspect},
		{name: "npm_config_cache", value: "/home/u/.npm", g: inspect},
		{name: "NODE_OPTIONS", value: "--max-old-space-size=4096", g: inspect},
		{name: "GIT_AUTHOR_NAME", value: "A U Thor", g: inspect},
		{name: "GIT_CONFIG_NOSYSTEM", value: "1", g: inspect},
		{name: "CI", value: "true", g: inspect},
		{name: "GITHUB_SHA", value: "abc", g: inspect},
		{name: "CI_COMMIT_SHA", value: "abc", g: inspect},
		{name: "WRUN_SIMULATE", value: "no-user-notif", g: inspect},
		{name: verify.EnvGitQuarantine, value: "/r/.git/wrun-quarantine/x", g: inspect},
		{name: "SSL_CERT_FILE", value: "/etc/ssl/certs/ca.pem", g: inspect},

		// Credentials the old name patterns missed: not on the list.
		{name: "PGPASSWORD", value: "pw", g: inspect, want: whyNotListed},
		{name: "DATABASE_URL", value: "postgres://u:p@h/db", g: inspect, want: whyNotListed},
		{name: "MYSQL_PWD", value: "pw", g: inspect, want: whyNotListed},
		{name: "CI_JOB_TOKEN", value: "t", g: inspect, want: whyNotListed},
		{name: "CI_REPOSITORY_URL", value: "https://gitlab-ci-token:t@gitlab.com/x.git", g: inspect, want: whyNotListed},
		{name: "ACTIONS_RUNTIME_TOKEN", value: "t", g: inspect, want: whyNotListed},
		{name: "ACTIONS_ID_TOKEN_REQUEST_TOKEN", value: "t", g: inspect, want: whyNotListed},
		{name: "ACTIONS_ID_TOKEN_REQUEST_URL", value: "https://x", g: inspect, want: whyNotListed},
		{name: "GITHUB_TOKEN", value: "t", g: inspect, want: whyNotListed},
		{name: "GITHUB_ENV", value: "/runner/env", g: inspect, want: whyNotListed},
		{name: "BUILDKITE_AGENT_ACCESS_TOKEN", value: "t", g: inspect, want: whyNotListed},
		{name: "GIT_CONFIG_COUNT", value: "1", g: inspect, want: whyNotListed},
		{name: "GIT_CONFIG_KEY_0", value: "http.extraHeader", g: inspect, want: whyNotListed},
		{name: "GIT_CONFIG_VALUE_0", value: "Authorization: Bearer t", g: inspect, want: whyNotListed},
		{name: "GIT_CONFIG_PARAMETERS", value: "'http.extraheader'='x'", g: inspect, want: whyNotListed},
		{name: "GIT_ASKPASS", value: "/usr/lib/code/askpass.sh", g: inspect, want: whyNotListed},
		{name: "GIT_SSH_COMMAND", value: "ssh -i key", g: inspect, want: whyNotListed},
		{name: "GOAUTH", value: "git", g: inspect, want: whyNotListed},
		{name: "npm_config__auth", value: "dTpw", g: inspect, want: whyNotListed},
		{name: "NPM_TOKEN", value: "t", g: inspect, want: whyNotListed},
		{name: "CARGO_REGISTRY_TOKEN", value: "t", g: inspect, want: whyNotListed},
		{name: "SSH_AUTH_SOCK", value: "/tmp/agent", g: inspect, want: whyNotListed},
		{name: "GPG_PASSPHRASE", value: "p", g: inspect, want: whyNotListed},
		{name: "MY_SERVICE_CREDENTIAL_X", value: "x", g: inspect, want: whyNotListed},
		{name: "LC_SECRET", value: "x", g: inspect, want: whyNotListed},
		{name: "PWD", value: "/w", g: inspect, want: whyNotListed},
		{name: "LD_PRELOAD", value: "/x.so", g: inspect, want: whyNotListed},
		{name: "path", value: "/bin", g: inspect, want: whyNotListed},

		// --keep-env passes exactly the names given.
		{name: "PGPASSWORD", value: "pw", g: inspect, keep: []string{"PGPASSWORD"}},
		{name: "MYSQL_PWD", value: "pw", g: inspect, keep: []string{"PGPASSWORD"}, want: whyNotListed},

		// wrun's own variables are never inherited, kept or not.
		{name: "WRUN_GRANT", value: "full", g: inspect, want: whyWrunOwn},
		{name: "WRUN_CEILING", value: "full", g: inspect, keep: []string{"WRUN_CEILING"}, want: whyWrunOwn},
		{name: "WRUN_SANDBOX", value: "landlock", g: inspect, want: whyWrunOwn},
		{name: "_WRUN_STAGE", value: "x", g: inspect, want: whyInternal},

		// Desktop and network families.
		{name: "DISPLAY", value: ":0", g: inspect, want: whyDesktop},
		{name: "DISPLAY", value: ":0", g: desktop},
		{name: "DBUS_SESSION_BUS_ADDRESS", value: "unix:path=/run/user/0/bus", g: desktop},
		{name: "XDG_RUNTIME_DIR", value: "/run/user/0", g: inspect, want: whyDesktop},
		{name: "TMUX", value: "/tmp/tmux-0/default,1,0", g: inspect, want: whyDesktop},
		{name: "DISPLAY", value: ":0", g: inspect, keep: []string{"DISPLAY"}},
		{name: "HTTPS_PROXY", value: "http://proxy:3128", g: inspect, want: whyNetwork},
		{name: "HTTPS_PROXY", value: "http://proxy:3128", g: netOn},
		{name: "no_proxy", value: "localhost,.internal", g: netOn},

		// A URL with a password is dropped though its name is listed.
		{name: "HTTPS_PROXY", value: "http://u:p@proxy:3128", g: netOn, want: whyURLPass},
		{name: "GOPROXY", value: "https://proxy.golang.org,https://u:tok@corp/proxy", g: inspect, want: whyURLPass},
		{name: "npm_config_registry", value: "https://u:p@registry.corp/", g: inspect, want: whyURLPass},
		{name: "GOPRIVATE", value: "git@example.com/x", g: inspect},
		{name: "HTTPS_PROXY", value: "http://u@proxy:3128", g: netOn},
		{name: "HTTPS_PROXY", value: "http://u:p@proxy:3128", g: netOn, keep: []string{"HTTPS_PROXY"}},
	}
	for _, tc := range tests {
		if got := envDrop(tc.name, tc.value, tc.g, tc.keep); got != tc.want {
			t.Errorf("envDrop(%s=%q, %s, keep %q) = %q, want %q", tc.name, tc.value, tc.g, tc.keep, got, tc.want)
		}
	}
}

func TestEnvFamiliesAreExactNames(t *testing.T) {
	seen := map[string]string{}
	for _, f := range EnvFamilies {
		if f.Why == "" || len(f.Names) == 0 {
			t.Errorf("family %q: no names or no reason", f.Name)
		}
		for _, n := range f.Names {
			if n == "" || strings.ContainsAny(n, "*?=[ ") {
				t.Errorf("family %q: %q is not an exact variable name", f.Name, n)
			}
			if prev, dup := seen[n]; dup {
				t.Errorf("%s is in families %q and %q", n, prev, f.Name)
			}
			seen[n] = f.Name
			if slices.Contains(wrunOwnEnv, n) {
				t.Errorf("family %q lists %s, which only wrun sets", f.Name, n)
			}
		}
	}
}

func TestChildEnv(t *testing.T) {
	h := Host{Workdir: "/w", TempDir: "/tmp/wrun-1", Sandbox: "landlock", Env: []string{
		"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8",
		"PGPASSWORD=pw-secret", "DATABASE_URL=postgres://u:db-secret@h/db", "CI_JOB_TOKEN=job-secret",
		"MYSQL_PWD=my-secret", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader",
		"GIT_CONFIG_VALUE_0=Authorization: header-secret", "MY_SERVICE_CREDENTIAL_X=x-secret",
		"WRUN_SANDBOX=forged", "WRUN_GRANT=full", "TMPDIR=/tmp", "DISPLAY=:0",
	}}
	extra := []verify.EnvVar{{Name: "GIT_CONFIG_COUNT", Value: "1", Why: "w"},
		{Name: "GIT_CONFIG_KEY_0", Value: "gc.auto", Why: "w"}, {Name: "GIT_CONFIG_VALUE_0", Value: "0", Why: "w"}}
	g := mustGrant(t, "verify")
	set, unset, passed, env := childEnv(g, h, Options{Ceiling: "verify"}, extra)
	for _, kv := range env {
		if strings.Contains(kv, "secret") || strings.Contains(kv, "forged") || kv == "DISPLAY=:0" || kv == "TMPDIR=/tmp" {
			t.Errorf("child gets %s", kv)
		}
	}
	for name, want := range map[string]string{"PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8",
		"WRUN_GRANT": g.String(), "WRUN_SANDBOX": "landlock", "WRUN_CEILING": "verify", "TMPDIR": "/tmp/wrun-1",
		"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "gc.auto", "GIT_CONFIG_VALUE_0": "0"} {
		if v, ok := envlist.Lookup(env, name); !ok || v != want {
			t.Errorf("child's %s = %q, %v; want %q", name, v, ok, want)
		}
	}
	var dropped []string
	for _, u := range unset {
		if u.Value != "" {
			t.Errorf("unset %s carries a value", u.Name)
		}
		dropped = append(dropped, u.Name)
	}
	// What wrun sets itself (GIT_CONFIG_*, WRUN_GRANT, TMPDIR) is not
	// "dropped", though the inherited value is replaced.
	wantDropped := []string{"CI_JOB_TOKEN", "DATABASE_URL", "DISPLAY", "MYSQL_PWD", "MY_SERVICE_CREDENTIAL_X", "PGPASSWORD"}
	if !slices.Equal(dropped, wantDropped) {
		t.Errorf("dropped %q, want %q", dropped, wantDropped)
	}
	if want := []string{"HOME", "LANG", "PATH"}; !slices.Equal(passed, want) {
		t.Errorf("passed %q, want %q", passed, want)
	}
	if len(set) == 0 {
		t.Error("wrun set nothing")
	}

	// --keep-env passes exactly the names given; the inherited git config
	// stays out, and WRUN_SANDBOX is wrun's own even when kept.
	_, _, passed, env = childEnv(g, h, Options{KeepEnv: []string{"PGPASSWORD", "WRUN_SANDBOX"}}, nil)
	if v, _ := envlist.Lookup(env, "PGPASSWORD"); v != "pw-secret" || !slices.Contains(passed, "PGPASSWORD") {
		t.Errorf("--keep-env PGPASSWORD: child gets %q", v)
	}
	if v, _ := envlist.Lookup(env, "WRUN_SANDBOX"); v != "landlock" {
		t.Errorf("--keep-env WRUN_SANDBOX: child gets %q, want wrun's own", v)
	}
	for _, kv := range env {
		if strings.Contains(kv, "secret") && kv != "PGPASSWORD=pw-secret" {
			t.Errorf("--keep-env PGPASSWORD: child also gets %s", kv)
		}
	}

	// Explaining (no temp dir, no sandbox): a forged WRUN_SANDBOX is
	// dropped, and TMPDIR is said to be replaced.
	h.TempDir, h.Sandbox = "", ""
	_, unset, _, env = childEnv(mustGrant(t, "inspect"), h, Options{}, nil)
	if _, ok := envlist.Lookup(env, "WRUN_SANDBOX"); ok {
		t.Error("an inherited WRUN_SANDBOX reaches the child")
	}
	whys := map[string]string{}
	for _, u := range unset {
		whys[u.Name] = u.Why
	}
	if whys["WRUN_SANDBOX"] != whyWrunOwn || whys["TMPDIR"] != whyTempDir || whys["DISPLAY"] != whyDesktop {
		t.Errorf("reasons %q", whys)
	}
}

package policy

import (
	"slices"
	"sort"
	"strings"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/verify"
)

// The child's environment is an allowlist: a variable of the invoking
// environment reaches the child only when its exact name is in one of the
// families below (or the user names it with --keep-env). Nothing is
// removed for looking like a secret: what is not named is not passed, so
// a credential under a name nobody thought of (PGPASSWORD, CI_JOB_TOKEN,
// DATABASE_URL, GIT_CONFIG_VALUE_0=Authorization: ...) stays outside.
//
// There are no wildcards. Families that look like one are closed sets
// written out: the locale categories (LC_*) are a fixed list in POSIX and
// glibc, and ssh's "AcceptEnv LC_*" is used to carry arbitrary variables
// under LC_ names; npm reads any npm_config_* variable, including
// npm_config__auth and npm_config_//registry/:_authToken, so only named
// non-secret settings pass; a CI system's prefix (GITHUB_, CI_, RUNNER_,
// BUILDKITE_) holds its job tokens too (ACTIONS_RUNTIME_TOKEN, CI_JOB_TOKEN,
// CI_REPOSITORY_URL with a token in it, BUILDKITE_AGENT_ACCESS_TOKEN).

// EnvFamily is one family of variables the child gets from the invoking
// environment, with the reason the whole family is safe to pass.
type EnvFamily struct {
	// Name is the family's name ("locale", "Go toolchain").
	Name string
	// Why the family is needed and why none of its names holds a secret.
	Why string
	// Names are the exact variable names.
	Names []string
	// Desktop: the family passes only with desktop=on.
	Desktop bool
	// Network: the family passes only with network=on.
	Network bool
}

// EnvFamilies is the allowlist of the child's environment. Variables wrun
// sets itself (TMPDIR, WRUN_GRANT, verify's GOCACHE and GIT_CONFIG_*) are
// not on it: they come from the policy (EnvSet), never from the invoking
// environment.
var EnvFamilies = []EnvFamily{
	{Name: "locale", Why: "language, character set and time zone of messages and dates; names of locales and zones",
		Names: []string{"LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE",
			"LC_MONETARY", "LC_MESSAGES", "LC_PAPER", "LC_NAME", "LC_ADDRESS", "LC_TELEPHONE",
			"LC_MEASUREMENT", "LC_IDENTIFICATION", "TZ", "TZDIR"}},
	{Name: "terminal", Why: "how output is drawn and paged: terminal type, colours, size, pager and editor programs",
		Names: []string{"TERM", "COLORTERM", "TERMINFO", "TERMINFO_DIRS", "NO_COLOR", "FORCE_COLOR",
			"CLICOLOR", "CLICOLOR_FORCE", "COLUMNS", "LINES", "PAGER", "LESS", "LESSCHARSET",
			"EDITOR", "VISUAL"}},
	{Name: "paths and identity", Why: "where programs, libraries and the user's files are, and who the user is: paths and names",
		Names: []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "HOSTNAME", "LD_LIBRARY_PATH",
			"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
			"XDG_CONFIG_DIRS", "XDG_DATA_DIRS", "SOURCE_DATE_EPOCH", "MAKEFLAGS", "MAKELEVEL"}},
	{Name: "TLS trust", Why: "the certificate authorities to trust (behind a TLS-inspecting proxy): paths to public certificates",
		Names: []string{"SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE",
			"NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "NIX_SSL_CERT_FILE"}},
	{Name: "proxy", Why: "how to reach the network from here (network=on only); one with a password in it is dropped",
		Network: true,
		Names: []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
			"http_proxy", "https_proxy", "all_proxy", "no_proxy"}},
	{Name: "C toolchain", Why: "compilers and flags cgo, cargo build scripts and make use: program names and flags",
		Names: []string{"CC", "CXX", "AR", "LD", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS",
			"PKG_CONFIG", "PKG_CONFIG_PATH"}},
	{Name: "Go toolchain", Why: "the go command's settings (go help environment): paths, targets, module proxy and privacy settings, flags; GOAUTH (a credential command) is not among them",
		Names: []string{"GOROOT", "GOPATH", "GOBIN", "GOCACHE", "GOMODCACHE", "GOTMPDIR", "GOENV",
			"GOFLAGS", "GOPROXY", "GONOPROXY", "GOPRIVATE", "GONOSUMDB", "GONOSUMCHECK", "GOSUMDB",
			"GOINSECURE", "GOVCS", "GOWORK", "GO111MODULE", "GOTOOLCHAIN", "GOTELEMETRY", "GOTELEMETRYDIR",
			"GOOS", "GOARCH", "GOAMD64", "GOARM", "GOARM64", "GO386", "GOMIPS", "GOMIPS64", "GOPPC64",
			"GORISCV64", "GOWASM", "GOEXPERIMENT", "GOFIPS140", "GODEBUG", "GOMAXPROCS", "GOGC",
			"GOMEMLIMIT", "GOTRACEBACK", "GOCOVERDIR", "GOCACHEPROG",
			"CGO_ENABLED", "CGO_CFLAGS", "CGO_CPPFLAGS", "CGO_CXXFLAGS", "CGO_FFLAGS", "CGO_LDFLAGS"}},
	{Name: "Rust toolchain", Why: "cargo's and rustup's settings: paths, toolchain, flags, output; no registry token (CARGO_REGISTRY_TOKEN, CARGO_REGISTRIES_*_TOKEN)",
		Names: []string{"CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "RUSTUP_AUTO_INSTALL",
			"RUSTUP_DIST_SERVER", "RUSTUP_UPDATE_ROOT", "RUSTC", "RUSTDOC", "RUSTFLAGS", "RUSTDOCFLAGS",
			"CARGO_ENCODED_RUSTFLAGS", "CARGO_ENCODED_RUSTDOCFLAGS", "CARGO_TARGET_DIR",
			"CARGO_BUILD_TARGET_DIR", "CARGO_BUILD_TARGET", "CARGO_BUILD_JOBS", "CARGO_INCREMENTAL",
			"CARGO_NET_OFFLINE", "CARGO_NET_GIT_FETCH_WITH_CLI", "CARGO_TERM_COLOR", "CARGO_TERM_VERBOSE",
			"CARGO_TERM_QUIET", "CARGO_TERM_PROGRESS_WHEN", "CARGO_TERM_PROGRESS_WIDTH",
			"RUST_BACKTRACE", "RUST_LIB_BACKTRACE", "RUST_LOG", "RUST_TEST_THREADS", "RUST_TEST_NOCAPTURE",
			"RUST_MIN_STACK"}},
	{Name: "Node toolchain", Why: "node's and npm's settings, named one by one: npm reads any npm_config_* variable, and some hold registry tokens (npm_config__auth, NPM_TOKEN)",
		Names: []string{"NODE_OPTIONS", "NODE_PATH", "NODE_ENV", "NVM_DIR", "NVM_BIN", "NVM_INC",
			"COREPACK_HOME", "PNPM_HOME", "npm_config_cache", "npm_config_prefix", "npm_config_userconfig",
			"npm_config_globalconfig", "npm_config_registry", "npm_config_loglevel", "npm_config_offline",
			"npm_config_color", "npm_config_fund", "npm_config_audit", "NPM_CONFIG_CACHE", "NPM_CONFIG_PREFIX",
			"NPM_CONFIG_USERCONFIG", "NPM_CONFIG_GLOBALCONFIG", "NPM_CONFIG_REGISTRY", "NPM_CONFIG_LOGLEVEL",
			"NPM_CONFIG_OFFLINE", "NPM_CONFIG_COLOR", "NPM_CONFIG_FUND", "NPM_CONFIG_AUDIT"}},
	{Name: "Python", Why: "the interpreter's settings, the active virtual environment and pytest's extra options: paths and switches",
		Names: []string{"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE",
			"PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONHASHSEED", "PYTHONWARNINGS", "PYTEST_ADDOPTS"}},
	{Name: "git", Why: "identity, repository location, config files and switches; not GIT_CONFIG_COUNT/KEY_n/VALUE_n or GIT_CONFIG_PARAMETERS (config that can carry credentials, such as http.extraHeader; wrun sets its own), nor GIT_ASKPASS or GIT_SSH_COMMAND (programs that hand out credentials)",
		Names: []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME",
			"GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL",
			"GIT_CONFIG_SYSTEM", "GIT_TERMINAL_PROMPT", "GIT_PAGER", "GIT_EDITOR", "GIT_OPTIONAL_LOCKS",
			"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
			"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES",
			"GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR", "GIT_DEFAULT_HASH",
			"GIT_FLUSH", "GIT_TRACE", "GIT_LFS_SKIP_SMUDGE"}},
	{Name: "CI", Why: "the well-known variables saying a CI job runs and which commit, branch and workspace: names of things, never a job token (ACTIONS_RUNTIME_TOKEN, ACTIONS_ID_TOKEN_REQUEST_*, CI_JOB_TOKEN, CI_REPOSITORY_URL, GITHUB_TOKEN), nor the files that set later steps' environment (GITHUB_ENV, GITHUB_PATH)",
		Names: []string{"CI", "CONTINUOUS_INTEGRATION",
			"GITHUB_ACTIONS", "GITHUB_WORKSPACE", "GITHUB_SHA", "GITHUB_REF", "GITHUB_REF_NAME",
			"GITHUB_REF_TYPE", "GITHUB_HEAD_REF", "GITHUB_BASE_REF", "GITHUB_REPOSITORY",
			"GITHUB_REPOSITORY_OWNER", "GITHUB_RUN_ID", "GITHUB_RUN_NUMBER", "GITHUB_RUN_ATTEMPT",
			"GITHUB_JOB", "GITHUB_WORKFLOW", "GITHUB_EVENT_NAME", "GITHUB_ACTOR", "GITHUB_SERVER_URL",
			"RUNNER_OS", "RUNNER_ARCH", "RUNNER_TEMP", "RUNNER_TOOL_CACHE", "RUNNER_DEBUG",
			"GITLAB_CI", "CI_COMMIT_SHA", "CI_COMMIT_REF_NAME", "CI_COMMIT_BRANCH", "CI_COMMIT_TAG",
			"CI_DEFAULT_BRANCH", "CI_PROJECT_DIR", "CI_PROJECT_PATH", "CI_PIPELINE_ID", "CI_JOB_ID",
			"CI_JOB_NAME",
			"BUILDKITE", "BUILDKITE_COMMIT", "BUILDKITE_BRANCH", "BUILDKITE_BUILD_NUMBER",
			"BUILDKITE_BUILD_ID", "BUILDKITE_JOB_ID", "BUILDKITE_PIPELINE_SLUG", "BUILDKITE_BUILD_CHECKOUT_PATH",
			"CIRCLECI", "CIRCLE_SHA1", "CIRCLE_BRANCH", "CIRCLE_BUILD_NUM", "CIRCLE_JOB", "CIRCLE_WORKING_DIRECTORY",
			"TRAVIS", "TRAVIS_COMMIT", "TRAVIS_BRANCH", "TRAVIS_BUILD_DIR",
			"TF_BUILD", "BUILD_SOURCEVERSION", "BUILD_SOURCEBRANCH"}},
	{Name: "wrun", Why: "wrun's own switches and its git shim's settings, for a nested wrun and for git inside the sandbox: paths and switches (WRUN_GRANT, WRUN_CEILING and WRUN_SANDBOX are never inherited: wrun sets them)",
		Names: []string{"WRUN_SIMULATE", "WRUN_LANDLOCK_ABI", verify.EnvGitReal, verify.EnvGitCommonDir,
			verify.EnvGitQuarantine}},
	{Name: "desktop", Desktop: true, Why: "the display, session bus, sound server and terminal multiplexer (desktop=on only): they reach the user's session",
		Names: []string{"DISPLAY", "WAYLAND_DISPLAY", "WAYLAND_SOCKET", "XAUTHORITY",
			"DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "XDG_SESSION_TYPE", "XDG_CURRENT_DESKTOP",
			"SESSION_MANAGER", "AT_SPI_BUS_ADDRESS", "PULSE_SERVER",
			"TMUX", "TMUX_PANE", "STY", "KITTY_LISTEN_ON", "KITTY_WINDOW_ID",
			"WEZTERM_UNIX_SOCKET", "ZELLIJ", "ZELLIJ_SESSION_NAME", "VSCODE_IPC_HOOK_CLI"}},
}

// wrunOwnEnv are the variables only wrun sets: one inherited from the
// invoking environment is never passed (not even with --keep-env), so the
// parent cannot make the child believe it runs under another grant,
// ceiling or sandbox.
var wrunOwnEnv = []string{"WRUN_GRANT", "WRUN_CEILING", "WRUN_SANDBOX"}

// EnvSession names the session a harness runs wrun in: the one place the
// session id is defined. A harness that wants approvals of scope
// "session" remembered sets it, in wrun's environment, to an id of its
// own choosing (16 to 128 letters, digits, '.', '_', '-'; unguessable,
// new for each session); runs with the same id are one session. wrun
// never passes it to the command (not even with --keep-env), and keeps
// what a session approved where no sandbox reaches (wrun's state
// directory), so the command can neither see the id nor present one.
const EnvSession = "WRUN_SESSION"

// Why an invoking variable is not passed.
const (
	whyNotListed = "not on the allowlist (--keep-env NAME passes it)"
	whyWrunOwn   = "set by wrun only; an inherited value is never passed"
	whySession   = "the harness's session id: never passed, so the command can neither see nor present it"
	whyInternal  = "wrun's internal variable"
	whyDesktop   = "reaches the desktop session or terminal multiplexer (desktop=off)"
	whyNetwork   = "proxy settings: the grant's network is not on"
	whyURLPass   = "holds a URL with a password (scheme://user:password@); --keep-env NAME passes it"
	whyTempDir   = "replaced by the run's private temp dir"
)

// tempDirEnv name the private temp dir wrun makes for each run.
var tempDirEnv = []string{"TMPDIR", "TMP", "TEMP"}

// envFamily returns the family of the allowlist that names name, or nil.
func envFamily(name string) *EnvFamily {
	for i := range EnvFamilies {
		if slices.Contains(EnvFamilies[i].Names, name) {
			return &EnvFamilies[i]
		}
	}
	return nil
}

// envDrop decides whether the invoking environment's variable name=value
// reaches the child under grant g, with the names the user kept: "" when
// it does, else why not.
func envDrop(name, value string, g grant.Grant, keep []string) string {
	switch {
	case slices.Contains(wrunOwnEnv, name):
		return whyWrunOwn
	case name == EnvSession:
		return whySession
	case strings.HasPrefix(name, "_WRUN_"):
		return whyInternal
	case slices.Contains(keep, name):
		return ""
	}
	f := envFamily(name)
	switch {
	case f == nil:
		return whyNotListed
	case f.Desktop && g.Desktop != grant.DesktopOn:
		return whyDesktop
	case f.Network && g.Network != grant.NetworkOn:
		return whyNetwork
	case urlWithPassword(value):
		return whyURLPass
	}
	return ""
}

// urlWithPassword reports whether v holds a URL whose user information has
// a password (scheme://user:password@host), as a proxy or module proxy
// setting may. A name on the allowlist says what the variable is for, not
// what a user put in it.
func urlWithPassword(v string) bool {
	for {
		i := strings.Index(v, "://")
		if i < 0 {
			return false
		}
		v = v[i+3:]
		authority := v
		if j := strings.IndexAny(authority, "/?#, \t"); j >= 0 {
			authority = authority[:j]
		}
		if at := strings.LastIndexByte(authority, '@'); at >= 0 && strings.Contains(authority[:at], ":") {
			return true
		}
	}
}

// childEnv computes the child's environment: the invoking environment's
// variables on the allowlist (EnvFamilies) and those the user kept, plus
// wrun's own variables and the verify scope's changes. unset lists every
// invoking variable that does not reach the child, by name, with why.
func childEnv(g grant.Grant, h Host, o Options, extra []verify.EnvVar) (set, unset []EnvVar, passed, env []string) {
	vals := map[string]string{}
	var order []string
	for _, kv := range h.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if _, dup := vals[k]; !dup {
			order = append(order, k)
		}
		vals[k] = v
	}
	removed := map[string]bool{}
	for _, k := range order {
		why := envDrop(k, vals[k], g, o.KeepEnv)
		if h.TempDir == "" && slices.Contains(tempDirEnv, k) {
			why = whyTempDir
		}
		if why != "" {
			unset = append(unset, EnvVar{Name: k, Why: why})
			removed[k] = true
		} else {
			passed = append(passed, k)
		}
	}
	setVar := func(name, value, why string) {
		if _, had := vals[name]; !had {
			order = append(order, name)
		}
		delete(removed, name)
		vals[name] = value
		set = append(set, EnvVar{Name: name, Value: value, Why: why})
	}
	setVar("WRUN_GRANT", g.String(), "the effective grant, for nested wrun and for the child to read")
	if o.Ceiling != "" {
		setVar("WRUN_CEILING", o.Ceiling, "the ceiling no nested wrun or approval may exceed")
	}
	if h.Sandbox != "" {
		setVar("WRUN_SANDBOX", h.Sandbox, "the enforcement in use")
	}
	if g.Files != grant.FilesWrite {
		setVar("GIT_OPTIONAL_LOCKS", "0", "the workspace is read-only: git status must not try to take the index lock to refresh it")
	}
	if h.TempDir != "" {
		for _, n := range tempDirEnv {
			setVar(n, h.TempDir, "the private temp dir")
		}
	}
	for _, e := range extra {
		setVar(e.Name, e.Value, e.Why)
	}
	// A variable wrun sets is not "dropped", though its inherited value is
	// replaced.
	unset = slices.DeleteFunc(unset, func(e EnvVar) bool { return !removed[e.Name] })
	for _, k := range order {
		if !removed[k] {
			env = append(env, k+"="+vals[k])
		}
	}
	sort.Slice(unset, func(i, j int) bool { return unset[i].Name < unset[j].Name })
	sort.Strings(passed)
	return set, unset, passed, env
}

package verify

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/wrun-dev/wrun/grant"
)

// NetHost is a host network=hosts reaches without an --allow-host entry:
// one the repository's remotes or the user's registries name, with where
// each came from ("remote origin in .git/config; GOPROXY from go's
// default").
type NetHost struct {
	Host grant.Host `json:"host"`
	Why  string     `json:"why"`
}

// HostFiles is what NetHosts derives the hosts from, read already
// (ReadHostFiles): only sources the user controls. The repository's
// config is protected under every grant; the rest lies in the user's home
// or the system's directories, or is the invoking environment. A
// workspace's own .npmrc, .cargo/config.toml or .gitmodules is never among
// them: a host such a file names is refused by the proxy, whose denial
// offers --allow-host.
type HostFiles struct {
	// GitConfig is the repository's own config file ("" outside a
	// repository, or one whose git dir does not answer its .git file).
	GitConfig string
	// UserGitConfig are the user's global git config files (their
	// url.BASE.insteadOf rewrites apply to the remotes).
	UserGitConfig []string
	// Getenv is the invoking environment (nil: nothing set).
	Getenv func(string) string
	// GoEnvFile is the user's go env file (GOENV, else
	// $XDG_CONFIG_HOME/go/env), GoRootEnv the toolchain's go.env.
	GoEnvFile, GoRootEnv string
	// Npmrc is the user's ~/.npmrc (or NPM_CONFIG_USERCONFIG).
	Npmrc string
	// PipConf are pip's global and user config files, in the order pip
	// reads them (later ones win).
	PipConf []NamedFile
	// CargoConfig is $CARGO_HOME/config.toml (or config).
	CargoConfig NamedFile
}

// NamedFile is a file's path and content.
type NamedFile struct {
	Path, Text string
}

// NetHosts derives the hosts verify's network=hosts reaches by default:
// the hosts of the repository's remotes (url and pushurl, after the
// insteadOf rewrites of the repository's and the user's git config), and
// the registries of the user's go, npm, pip and cargo configuration (or
// each tool's defaults). Each host appears once, with every reason for
// it. ssh and local remotes name no host here (ssh does not go through
// wrun's proxy).
func NetHosts(f HostFiles) []NetHost {
	var out []NetHost
	add := func(h grant.Host, why string) {
		for i := range out {
			if out[i].Host == h {
				if !strings.Contains(out[i].Why, why) {
					out[i].Why += "; " + why
				}
				return
			}
		}
		out = append(out, NetHost{Host: h, Why: why})
	}
	addURL := func(raw, why string) {
		if h, ok := urlHost(raw); ok {
			add(h, why)
		}
	}
	getenv := f.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	// git: the repository's remotes.
	repo := parseGitConfig(f.GitConfig)
	var rewrites []gitConfigEntry
	for _, c := range f.UserGitConfig {
		rewrites = append(rewrites, parseGitConfig(c)...)
	}
	rewrites = append(rewrites, repo...)
	for _, e := range repo {
		if e.section != "remote" || e.sub == "" || (e.key != "url" && e.key != "pushurl") {
			continue
		}
		u := insteadOf(rewrites, e.value, e.key == "pushurl")
		why := "remote " + e.sub + " in .git/config"
		if e.key == "pushurl" {
			why = "remote " + e.sub + "'s pushurl in .git/config"
		}
		addURL(u, why)
	}
	// go: GOPROXY, GOSUMDB, and for "direct" the hosts GONOPROXY names.
	goenv := goEnv(getenv, f.GoEnvFile, f.GoRootEnv)
	gp := goenv("GOPROXY", "https://proxy.golang.org,direct")
	for _, e := range strings.FieldsFunc(gp.value, func(r rune) bool { return r == ',' || r == '|' }) {
		if e = strings.TrimSpace(e); e != "direct" && e != "off" {
			addURL(e, "GOPROXY from "+gp.from)
		}
	}
	if sdb := goenv("GOSUMDB", "sum.golang.org"); sdb.value != "off" && sdb.value != "" {
		fields := strings.Fields(sdb.value)
		if len(fields) > 1 {
			addURL(fields[1], "GOSUMDB from "+sdb.from)
		} else if h, err := grant.ParseHost(strings.SplitN(fields[0], "+", 2)[0] + ":443"); err == nil {
			add(h, "GOSUMDB from "+sdb.from)
		}
	}
	if strings.Contains(","+strings.ReplaceAll(gp.value, "|", ",")+",", ",direct,") || gp.value == "" {
		name, np := "GONOPROXY", goenv("GONOPROXY", "")
		if np.value == "" {
			name, np = "GOPRIVATE", goenv("GOPRIVATE", "")
		}
		for _, pat := range strings.Split(np.value, ",") {
			first, _, _ := strings.Cut(strings.TrimSpace(pat), "/")
			if first == "" || strings.ContainsAny(first, "*?[\\") || !strings.Contains(first, ".") {
				continue // a pattern, not a host
			}
			if h, err := grant.ParseHost(first + ":443"); err == nil {
				add(h, "module host "+first+", fetched direct: "+name+" from "+np.from)
			}
		}
	}
	// npm: the user's registries, or npm's default.
	npm := iniValues(f.Npmrc, "")
	reg := getenv("npm_config_registry")
	if reg == "" {
		reg = getenv("NPM_CONFIG_REGISTRY")
	}
	if reg != "" {
		addURL(reg, "npm registry from the environment")
	} else if r := npm["registry"]; len(r) > 0 {
		addURL(r[len(r)-1], "registry in ~/.npmrc")
	} else {
		add(grant.Host{Name: "registry.npmjs.org", Port: 443}, "npm's default registry")
	}
	for _, k := range sortedKeys(npm) {
		if strings.HasPrefix(k, "@") && strings.HasSuffix(k, ":registry") {
			addURL(npm[k][len(npm[k])-1], strings.TrimSuffix(k, ":registry")+" registry in ~/.npmrc")
		}
	}
	// pip: index-url and extra-index-url, or PyPI.
	index, indexFrom := "", ""
	var extra []NamedFile
	for _, c := range f.PipConf {
		for _, sec := range []string{"global", "install", "download"} {
			vals := iniValues(c.Text, sec)
			if v := vals["index-url"]; len(v) > 0 {
				index, indexFrom = v[len(v)-1], c.Path
			}
			for _, v := range vals["extra-index-url"] {
				for _, u := range strings.Fields(v) {
					extra = append(extra, NamedFile{Path: c.Path, Text: u})
				}
			}
		}
	}
	if v := getenv("PIP_INDEX_URL"); v != "" {
		index, indexFrom = v, "the environment (PIP_INDEX_URL)"
	}
	for _, u := range strings.Fields(getenv("PIP_EXTRA_INDEX_URL")) {
		extra = append(extra, NamedFile{Path: "the environment (PIP_EXTRA_INDEX_URL)", Text: u})
	}
	if index != "" {
		addURL(index, "pip index-url in "+indexFrom)
	} else {
		add(grant.Host{Name: "pypi.org", Port: 443}, "pip's default index")
		add(grant.Host{Name: "files.pythonhosted.org", Port: 443}, "pip's default index's download host")
	}
	for _, e := range extra {
		addURL(e.Text, "pip extra-index-url in "+e.Path)
	}
	// cargo: crates.io unless replaced, and the user's registries.
	regs, replaced := cargoRegistries(f.CargoConfig.Text)
	if !replaced {
		for _, n := range []string{"index.crates.io", "static.crates.io", "crates.io"} {
			add(grant.Host{Name: n, Port: 443}, "crates.io, cargo's default registry")
		}
	}
	for _, r := range regs {
		addURL(r[1], r[0]+" in "+f.CargoConfig.Path)
	}
	return out
}

// urlHost is the host and port a fetch URL reaches: http, https (and
// cargo's sparse+ and registry+ forms, git+https), git:// (9418). ssh,
// file and local paths reach none through the proxy.
func urlHost(raw string) (grant.Host, bool) {
	raw = strings.TrimSpace(raw)
	for _, p := range []string{"sparse+", "registry+", "git+"} {
		raw = strings.TrimPrefix(raw, p)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return grant.Host{}, false
	}
	port := map[string]int{"http": 80, "https": 443, "git": 9418}[strings.ToLower(u.Scheme)]
	if port == 0 {
		return grant.Host{}, false
	}
	if ps := u.Port(); ps != "" {
		n, err := strconv.Atoi(ps)
		if err != nil {
			return grant.Host{}, false
		}
		port = n
	}
	hostPort := u.Hostname()
	if strings.Contains(hostPort, ":") {
		hostPort = "[" + hostPort + "]"
	}
	h, err := grant.ParseHost(hostPort + ":" + strconv.Itoa(port))
	return h, err == nil
}

// gitConfigEntry is one key of a git config file.
type gitConfigEntry struct {
	section, sub, key, value string
}

// parseGitConfig reads the entries of a git config file: sections with
// and without a quoted subsection ([remote "origin"], [core]), keys
// lower-cased, values unquoted, comments dropped. Its limits: no
// [include] or [includeIf], no line continuations, escapes in values
// other than \" and \\ kept as written.
func parseGitConfig(text string) []gitConfigEntry {
	var out []gitConfigEntry
	var section, sub string
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.LastIndexByte(line, ']')
			if end < 0 {
				continue
			}
			hdr := strings.TrimSpace(line[1:end])
			line = strings.TrimSpace(line[end+1:])
			if name, q, ok := strings.Cut(hdr, " "); ok {
				section, sub = strings.ToLower(name), strings.Trim(strings.TrimSpace(q), `"`)
				sub = strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(sub)
			} else if name, q, ok := strings.Cut(hdr, "."); ok {
				section, sub = strings.ToLower(name), strings.ToLower(q)
			} else {
				section, sub = strings.ToLower(hdr), ""
			}
			if line == "" {
				continue
			}
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if !strings.HasPrefix(v, `"`) {
			if i := strings.IndexAny(v, "#;"); i >= 0 {
				v = strings.TrimSpace(v[:i])
			}
		} else if i := strings.LastIndexByte(v, '"'); i > 0 {
			v = v[1:i]
		}
		v = strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(v)
		out = append(out, gitConfigEntry{section: section, sub: sub, key: strings.ToLower(strings.TrimSpace(k)), value: v})
	}
	return out
}

// insteadOf rewrites u as git does: the longest url.BASE.insteadOf (for
// a push URL, pushInsteadOf first) that prefixes it.
func insteadOf(cfg []gitConfigEntry, u string, push bool) string {
	best := func(key string) (string, bool) {
		base, n := "", -1
		for _, e := range cfg {
			if e.section == "url" && e.key == key && strings.HasPrefix(u, e.value) && len(e.value) > n {
				base, n = e.sub, len(e.value)
			}
		}
		return base + u[max(n, 0):], n >= 0
	}
	if push {
		if r, ok := best("pushinsteadof"); ok {
			return r
		}
	}
	r, _ := best("insteadof")
	return r
}

// goValue is one go env value and where it came from.
type goValue struct{ value, from string }

// goEnv looks go's variables up as the go command does: the environment,
// then the user's go env file, then the toolchain's go.env, then def.
func goEnv(getenv func(string) string, file, root string) func(name, def string) goValue {
	user, tool := iniValues(file, ""), iniValues(root, "")
	return func(name, def string) goValue {
		if v := getenv(name); v != "" {
			return goValue{v, "the environment"}
		}
		if v := user[strings.ToLower(name)]; len(v) > 0 {
			return goValue{v[len(v)-1], "go env (the user's go env file)"}
		}
		if v := tool[strings.ToLower(name)]; len(v) > 0 {
			return goValue{v[len(v)-1], "go env (the toolchain's go.env)"}
		}
		return goValue{def, "go's default"}
	}
}

// iniValues reads key=value lines (npmrc, go env, pip.conf) of section
// ("" for the lines before any section, or a file without sections), keys
// lower-cased, every value of a repeated key in order. An indented line
// continues the previous value (pip's multi-line extra-index-url). Its
// limits: no ${VAR} expansion, no quoting beyond surrounding quotes.
func iniValues(text, section string) map[string][]string {
	out := map[string][]string{}
	cur, last := "", ""
	for line := range strings.Lines(text) {
		raw := strings.TrimRight(line, "\r\n")
		line = strings.TrimSpace(raw)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' && strings.HasSuffix(line, "]") {
			cur, last = strings.ToLower(strings.TrimSpace(line[1:len(line)-1])), ""
			continue
		}
		if cur != section {
			continue
		}
		if (raw[0] == ' ' || raw[0] == '\t') && last != "" {
			vs := out[last]
			vs[len(vs)-1] += " " + line
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		out[k] = append(out[k], strings.Trim(strings.TrimSpace(v), `"'`))
		last = k
	}
	return out
}

func sortedKeys(m map[string][]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// cargoRegistries reads cargo's config: each [registries.NAME] index and
// [source.NAME] registry (as [name, URL], sorted by name), and whether
// crates-io is replaced by another source (source.crates-io.replace-with).
func cargoRegistries(text string) ([][2]string, bool) {
	var c struct {
		Registries map[string]struct {
			Index string `toml:"index"`
		} `toml:"registries"`
		Registry struct {
			Index string `toml:"index"`
		} `toml:"registry"`
		Source map[string]struct {
			Registry    string `toml:"registry"`
			ReplaceWith string `toml:"replace-with"`
		} `toml:"source"`
	}
	if _, err := toml.Decode(text, &c); err != nil {
		return nil, false
	}
	var out [][2]string
	for n, r := range c.Registries {
		if r.Index != "" {
			out = append(out, [2]string{"registries." + n + ".index", r.Index})
		}
	}
	if c.Registry.Index != "" {
		out = append(out, [2]string{"registry.index", c.Registry.Index})
	}
	for n, s := range c.Source {
		if s.Registry != "" {
			out = append(out, [2]string{"source." + n + ".registry", s.Registry})
		}
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return out, c.Source["crates-io"].ReplaceWith != ""
}

// ReadHostFiles reads what NetHosts derives the hosts from, for the
// workspace in.Workdir and the user in.Home with the invoking environment
// in.Getenv. Missing files are empty. The repository's config is read
// only when its git dir answers the workspace's .git (Repo.check) and,
// for a .git file, lies outside the workspace (a .git file and a git dir
// inside it are the workspace's content).
func ReadHostFiles(in Input) HostFiles {
	in = in.withGetenv()
	read := func(p string) string {
		if p == "" {
			return ""
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) > 1<<20 {
			return ""
		}
		return string(b)
	}
	home := in.Home
	inHome := func(parts ...string) string {
		if home == "" {
			return ""
		}
		return filepath.Join(append([]string{home}, parts...)...)
	}
	f := HostFiles{Getenv: in.Getenv}
	if repo, err := FindRepo(in.Workdir); err == nil && repo != nil && repo.check() == nil &&
		(!repo.DotGitIsFile || !within(repo.CommonDir, in.Workdir)) {
		f.GitConfig = read(filepath.Join(repo.CommonDir, "config"))
	}
	xdg := in.Getenv("XDG_CONFIG_HOME")
	if xdg == "" {
		xdg = inHome(".config")
	}
	if g := in.Getenv("GIT_CONFIG_GLOBAL"); g != "" {
		f.UserGitConfig = []string{read(g)}
	} else {
		f.UserGitConfig = []string{read(inHome(".gitconfig")), read(filepath.Join(xdg, "git", "config"))}
	}
	switch g := in.Getenv("GOENV"); {
	case g == "off":
	case g != "":
		f.GoEnvFile = read(g)
	case xdg != "":
		f.GoEnvFile = read(filepath.Join(xdg, "go", "env"))
	}
	root := in.Getenv("GOROOT")
	if root == "" {
		if p := lookPathIn("go", in.Getenv("PATH")); p != "" {
			// A go the workspace holds (a PATH entry inside it) is its
			// content, not the user's toolchain.
			if r, err := filepath.EvalSymlinks(p); err == nil && !within(r, in.Workdir) {
				root = filepath.Dir(filepath.Dir(r))
			}
		}
	}
	if root != "" {
		f.GoRootEnv = read(filepath.Join(root, "go.env"))
	}
	if p := in.Getenv("NPM_CONFIG_USERCONFIG"); p != "" {
		f.Npmrc = read(p)
	} else {
		f.Npmrc = read(inHome(".npmrc"))
	}
	for _, p := range []string{"/etc/xdg/pip/pip.conf", "/etc/pip.conf", inHome(".pip", "pip.conf"), filepath.Join(xdg, "pip", "pip.conf")} {
		if t := read(p); t != "" {
			f.PipConf = append(f.PipConf, NamedFile{Path: p, Text: t})
		}
	}
	if p := in.Getenv("PIP_CONFIG_FILE"); p != "" && p != os.DevNull {
		f.PipConf = append(f.PipConf, NamedFile{Path: p, Text: read(p)})
	}
	cargoHome := in.Getenv("CARGO_HOME")
	if cargoHome == "" {
		cargoHome = inHome(".cargo")
	}
	if cargoHome != "" {
		for _, n := range []string{"config.toml", "config"} {
			p := filepath.Join(cargoHome, n)
			if t := read(p); t != "" {
				f.CargoConfig = NamedFile{Path: p, Text: t}
				break
			}
		}
	}
	return f
}

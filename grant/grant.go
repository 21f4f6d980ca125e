package grant

import (
	"fmt"
	"slices"
	"strings"

	"github.com/wrun-dev/wrun/tools"
)

// Files is what the workspace roots are to the child.
type Files int

// The values of Files, from narrowest to widest.
const (
	FilesNone  Files = iota // the workspace is not readable
	FilesRead               // the workspace is readable, not writable
	FilesWrite              // the workspace is writable (protected paths excepted)
)

// Shell is which processes may run and where, outside the workspace, they
// may write.
type Shell int

// The values of Shell, from narrowest to widest.
const (
	ShellNone    Shell = iota // no process may be launched
	ShellInspect              // writes only /dev/null and a private temp dir
	ShellVerify               // bounded writes for build, test and git plumbing
	ShellFull                 // writes where files allows, plus the user's tool caches
)

// Network is what of the network the child may reach. Its values are
// ordered, each reaching everything the narrower ones do: intersection,
// ceilings and nesting take the narrower of two.
type Network int

// The values of Network, from narrowest to widest.
const (
	// NetworkOff: no TCP, no socket family but AF_UNIX.
	NetworkOff Network = iota
	// NetworkLoopback: IP sockets on loopback addresses only: the command
	// binds only to loopback addresses, and connects and sends only to
	// sockets its own sandbox bound in this run, or to a host's loopback
	// service an --allow-host names (127.0.0.1:5432).
	NetworkLoopback
	// NetworkHosts: loopback, and the hosts --allow-host names, reached
	// through wrun's own proxy (HTTP CONNECT and plain HTTP), which
	// decides on the host name asked for.
	NetworkHosts
	// NetworkOn: TCP and other families, to any address.
	NetworkOn
)

// Desktop is whether the child may reach the user's desktop session: X11,
// Wayland, D-Bus, the display environment and terminal injection.
type Desktop int

// The values of Desktop, from narrowest to widest.
const (
	DesktopOff Desktop = iota
	DesktopOn
)

// Grant is the whole authority given to a sandboxed child. The zero value is
// the narrowest grant there is: nothing visible, nothing runs.
type Grant struct {
	Files   Files
	Shell   Shell
	Network Network
	Desktop Desktop
	// Tools is the allowlist of tool families (package tools names them),
	// in tools.Families' order. Nil means the families the other fields
	// imply (DefaultTools: what a preset carries); an empty non-nil slice
	// means no tool at all. Use ToolFamilies for the families in effect.
	Tools []string
}

var (
	filesNames   = []string{"none", "read", "write"}
	shellNames   = []string{"none", "inspect", "verify", "full"}
	networkNames = []string{"off", "loopback", "hosts", "on"}
	desktopNames = []string{"off", "on"}
)

// FieldNames returns the names of a grant's fields, in the order a grant
// is written: files, shell, network, desktop, tools.
func FieldNames() []string { return []string{"files", "shell", "network", "desktop", "tools"} }

// FieldValues returns the values a field accepts, narrowest first (nil
// for tools, whose values are tool families, and for an unknown field).
func FieldValues(field string) []string {
	switch field {
	case "files":
		return slices.Clone(filesNames)
	case "shell":
		return slices.Clone(shellNames)
	case "network":
		return slices.Clone(networkNames)
	case "desktop":
		return slices.Clone(desktopNames)
	}
	return nil
}

func (f Files) String() string   { return enumName(filesNames, int(f)) }
func (s Shell) String() string   { return enumName(shellNames, int(s)) }
func (n Network) String() string { return enumName(networkNames, int(n)) }
func (d Desktop) String() string { return enumName(desktopNames, int(d)) }

func enumName(names []string, v int) string {
	if v < 0 || v >= len(names) {
		return fmt.Sprintf("invalid(%d)", v)
	}
	return names[v]
}

// Preset is a named grant.
type Preset struct {
	Name    string
	Grant   Grant
	Summary string
}

// Presets returns the built-in presets, narrowest first. The default grant
// is the one named by DefaultPreset.
func Presets() []Preset {
	return []Preset{
		{"inspect", Grant{Files: FilesRead, Shell: ShellInspect, Network: NetworkOff, Desktop: DesktopOff},
			"read everything but the home directory (toolchains aside) and files only this user may read, write nothing but /dev/null and a private temp dir, no network"},
		// verify's network is on here; run gives a verify spec without a
		// network field network=hosts where the platform holds it.
		{"verify", Grant{Files: FilesRead, Shell: ShellVerify, Network: NetworkOn, Desktop: DesktopOff},
			"read-only workspace; bounded writes for build outputs, test temp files and git fetch plumbing; on Linux the network by host: the repository's remotes and your registries, through wrun's proxy (verify,network=on, and macOS: every host)"},
		{"write", Grant{Files: FilesWrite, Shell: ShellVerify, Network: NetworkOff, Desktop: DesktopOff},
			"writable workspace (git config and hooks excepted), verify's bounded writes elsewhere, no network"},
		{"full", Grant{Files: FilesWrite, Shell: ShellFull, Network: NetworkOn, Desktop: DesktopOff},
			"writable workspace (git config and hooks excepted), the user's tool caches writable, network on"},
	}
}

// DefaultPreset names the preset used when no grant is given.
const DefaultPreset = "inspect"

// PresetByName returns the preset with the given name.
func PresetByName(name string) (Preset, bool) {
	for _, p := range Presets() {
		if p.Name == name {
			return p, true
		}
	}
	return Preset{}, false
}

func presetNames() []string {
	var names []string
	for _, p := range Presets() {
		names = append(names, p.Name)
	}
	return names
}

// ParseError is a grant spec that could not be parsed. Its message names the
// bad part and what is accepted.
type ParseError struct {
	Spec string // the whole spec
	Part string // the offending part
	Msg  string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("bad grant %q: %s", e.Spec, e.Msg)
}

// Parse reads a grant spec: a preset name, optionally followed by field
// overrides ("verify,network=off"), or field overrides alone, which apply to
// the default preset ("files=read,shell=inspect"). A field may be given once.
func Parse(spec string) (Grant, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return Grant{}, &ParseError{Spec: spec, Msg: "empty; want a preset (" + strings.Join(presetNames(), ", ") + ") and/or fields like files=read,shell=inspect"}
	}
	parts := strings.Split(spec, ",")
	base, _ := PresetByName(DefaultPreset)
	g := base.Grant
	start := 0
	if !strings.Contains(parts[0], "=") {
		name := strings.TrimSpace(parts[0])
		p, ok := PresetByName(name)
		if !ok {
			return Grant{}, &ParseError{Spec: spec, Part: name, Msg: fmt.Sprintf("unknown preset %q; presets are %s", name, strings.Join(presetNames(), ", "))}
		}
		g = p.Grant
		start = 1
	}
	seen := map[string]bool{}
	for _, part := range parts[start:] {
		part = strings.TrimSpace(part)
		key, val, ok := strings.Cut(part, "=")
		if !ok {
			if _, isPreset := PresetByName(part); isPreset {
				return Grant{}, &ParseError{Spec: spec, Part: part, Msg: fmt.Sprintf("preset %q must come first, and only one preset may be given", part)}
			}
			return Grant{}, &ParseError{Spec: spec, Part: part, Msg: fmt.Sprintf("%q is not field=value; fields are files, shell, network, desktop, tools", part)}
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if seen[key] {
			return Grant{}, &ParseError{Spec: spec, Part: part, Msg: fmt.Sprintf("field %q given twice", key)}
		}
		seen[key] = true
		if err := setField(&g, key, val); err != nil {
			return Grant{}, &ParseError{Spec: spec, Part: part, Msg: err.Error()}
		}
	}
	if err := g.Check(); err != nil {
		return Grant{}, &ParseError{Spec: spec, Part: "tools=" + strings.Join(g.Tools, "+"), Msg: err.Error()}
	}
	if g.Tools != nil {
		g.Tools = normalTools(g, g.Tools)
	}
	return g, nil
}

func setField(g *Grant, key, val string) error {
	pick := func(names []string) (int, error) {
		if i := slices.Index(names, val); i >= 0 {
			return i, nil
		}
		return 0, fmt.Errorf("%s=%q is not accepted; %s is one of %s", key, val, key, strings.Join(names, ", "))
	}
	var err error
	var i int
	switch key {
	case "files":
		i, err = pick(filesNames)
		g.Files = Files(i)
	case "shell":
		i, err = pick(shellNames)
		g.Shell = Shell(i)
	case "network":
		i, err = pick(networkNames)
		g.Network = Network(i)
	case "desktop":
		i, err = pick(desktopNames)
		g.Desktop = Desktop(i)
	case "tools":
		g.Tools, err = parseTools(val)
	default:
		return fmt.Errorf("unknown field %q; fields are %s", key, strings.Join(FieldNames(), ", "))
	}
	return err
}

// parseTools reads "a+b+c" (or "none"). Commas separate grant fields, so tool
// families are joined with '+'.
func parseTools(val string) ([]string, error) {
	if val == "none" || val == "" {
		return []string{}, nil
	}
	var out []string
	for _, t := range strings.Split(val, "+") {
		t = strings.TrimSpace(t)
		if t == "" || strings.ContainsAny(t, " =,") {
			return nil, fmt.Errorf("tools=%q: tool families are names joined with '+', e.g. tools=read+search+shell", val)
		}
		if _, err := tools.ParseFamily(t); err != nil {
			return nil, fmt.Errorf("tools=%q: %w", val, err)
		}
		out = append(out, t)
	}
	return sortTools(out), nil
}

// sortTools sorts families in tools.Families' order without duplicates.
func sortTools(ts []string) []string {
	order := tools.FamilyNames()
	out := slices.Clone(ts)
	slices.SortFunc(out, func(a, b string) int {
		ia, ib := slices.Index(order, a), slices.Index(order, b)
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(out)
}

// DefaultTools returns the tool families a grant carries when its spec
// names none, which is what the other fields imply: read and search when
// the workspace is readable, edit when it is writable, shell when a
// process may run, spawn with shell=full, web with shell=full and
// network=on, and always control (the harness's own to-do lists, plans
// and questions, which touch nothing a grant governs). So inspect and
// verify carry read, search, shell and control; write adds edit; full
// adds web and spawn; shell=none carries no shell. No grant carries mcp or
// desktop unless its spec names them.
func DefaultTools(f Files, s Shell, n Network) []string {
	out := []string{string(tools.Control)}
	if f >= FilesRead {
		out = append(out, string(tools.Read), string(tools.Search))
	}
	if f >= FilesWrite {
		out = append(out, string(tools.Edit))
	}
	if s > ShellNone {
		out = append(out, string(tools.Shell))
	}
	if s >= ShellFull && n >= NetworkOn {
		out = append(out, string(tools.Web))
	}
	if s >= ShellFull {
		out = append(out, string(tools.Spawn))
	}
	return sortTools(out)
}

// ToolFamilies returns the tool families in effect: the tools field, or
// DefaultTools when it names none.
func (g Grant) ToolFamilies() []string {
	if g.Tools == nil {
		return DefaultTools(g.Files, g.Shell, g.Network)
	}
	return slices.Clone(g.Tools)
}

// normalTools is the tools field for families ts under g's other fields:
// nil when they are exactly the defaults, so that a grant has one form.
func normalTools(g Grant, ts []string) []string {
	ts = sortTools(ts)
	if ts == nil {
		ts = []string{}
	}
	if slices.Equal(ts, DefaultTools(g.Files, g.Shell, g.Network)) {
		return nil
	}
	return ts
}

// toolNeeds is, per family, the field a grant must give for the family to
// make sense: a harness's tool of the family would otherwise do what the
// grant's own fields say the child may not.
func toolNeeds(g Grant, family string) (ok bool, need string) {
	switch tools.Family(family) {
	case tools.Read, tools.Search:
		return g.Files >= FilesRead, "files=read or write (the workspace is not visible with files=none)"
	case tools.Edit:
		return g.Files >= FilesWrite, "files=write (the workspace is read-only otherwise)"
	case tools.Shell:
		return g.Shell > ShellNone, "a shell field other than none (shell=none: no process may run, so no shell tool either)"
	case tools.Web:
		return g.Network >= NetworkOn, "network=on (a web tool reaches any host, which network=off, loopback and hosts withhold)"
	case tools.Desktop:
		return g.Desktop >= DesktopOn, "desktop=on (desktop=off keeps the display, bus and terminal away)"
	}
	return true, ""
}

// Check reports a tools field at odds with the other fields: a family
// that is not a tool family, or one whose tools would do what the other
// fields refuse (the shell family with shell=none, edit with a read-only
// workspace, web with network=off, desktop with desktop=off, read or
// search with files=none).
func (g Grant) Check() error {
	for _, t := range g.Tools {
		if _, err := tools.ParseFamily(t); err != nil {
			return err
		}
		if ok, need := toolNeeds(g, t); !ok {
			return fmt.Errorf("the %s tool family needs %s; drop %s from tools= or widen the field", t, need, t)
		}
	}
	return nil
}

// WithTools returns g with the families ts added to the families in
// effect, and each field widened just as far as the families need
// (shell to inspect for the shell family, files to write for edit, ...).
// It says which grant would give a tool the decision denied.
func (g Grant) WithTools(ts ...string) Grant {
	out := g
	all := append(g.ToolFamilies(), ts...)
	for _, t := range all {
		switch tools.Family(t) {
		case tools.Read, tools.Search:
			out.Files = max(out.Files, FilesRead)
		case tools.Edit:
			out.Files = FilesWrite
		case tools.Shell:
			out.Shell = max(out.Shell, ShellInspect)
		case tools.Web:
			out.Network = NetworkOn
		case tools.Desktop:
			out.Desktop = DesktopOn
		}
	}
	out.Tools = normalTools(out, all)
	return out
}

// String renders the grant in canonical field form, which Parse accepts:
// "files=read,shell=inspect,network=off,desktop=off".
func (g Grant) String() string {
	return fmt.Sprintf("files=%s,shell=%s,network=%s,desktop=%s", g.Files, g.Shell, g.Network, g.Desktop) + g.toolsField()
}

// toolsField is the tools field as String and Compact end with:
// ",tools=a+b", ",tools=none", or "" when tools are not restricted.
func (g Grant) toolsField() string {
	switch {
	case g.Tools == nil:
		return ""
	case len(g.Tools) == 0:
		return ",tools=none"
	}
	return ",tools=" + strings.Join(g.Tools, "+")
}

// Spec is g as a --grant value that gives g again wherever it is run:
// Compact's form, except that a grant based on the verify preset names
// its network ("verify,network=on", "verify,shell=full,network=hosts"),
// since a verify spec without a network field runs under network=hosts
// where the platform holds it (package run) and under network=on where it
// does not.
func (g Grant) Spec() string {
	if g.Network != NetworkOn && g.Network != NetworkHosts {
		return g.Compact()
	}
	on := g
	on.Network = NetworkOn
	c := on.Compact()
	if c != "verify" && !strings.HasPrefix(c, "verify,") || strings.Contains(c, "network=") {
		return g.Compact()
	}
	base, tools, _ := strings.Cut(c, ",tools=")
	out := base + ",network=" + g.Network.String()
	if tools != "" {
		out += ",tools=" + tools
	}
	return out
}

// Compact renders the grant as the shortest spec Parse reads back to it: the
// preset it differs least from, then the fields that differ
// ("verify,network=off"). It is how a grant is shown to a person or put in
// a command line; String is the canonical, field-by-field form.
func (g Grant) Compact() string {
	// The preset with the fewest differences; on a tie, the one that
	// shares more of files and shell (what a preset is mostly about), then
	// the narrower.
	best, bestN, bestLocal := "", -1, 0
	for _, p := range Presets() {
		var diff []string
		add := func(field, have, base string) {
			if have != base {
				diff = append(diff, field+"="+have)
			}
		}
		add("files", g.Files.String(), p.Grant.Files.String())
		add("shell", g.Shell.String(), p.Grant.Shell.String())
		add("network", g.Network.String(), p.Grant.Network.String())
		add("desktop", g.Desktop.String(), p.Grant.Desktop.String())
		local := 0
		if p.Grant.Files == g.Files {
			local++
		}
		if p.Grant.Shell == g.Shell {
			local++
		}
		if bestN < 0 || len(diff) < bestN || len(diff) == bestN && local > bestLocal {
			best, bestN, bestLocal = strings.Join(append([]string{p.Name}, diff...), ","), len(diff), local
		}
	}
	return best + g.toolsField()
}

// PresetFor returns the narrowest preset whose families include all of
// ts, if one does.
func PresetFor(ts ...string) (Preset, bool) {
	for _, p := range Presets() {
		have := p.Grant.ToolFamilies()
		if !slices.ContainsFunc(ts, func(t string) bool { return !slices.Contains(have, t) }) {
			return p, true
		}
	}
	return Preset{}, false
}

// Name returns the preset this grant equals, or "custom".
func (g Grant) Name() string {
	for _, p := range Presets() {
		if p.Grant.Equal(g) {
			return p.Name
		}
	}
	return "custom"
}

// Equal reports whether two grants give the same authority.
func (g Grant) Equal(o Grant) bool {
	if g.Files != o.Files || g.Shell != o.Shell || g.Network != o.Network || g.Desktop != o.Desktop {
		return false
	}
	return slices.Equal(g.ToolFamilies(), o.ToolFamilies())
}

// Intersect returns the widest grant that neither g nor ceiling exceeds.
// It is how every nested or delegated grant is bounded.
func (g Grant) Intersect(ceiling Grant) Grant {
	out := Grant{
		Files:   min(g.Files, ceiling.Files),
		Shell:   min(g.Shell, ceiling.Shell),
		Network: min(g.Network, ceiling.Network),
		Desktop: min(g.Desktop, ceiling.Desktop),
	}
	in := []string{}
	limit := ceiling.ToolFamilies()
	for _, t := range g.ToolFamilies() {
		if slices.Contains(limit, t) {
			in = append(in, t)
		}
	}
	out.Tools = normalTools(out, in)
	return out
}

// Union returns the narrowest grant at least as wide as g and o in every
// field, tool families included.
func (g Grant) Union(o Grant) Grant {
	out := Grant{
		Files:   max(g.Files, o.Files),
		Shell:   max(g.Shell, o.Shell),
		Network: max(g.Network, o.Network),
		Desktop: max(g.Desktop, o.Desktop),
	}
	out.Tools = normalTools(out, append(g.ToolFamilies(), o.ToolFamilies()...))
	return out
}

// Within reports whether g is no wider than ceiling in every field.
func (g Grant) Within(ceiling Grant) bool {
	return g.Intersect(ceiling).Equal(g)
}

// Exceeds lists, in words, each field in which g is wider than ceiling
// ("network=on exceeds the ceiling's network=off").
func (g Grant) Exceeds(ceiling Grant) []string {
	var out []string
	add := func(field string, have, limit fmt.Stringer, wider bool) {
		if wider {
			out = append(out, fmt.Sprintf("%s=%s exceeds the ceiling's %s=%s", field, have, field, limit))
		}
	}
	add("files", g.Files, ceiling.Files, g.Files > ceiling.Files)
	add("shell", g.Shell, ceiling.Shell, g.Shell > ceiling.Shell)
	add("network", g.Network, ceiling.Network, g.Network > ceiling.Network)
	add("desktop", g.Desktop, ceiling.Desktop, g.Desktop > ceiling.Desktop)
	if g.Tools != nil || ceiling.Tools != nil {
		// (With neither naming tools, the families follow the fields
		// and the words above say it all.)
		limit := ceiling.ToolFamilies()
		var beyond []string
		for _, t := range g.ToolFamilies() {
			if !slices.Contains(limit, t) {
				beyond = append(beyond, t)
			}
		}
		if len(beyond) > 0 {
			out = append(out, fmt.Sprintf("tools=%s exceeds the ceiling's tools=%s", toolsWord(beyond), toolsWord(limit)))
		}
	}
	return out
}

// Narrow bounds g by limit. When g is within limit it returns g itself
// and no words; otherwise it returns g.Intersect(limit) and, in words
// (Exceeds), each field in which g went beyond limit. Every narrowing of a
// grant by an enclosing run's grant or a ceiling goes through it.
func (g Grant) Narrow(limit Grant) (Grant, []string) {
	ex := g.Exceeds(limit)
	if len(ex) == 0 {
		return g, nil
	}
	return g.Intersect(limit), ex
}

// Describe says in plain words what the grant allows, one line per field.
func (g Grant) Describe() []string {
	lines := []string{
		"files=" + g.Files.String() + ": " + [...]string{
			"the workspace is not visible",
			"the workspace is readable, not writable",
			"the workspace is writable, except git config, hooks and wrun's own config",
		}[g.Files],
		"shell=" + g.Shell.String() + ": " + [...]string{
			"no process may be launched",
			"programs run but write nothing except /dev/null and a private temp dir",
			"programs may write build outputs, test temp files and git fetch plumbing, nothing else",
			"programs may write where files allows plus the user's tool caches",
		}[g.Shell],
		"network=" + g.Network.String() + ": " + [...]string{
			"no TCP and no socket family but UNIX",
			"loopback only: sockets this run bound, and the host's loopback services --allow-host names",
			"loopback, and the hosts --allow-host names, through wrun's proxy (HTTPS_PROXY and HTTP_PROXY are set)",
			"network allowed",
		}[g.Network],
		"desktop=" + g.Desktop.String() + ": " + [...]string{
			"no display, D-Bus or terminal injection; their environment is removed",
			"the desktop session (X11, Wayland, D-Bus) is reachable",
		}[g.Desktop],
	}
	fams := g.ToolFamilies()
	switch {
	case len(fams) == 0:
		lines = append(lines, "tools=none: a harness may give the child no tool at all")
	case g.Tools == nil:
		lines = append(lines, "tools="+toolsWord(fams)+": a harness may give the child tools of these families (the default for these fields)")
	default:
		lines = append(lines, "tools="+toolsWord(fams)+": a harness may give the child tools of these families only")
	}
	return lines
}

// toolsWord is families as the tools field writes them.
func toolsWord(fams []string) string {
	if len(fams) == 0 {
		return "none"
	}
	return strings.Join(fams, "+")
}

// Ceiling is the widest grant an invoking user can hand out without opening
// the desktop: their own authority.
func Ceiling() Grant {
	return Grant{Files: FilesWrite, Shell: ShellFull, Network: NetworkOn, Desktop: DesktopOff}
}

package escalate

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/quote"
	"github.com/wrun-dev/wrun/policy"
)

//go:embed catalogue.json
var catalogueJSON []byte

// The kinds of Alternative, in the order they are offered (narrowest
// first). KindBeyondCeiling replaces an alternative the ceiling forbids.
const (
	// KindRoute is a sanctioned way that widens nothing for this command,
	// or runs a different command first (cargo fetch, then --offline).
	KindRoute = "route"
	// KindAllowWrite adds one writable path (--allow-write PATH).
	KindAllowWrite = "allow-write"
	// KindAllowRead adds one readable path (--allow-read PATH): the file
	// or directory whose read was refused, exactly, which opens it even
	// where it is hidden (policy: a grant of exactly a hidden path opens
	// it). No grant field bounds reads, so the ceiling does not either;
	// approving one always takes naming it (Sensitive).
	KindAllowRead = "allow-read"
	// KindAllowUnix adds one UNIX socket outside the sandbox the child may
	// connect and send to (--allow-unix PATH): narrower than desktop=on,
	// and bounded by the ceiling as desktop=on is.
	KindAllowUnix = "allow-unix"
	// KindAllowHost adds one host the child may reach (--allow-host
	// HOST:PORT): under network=loopback a loopback service of the host,
	// the denied address itself. Narrower than network=on, and bounded by
	// the ceiling as the network value the entry needs is.
	KindAllowHost = "allow-host"
	// KindGrant changes grant fields (--grant SPEC).
	KindGrant = "grant"
	// KindAskParent hands the decision to whoever started the run.
	KindAskParent = "ask-parent"
	// KindBeyondCeiling is an alternative the ceiling forbids, kept so the
	// request says why it is not offered. It cannot be approved.
	KindBeyondCeiling = "beyond-ceiling"
)

// kindRank orders the kinds from the narrowest; -1 for an unknown kind.
func kindRank(kind string) int {
	switch kind {
	case KindRoute:
		return 0
	case KindAllowWrite, KindAllowRead, KindAllowUnix, KindAllowHost:
		return 1
	case KindGrant:
		return 2
	case KindAskParent:
		return 3
	}
	return -1
}

type catalogue struct {
	Version int       `json:"version"`
	Comment string    `json:"comment"`
	Rules   []ruleDef `json:"rules"`
	// Protected comes from policy.ProtectedPatterns, not the file.
	Protected    []policy.ProtectedPattern `json:"-"`
	Lockfiles    []string                  `json:"lockfiles"`
	Alternatives []altDef                  `json:"alternatives"`
}

type ruleDef struct {
	ID    string `json:"id"`
	Field string `json:"field"`
	Short string `json:"short"`
	Why   string `json:"why"`
}

type altDef struct {
	ID          string            `json:"id"`
	Rules       []string          `json:"rules"`
	Kind        string            `json:"kind"`
	When        when              `json:"when"`
	Set         map[string]string `json:"set"`
	Path        string            `json:"path"`
	Description string            `json:"description"`
	Try         string            `json:"try"`
	Commands    [][]string        `json:"commands"`
}

type when struct {
	Command    []string `json:"command"`
	NotCommand []string `json:"not_command"`
	Program    []string `json:"program"`
	NotProgram []string `json:"not_program"`
	Tool       []string `json:"tool"`
	Base       []string `json:"base"`
	If         []string `json:"if"`
}

// conditions are the named predicates "when.if" may use.
var conditions = []string{"full-covers", "shell-verify", "exists", "missing"}

// pathPlaceholders are the values altDef.Path may take.
var pathPlaceholders = []string{"{path}", "{narrowest}", "{cache_dir}"}

var placeholderRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{[a-z_]+(\+[^}]*)?\}`) })

var knownPlaceholders = []string{"{path}", "{addr}", "{target}", "{cache}", "{why}", "{hole}",
	"{files}", "{shell}", "{network}", "{desktop}", "{grant}", "{new_grant}", "{route_grant}",
	"{argv}", "{command}"}

// forbidden are words no alternative may contain: nothing ever suggests
// leaving the sandbox.
var forbidden = []string{"disable", "unsandboxed", "no-sandbox", "without wrun", "without the sandbox",
	"sandbox off", "sudo", "dangerously", "--best-effort", "chmod", "setenforce"}

// loadCatalogue parses and checks the embedded catalogue.
func loadCatalogue() (*catalogue, error) {
	return parseCatalogue(catalogueJSON)
}

func parseCatalogue(b []byte) (*catalogue, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c catalogue
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("escalate: reading the catalogue of alternatives: %w", err)
	}
	c.Protected = policy.ProtectedPatterns()
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("escalate: the catalogue of alternatives is broken: %w", err)
	}
	return &c, nil
}

// check enforces what the code relies on, so a bad edit fails every test
// rather than producing a bad request.
func (c *catalogue) check() error {
	if c.Version != 1 {
		return fmt.Errorf("version %d, want 1", c.Version)
	}
	fields := []string{"files", "shell", "network", "desktop", FieldProtected, FieldHidden, FieldBoundary, FieldUnknown}
	rules := map[string]bool{}
	for _, r := range c.Rules {
		if r.ID == "" || rules[r.ID] {
			return fmt.Errorf("rule %q: empty or repeated id", r.ID)
		}
		rules[r.ID] = true
		if !slices.Contains(fields, r.Field) {
			return fmt.Errorf("rule %q: unknown field %q", r.ID, r.Field)
		}
		if r.Short == "" || r.Why == "" {
			return fmt.Errorf("rule %q: short and why are required", r.ID)
		}
		if err := checkPlaceholders(r.Short + r.Why); err != nil {
			return fmt.Errorf("rule %q: %w", r.ID, err)
		}
	}
	for _, p := range c.Protected {
		if !slices.Contains([]string{"gitdir", "home", "home-dot", "workdir", "any", "file"}, p.Under) || (p.Rel == "") != (p.Under == "home-dot") || p.Why == "" {
			return fmt.Errorf("protected pattern %+v: want under gitdir, home or any with a rel path, or home-dot without one, and a why", p)
		}
	}
	ids := map[string]bool{}
	for _, a := range c.Alternatives {
		if a.ID == "" || ids[a.ID] {
			return fmt.Errorf("alternative %q: empty or repeated id", a.ID)
		}
		ids[a.ID] = true
		if kindRank(a.Kind) < 0 {
			return fmt.Errorf("alternative %q: unknown kind %q", a.ID, a.Kind)
		}
		if len(a.Rules) == 0 {
			return fmt.Errorf("alternative %q: applies to no rule", a.ID)
		}
		for _, r := range a.Rules {
			if r != "*" && !rules[r] {
				return fmt.Errorf("alternative %q: unknown rule %q", a.ID, r)
			}
		}
		for _, cond := range a.When.If {
			if !slices.Contains(conditions, cond) {
				return fmt.Errorf("alternative %q: unknown condition %q", a.ID, cond)
			}
		}
		for k, v := range a.Set {
			if _, err := grant.Parse(k + "=" + v); err != nil {
				return fmt.Errorf("alternative %q: set: %w", a.ID, err)
			}
		}
		if a.Kind == KindGrant && len(a.Set) == 0 || len(a.Set) > 0 && a.Kind != KindGrant && a.Kind != KindRoute {
			return fmt.Errorf("alternative %q: a grant alternative sets fields, and only it or a route may", a.ID)
		}
		if (a.Kind == KindAllowWrite || a.Kind == KindAllowRead || a.Kind == KindAllowUnix) != (a.Path != "") {
			return fmt.Errorf("alternative %q: an allow-write, allow-read or allow-unix alternative names a path, and only it may", a.ID)
		}
		if (a.Kind == KindAllowUnix || a.Kind == KindAllowRead) && a.Path != "{path}" {
			return fmt.Errorf("alternative %q: an %s alternative names the denied path ({path})", a.ID, a.Kind)
		}
		if a.Path != "" && !slices.Contains(pathPlaceholders, a.Path) {
			return fmt.Errorf("alternative %q: path %q is not one of %v", a.ID, a.Path, pathPlaceholders)
		}
		if a.Description == "" || a.Try == "" {
			return fmt.Errorf("alternative %q: description and try are required", a.ID)
		}
		text := a.Description + " " + a.Try
		for _, cmd := range a.Commands {
			if len(cmd) < 3 || cmd[0] != "wrun" || !slices.Contains(cmd, "--") {
				return fmt.Errorf("alternative %q: command %q is not a wrun command line", a.ID, cmd)
			}
			text += " " + strings.Join(cmd, " ")
		}
		if err := checkPlaceholders(text); err != nil {
			return fmt.Errorf("alternative %q: %w", a.ID, err)
		}
		low := strings.ToLower(text)
		for _, w := range forbidden {
			if strings.Contains(low, w) {
				return fmt.Errorf("alternative %q: contains %q; no alternative may leave the sandbox", a.ID, w)
			}
		}
	}
	return nil
}

func checkPlaceholders(s string) error {
	for _, p := range placeholderRE().FindAllString(s, -1) {
		if strings.HasPrefix(p, "{argv+") {
			continue
		}
		if !slices.Contains(knownPlaceholders, p) {
			return fmt.Errorf("unknown placeholder %s", p)
		}
	}
	return nil
}

func (c *catalogue) rule(id string) ruleDef {
	for _, r := range c.Rules {
		if r.ID == id {
			return r
		}
	}
	return ruleDef{ID: id, Field: FieldUnknown, Short: "the sandbox refused it", Why: "wrun could not tell which part of the grant withheld this"}
}

// expander fills placeholders for one finding and (optionally) one
// alternative.
type expander struct {
	a          *Analyzer
	f          finding
	target     string
	newGrant   grant.Grant
	routeGrant grant.Grant
}

func (a *Analyzer) expander(f finding, alt *altDef) *expander {
	x := &expander{a: a, f: f, newGrant: a.p.Grant, routeGrant: a.p.Grant}
	if alt != nil {
		g := applySet(a.p.Grant, alt.Set)
		if alt.Kind == KindRoute {
			x.routeGrant = g
		} else {
			x.newGrant = g
		}
	}
	return x
}

func (x *expander) value(p string) string {
	g := x.a.p.Grant
	switch p {
	case "{path}":
		return quote.Word(x.f.path)
	case "{addr}":
		return quote.Word(x.f.d.Addr)
	case "{target}":
		return quote.Word(x.target)
	case "{cache}":
		if x.f.cache != nil {
			return x.f.cache.Name
		}
		return "the tool cache"
	case "{why}":
		return quote.Line(x.f.why)
	case "{hole}":
		return quote.Word(x.f.hole)
	case "{files}":
		return g.Files.String()
	case "{shell}":
		return g.Shell.String()
	case "{network}":
		return g.Network.String()
	case "{desktop}":
		return g.Desktop.String()
	case "{grant}":
		return g.Compact()
	case "{new_grant}":
		return x.newGrant.Compact()
	case "{route_grant}":
		return x.routeGrant.Compact()
	case "{command}":
		return shellJoin(x.a.argv())
	}
	if flag, ok := strings.CutPrefix(p, "{argv+"); ok {
		return shellJoin(withFlag(x.a.argv(), strings.TrimSuffix(flag, "}")))
	}
	if p == "{argv}" {
		return shellJoin(x.a.argv())
	}
	return p
}

func (x *expander) text(s string) string {
	return placeholderRE().ReplaceAllStringFunc(s, x.value)
}

// tokens expands one command: {argv} and {argv+FLAG} as whole tokens
// become the command's words.
func (x *expander) tokens(cmd []string) []string {
	var out []string
	for _, t := range cmd {
		switch {
		case t == "{argv}":
			out = append(out, x.a.argv()...)
		case strings.HasPrefix(t, "{argv+") && strings.HasSuffix(t, "}"):
			out = append(out, withFlag(x.a.argv(), strings.TrimSuffix(strings.TrimPrefix(t, "{argv+"), "}"))...)
		default:
			out = append(out, x.text(t))
		}
	}
	return out
}

// applySet returns g with the fields of set changed.
func applySet(g grant.Grant, set map[string]string) grant.Grant {
	if len(set) == 0 {
		return g
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	spec := g.String()
	// Parse takes a preset first; rebuild from the canonical fields with
	// the changes in place of the old values.
	parts := strings.Split(spec, ",")
	for i, part := range parts {
		k, _, _ := strings.Cut(part, "=")
		if v, ok := set[k]; ok {
			parts[i] = k + "=" + v
		}
	}
	out, err := grant.Parse(strings.Join(parts, ","))
	if err != nil {
		return g // the catalogue check makes this unreachable
	}
	return out
}

// withFlag puts flag after the subcommand of a cargo or npm command line
// (before any "--"), or at the end of any other; it changes nothing if the
// flag is already there.
func withFlag(argv []string, flag string) []string {
	if len(argv) == 0 || slices.Contains(argv, flag) {
		return slices.Clone(argv)
	}
	end := len(argv)
	if i := slices.Index(argv, "--"); i > 0 {
		end = i
	}
	at := end
	switch filepath.Base(argv[0]) {
	case "cargo", "npm", "go":
		for i := 1; i < end; i++ {
			if !strings.HasPrefix(argv[i], "-") && !strings.HasPrefix(argv[i], "+") {
				at = i + 1
				break
			}
		}
	}
	out := slices.Clone(argv[:at])
	out = append(out, flag)
	return append(out, argv[at:]...)
}

// shellJoin renders words as one POSIX shell command line.
func shellJoin(words []string) string { return quote.Words(words) }

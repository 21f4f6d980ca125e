package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/quote"
	"github.com/wrun-dev/wrun/run"
	"github.com/wrun-dev/wrun/tools"
	"github.com/wrun-dev/wrun/tools/toolsfile"
)

// The published schemas of wrun tools' output and input (escalate/schema).
const (
	toolsDecisionSchemaID  = "https://wrun.dev/schema/tools-decision.v2.json"
	toolsCatalogueSchemaID = "https://wrun.dev/schema/tools-catalogue.v2.json"
)

// maxCatalogue bounds the catalogue read from stdin.
const maxCatalogue = 16 << 20

// toolsFlags are the flags both tools subcommands take.
type toolsFlags struct {
	grant   string
	ceiling string
	reason  string
	server  string
	workdir string
	json    bool
}

func (f *toolsFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&f.grant, "grant", "g", grant.DefaultPreset, "the child's grant `SPEC`: a preset and/or fields, e.g. write,tools=read+search+edit")
	fl.StringVar(&f.ceiling, "ceiling", "", "bound the grant by this grant `SPEC` (default: WRUN_CEILING, else full with desktop off, widened by what --grant names)")
	fl.StringVar(&f.reason, "reason", "", "why the child needs a desktop tool (`TEXT`, one line); a desktop tool is never allowed without one, and the reason is recorded in the decision")
	fl.StringVarP(&f.workdir, "workdir", "C", "", "the workspace whose "+toolsfile.RepoFile+" may narrow the labels (default: the current directory)")
	fl.BoolVar(&f.json, "json", false, "machine-readable output ("+toolsDecisionSchemaID+")")
	_ = cmd.RegisterFlagCompletionFunc("grant", completeGrant)
}

const toolsLong = `wrun tools answers a harness: which of the tools it offers a child the
child's grant gives. The grant's tools field names tool families:

  read     read files, list directories       search   search names and contents
  edit     create, change, delete files       shell    run commands
  web      fetch pages, search the web        spawn    start sub-agents
  mcp      call MCP servers' tools            desktop  see or drive screen, keys, mouse
  control  the harness's own to-do lists, plans, questions to the user and
           the end of the task (TodoWrite, ExitPlanMode, update_plan,
           attempt_completion, ask_followup_question): nothing the grant
           governs

A preset carries the families its fields imply, and control always:
inspect and verify read+search+shell+control, write adds edit, full adds
web and spawn, and a grant with shell=none has no shell family. A tool
that writes what later sessions load is edit, as a start-up file is
(save_memory); one that starts a sub-agent is spawn (new_task).
tools=a+b+c replaces them (within the ceiling); mcp and desktop are only
ever given by name.

The decision is fail closed:
  - a tool neither wrun's table of common harness tool names nor a label
    classifies is never allowed (denial: unknown);
  - an MCP tool (mcp__SERVER__TOOL, or a name with --server / a "server"
    member) needs the mcp family and a label on the tool or its server
    naming a family the grant also has;
  - a desktop tool needs desktop=on, the desktop family and --reason TEXT
    (denial: desktop-requires-reason);
  - any other tool needs its family (denial: not-granted, with the grant
    or preset that would allow it and whether that is within the ceiling).

Labels: $XDG_CONFIG_HOME/wrun/tools.toml (else ~/.config/wrun/tools.toml):

  [servers]
  github = "web"                 # every tool of the github MCP server
  [tools]
  "mcp__github__create_pull_request" = "edit"   # this tool, not its server's
  lint_report = "read"           # a harness tool wrun does not know

A repository's WORKDIR/` + toolsfile.RepoFile + ` may only narrow: the same tables,
each naming families a tool or server needs in addition to its own.

The shell family is not the shell field: the field decides what wrun lets
processes do (shell=none: nothing may run); the family decides whether a
harness offers a shell tool. See wrun explain for what the kernel backs.`

func newToolsCmd(stdin io.Reader, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tools check|filter",
		Short: "Decide which tools of a harness's catalogue a grant gives a child",
		Long:  toolsLong,
		Example: `  wrun tools check --grant inspect Read Grep Bash Edit
  wrun tools check --grant full,tools=read+mcp mcp__github__list_issues
  wrun tools check --grant full,desktop=on,tools=read+desktop --reason "click the test's dialog" computer
  wrun tools filter --grant write < catalogue.json > visible.json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &usageError{fmt.Sprintf("wrun tools: %q is not a subcommand; say check or filter (wrun tools --help)", args[0])}
			}
			return &usageError{"wrun tools: say check or filter (wrun tools --help)"}
		},
	}
	var cf, ff toolsFlags
	check := &cobra.Command{
		Use:   "check [--grant SPEC] [--reason TEXT] [--server NAME] [--json] NAME...",
		Short: "Say per tool whether the grant allows it; exit 0 only if all are allowed",
		Long: `check decides each NAME under the grant and prints one line per tool:
allowed, or denied with its type (unknown, not-granted,
desktop-requires-reason) and what to do. Exit status: 0 if every tool is
allowed, 1 if any is denied, 125 for bad input (a bad grant, a bad labels
file, no NAME).

` + toolsLong,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &usageError{"wrun tools check: name at least one tool, e.g. wrun tools check --grant inspect Read Bash"}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return toolsCheck(cf, args, stdout)
		},
	}
	cf.register(check)
	check.Flags().StringVar(&cf.server, "server", "", "the MCP server the named tools belong to (`NAME`), for names without the mcp__SERVER__ prefix")
	filter := &cobra.Command{
		Use:   "filter [--grant SPEC] [--reason TEXT] [--json] < CATALOGUE.json",
		Short: "Print the part of a tool catalogue the grant gives, in the same format",
		Long: `filter reads a catalogue on stdin (` + toolsCatalogueSchemaID + `) in the
shape a harness has it: a JSON array of tools, each with "name" and, for
an MCP tool, "server" (wrun's own form, Anthropic's); OpenAI
chat-completions tools {"type": "function", "function": {"name": ...}};
OpenAI Responses tools (function tools by name, hosted tools by type, an
MCP server's by server_label); Gemini's {"functionDeclarations": [...]};
an object holding the list in "tools" (a request body, MCP's tools/list
result); or MCP's JSON-RPC response to tools/list. MCP's own tools (a
tools/list, tools with inputSchema) are one server's: name it with
--server NAME. It prints the tools the grant allows in the same shape,
in order, each object byte for byte as given; other members pass through
untouched. The same decision as check, so what a child sees is what it
may call. With --json it prints the visible tools with every decision
instead. Exit status: 0, or 125 for bad input.

` + toolsLong,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return toolsFilter(ff, stdin, stdout)
		},
	}
	ff.register(filter)
	filter.Flags().StringVar(&ff.server, "server", "", "the MCP server whose tools the catalogue lists (`NAME`): an MCP tools/list, or tools without a \"server\" member")
	cmd.AddCommand(check, filter)
	for _, c := range []*cobra.Command{cmd, check, filter} {
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err.Error()} })
	}
	return cmd
}

// toolsContext is what a decision is made in: the bounded grant, its
// ceiling and the labels.
type toolsContext struct {
	bounds run.Bounds
	labels tools.Labels
	read   []string // the labels files read
}

func loadToolsContext(f toolsFlags) (toolsContext, error) {
	if strings.ContainsFunc(f.reason, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return toolsContext{}, &usageError{"--reason: one line of text, no control characters"}
	}
	b, err := run.Resolve(f.grant, f.ceiling, "", os.Environ())
	if err != nil {
		return toolsContext{}, &usageError{err.Error()}
	}
	wd := f.workdir
	if wd == "" {
		if wd, err = os.Getwd(); err != nil {
			return toolsContext{}, fmt.Errorf("the current directory: %w", err)
		}
	}
	if wd, err = filepath.Abs(wd); err != nil {
		return toolsContext{}, &usageError{fmt.Sprintf("--workdir: %v", err)}
	}
	l, read, err := toolsfile.Load(os.Environ(), wd)
	if err != nil {
		return toolsContext{}, &usageError{err.Error()}
	}
	if f.server != "" && (strings.Contains(f.server, "__") || strings.ContainsFunc(f.server, func(r rune) bool { return r < 0x20 || r == 0x7f })) {
		return toolsContext{}, &usageError{fmt.Sprintf("--server=%q: an MCP server name has no \"__\" and no control characters", f.server)}
	}
	return toolsContext{bounds: b, labels: l, read: read}, nil
}

func (c toolsContext) decisionGrant() tools.Grant {
	var fams []tools.Family
	for _, t := range c.bounds.Grant.ToolFamilies() {
		fams = append(fams, tools.Family(t))
	}
	return tools.Grant{Families: fams, Desktop: c.bounds.Grant.Desktop == grant.DesktopOn}
}

// toolDecision is one decision as --json prints it.
type toolDecision struct {
	Name      string       `json:"name"`
	Server    string       `json:"server,omitempty"`
	Allowed   bool         `json:"allowed"`
	Needs     []string     `json:"needs"`
	From      string       `json:"from,omitempty"`
	Denial    string       `json:"denial,omitempty"`
	Missing   []string     `json:"missing,omitempty"`
	Reason    string       `json:"reason,omitempty"`
	AllowedBy []allowedBy  `json:"allowed_by,omitempty"`
	Label     *labelAdvice `json:"label,omitempty"`
	Message   string       `json:"message"`
}

// allowedBy is a grant that would give a denied tool.
type allowedBy struct {
	Grant         string   `json:"grant"`
	Preset        bool     `json:"preset"`
	WithinCeiling bool     `json:"within_ceiling"`
	Exceeds       []string `json:"exceeds,omitempty"`
}

// labelAdvice says how to classify an unknown tool.
type labelAdvice struct {
	File     string   `json:"file"`
	Table    string   `json:"table"`
	Key      string   `json:"key"`
	Families []string `json:"families"`
}

// toolsReport is the --json output of both subcommands.
type toolsReport struct {
	Schema        string         `json:"schema"`
	Version       int            `json:"version"`
	Command       string         `json:"command"`
	Grant         string         `json:"grant"`
	GrantName     string         `json:"grant_name"`
	Families      []string       `json:"families"`
	Ceiling       string         `json:"ceiling"`
	CeilingSource string         `json:"ceiling_source"`
	LabelsFrom    []string       `json:"labels_from"`
	Notes         []string       `json:"notes"`
	AllAllowed    bool           `json:"all_allowed"`
	Decisions     []toolDecision `json:"decisions"`
	Visible       *[]rawJSON     `json:"visible,omitempty"`
}

// rawJSON is a catalogue object passed through as given.
type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }

func (c toolsContext) explainDecision(d tools.Decision) toolDecision {
	out := toolDecision{Name: d.Name, Server: d.Server, Allowed: d.Allowed, From: d.From, Denial: string(d.Denial), Reason: d.Reason}
	out.Needs = familyStrings(d.Needs)
	out.Missing = familyStrings(d.Missing)
	g := c.bounds.Grant
	switch d.Denial {
	case "":
		out.Message = fmt.Sprintf("allowed: needs %s (%s)", strings.Join(out.Needs, "+"), d.From)
		if d.Reason != "" {
			out.Message += "; reason recorded: " + d.Reason
		}
	case tools.Unknown:
		adv := labelFor(d, toolsfile.UserPath(os.Environ()))
		out.Label = &adv
		out.Message = fmt.Sprintf("unknown: wrun's table of harness tools and your labels do not classify it, so it is never allowed; label it with one of the families %s in %s, e.g. [%s] %s = \"read\"",
			strings.Join(tools.FamilyNames(), ", "), adv.File, adv.Table, tomlKey(adv.Key))
	case tools.NotGranted:
		out.AllowedBy = c.allowedBy(d)
		var by []string
		for _, a := range out.AllowedBy {
			w := a.Grant
			if a.WithinCeiling {
				w += " (within the ceiling)"
			} else {
				w += " (beyond the ceiling: " + strings.Join(a.Exceeds, "; ") + ")"
			}
			by = append(by, w)
		}
		out.Message = fmt.Sprintf("not-granted: needs %s; the grant %s has tools=%s", strings.Join(out.Needs, "+"), g.Compact(), famWord(g.ToolFamilies()))
		if d.DesktopOff {
			out.Message += " and desktop=off"
		}
		out.Message += "; allowed by " + strings.Join(by, ", or ")
	case tools.DesktopRequiresReason:
		out.Message = "desktop-requires-reason: a desktop tool sees or drives the user's screen, keyboard and mouse; pass --reason TEXT saying why the child needs it (it is recorded in the decision)"
	}
	return out
}

// allowedBy lists the grants that would give a tool the grant denied:
// this grant with the missing families (and the fields they need), and
// the narrowest preset that carries them, each with whether it is within
// the ceiling.
func (c toolsContext) allowedBy(d tools.Decision) []allowedBy {
	ceiling := c.bounds.Ceiling.Grant
	missing := familyStrings(d.Missing)
	var out []allowedBy
	add := func(g grant.Grant, preset bool) {
		ex := g.Exceeds(ceiling)
		out = append(out, allowedBy{Grant: g.Compact(), Preset: preset, WithinCeiling: len(ex) == 0, Exceeds: ex})
	}
	wider := c.bounds.Grant.WithTools(missing...)
	add(wider, false)
	if p, ok := grant.PresetFor(familyStrings(d.Needs)...); ok && !p.Grant.Equal(wider) {
		add(p.Grant, true)
	}
	return out
}

// labelFor says where and how to label an unknown tool.
func labelFor(d tools.Decision, file string) labelAdvice {
	if file == "" {
		file = "$XDG_CONFIG_HOME/wrun/tools.toml"
	}
	name := d.Name
	if d.Server != "" && !strings.HasPrefix(name, "mcp__") {
		name = tools.MCPName(d.Server, name)
	}
	adv := labelAdvice{File: file, Table: "tools", Key: name, Families: tools.FamilyNames()}
	if server := d.Server; server != "" || strings.HasPrefix(name, "mcp__") {
		if server == "" {
			rest := strings.TrimPrefix(name, "mcp__")
			server, _, _ = strings.Cut(rest, "__")
		}
		if server != "" && !strings.Contains(server, "__") {
			adv.Table, adv.Key = "servers", server
		}
	}
	return adv
}

// tomlKey quotes a key unless it is a bare TOML key.
func tomlKey(k string) string {
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return fmt.Sprintf("%q", k)
		}
	}
	return k
}

func familyStrings(fs []tools.Family) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, string(f))
	}
	return out
}

func famWord(fs []string) string {
	if len(fs) == 0 {
		return "none"
	}
	return strings.Join(fs, "+")
}

func (c toolsContext) report(command string, ds []toolDecision) toolsReport {
	g := c.bounds.Grant
	all := true
	for _, d := range ds {
		all = all && d.Allowed
	}
	return toolsReport{
		Schema: toolsDecisionSchemaID, Version: 2, Command: command,
		Grant: g.String(), GrantName: g.Name(), Families: g.ToolFamilies(),
		Ceiling: c.bounds.Ceiling.Grant.String(), CeilingSource: c.bounds.Ceiling.Source,
		LabelsFrom: append([]string{}, c.read...), Notes: append(append([]string{}, c.bounds.Notes...), c.labels.Shadowed()...),
		AllAllowed: all, Decisions: ds,
	}
}

func toolsCheck(f toolsFlags, names []string, stdout io.Writer) error {
	c, err := loadToolsContext(f)
	if err != nil {
		return err
	}
	g := c.decisionGrant()
	var ds []toolDecision
	for _, n := range names {
		if n == "" {
			return &usageError{"wrun tools check: an empty tool name"}
		}
		ds = append(ds, c.explainDecision(tools.Decide(g, c.labels, tools.Call{Name: n, Server: f.server, Reason: f.reason})))
	}
	rep := c.report("check", ds)
	if f.json {
		writeJSON(stdout, rep)
	} else {
		for _, n := range rep.Notes {
			fmt.Fprintf(stdout, "note: %s\n", quote.Line(n))
		}
		for _, d := range ds {
			name := d.Name
			if d.Server != "" {
				name = d.Server + ": " + name
			}
			verdict := "denied"
			if d.Allowed {
				verdict = "allowed"
			}
			msg := strings.TrimPrefix(d.Message, "allowed: ")
			fmt.Fprintf(stdout, "%s: %s, %s\n", quote.Line(name), verdict, quote.Line(msg))
		}
	}
	if !rep.AllAllowed {
		return &exitError{1}
	}
	return nil
}

func toolsFilter(f toolsFlags, stdin io.Reader, stdout io.Writer) error {
	c, err := loadToolsContext(f)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(stdin, maxCatalogue+1))
	if err != nil {
		return fmt.Errorf("reading the catalogue from stdin: %w", err)
	}
	if len(data) > maxCatalogue {
		return &usageError{fmt.Sprintf("the catalogue on stdin is larger than %d bytes", maxCatalogue)}
	}
	cat, err := tools.Parse(data, f.server)
	if err != nil {
		return &usageError{err.Error() + " (see wrun tools filter --help for the shapes read)"}
	}
	visible, decisions := tools.Filter(c.decisionGrant(), c.labels, cat.Entries, f.reason)
	if !f.json {
		keep := make([]bool, len(decisions))
		for i, d := range decisions {
			keep[i] = d.Allowed
		}
		return cat.Write(stdout, keep)
	}
	var ds []toolDecision
	for _, d := range decisions {
		ds = append(ds, c.explainDecision(d))
	}
	rep := c.report("filter", ds)
	vis := []rawJSON{}
	for _, e := range visible {
		vis = append(vis, rawJSON(e.Raw))
	}
	rep.Visible = &vis
	writeJSON(stdout, rep)
	return nil
}

// familyEnforcement says, per tool family, whether the grant has it,
// what the kernel enforces for it and what only the decision enforces.
type familyEnforcement struct {
	Family       string `json:"family"`
	Granted      bool   `json:"granted"`
	Kernel       string `json:"kernel"`
	DecisionOnly string `json:"decision_only"`
}

func toolFamilies(g grant.Grant) []familyEnforcement {
	have := g.ToolFamilies()
	files := map[grant.Files]string{
		grant.FilesNone:  "files=none: the child's own processes cannot read the workspace (Landlock)",
		grant.FilesRead:  "files=read: the child's own processes read only what the Readable list allows (Landlock)",
		grant.FilesWrite: "files=write: the child's own processes read only what the Readable list allows (Landlock)",
	}[g.Files]
	edit := "files=" + g.Files.String() + ": the child's own processes cannot write the workspace (Landlock)"
	if g.Files == grant.FilesWrite {
		edit = "files=write: the child's own processes may write the workspace, never git config, hooks or wrun's config (Landlock)"
	}
	shell := "shell=" + g.Shell.String() + ": what a process the child runs may write (Landlock)"
	if g.Shell == grant.ShellNone {
		shell = "shell=none: wrun runs no command at all"
	}
	web := "network=off: the child's own processes have no TCP (Landlock) and no socket family but UNIX (seccomp)"
	switch g.Network {
	case grant.NetworkOn:
		web = "network=on: nothing; the child's own processes may use the network"
	case grant.NetworkLoopback, grant.NetworkHosts:
		web = "network=" + g.Network.String() + ": the child's own processes reach loopback only: sockets their sandbox bound and --allow-host services (wrun's mediation)"
	}
	desktop := "desktop=off: the display environment is removed, TIOCSTI/TIOCLINUX and abstract UNIX sockets are refused (seccomp), UNIX sockets outside the sandbox are not reachable"
	if g.Desktop == grant.DesktopOn {
		desktop = "desktop=on: UNIX sockets outside the sandbox are reachable and the display environment is kept; TIOCSTI/TIOCLINUX stay refused (seccomp)"
	}
	harness := "a harness's tool runs outside the sandbox, as the harness: only the decision (wrun tools check/filter) keeps it from the child"
	rows := []familyEnforcement{
		{Family: "read", Kernel: files, DecisionOnly: "whether a harness offers or runs a read tool; " + harness},
		{Family: "search", Kernel: files, DecisionOnly: "whether a harness offers or runs a search tool; " + harness},
		{Family: "edit", Kernel: edit, DecisionOnly: "whether a harness offers or runs an edit tool; " + harness},
		{Family: "shell", Kernel: shell, DecisionOnly: "whether a harness offers a shell tool at all; commands it runs through wrun are bounded by the kernel as above"},
		{Family: "web", Kernel: web, DecisionOnly: "whether a harness offers or runs a web tool; " + harness},
		{Family: "spawn", Kernel: "nothing beyond the grant: a sub-agent started under wrun gets a grant no wider than this one (a nested wrun only narrows)", DecisionOnly: "whether a harness offers a spawn tool; " + harness},
		{Family: "mcp", Kernel: "nothing: an MCP server runs outside the sandbox, as the harness", DecisionOnly: "whether a harness offers or calls an MCP tool, with the mcp family and a label the grant also has"},
		{Family: "desktop", Kernel: desktop, DecisionOnly: "whether a harness offers or runs a desktop tool (also needs desktop=on and a recorded --reason); " + harness},
		{Family: "control", Kernel: "nothing: a control tool (a to-do list, a plan, a question to the user) reads and writes nothing the grant governs", DecisionOnly: "whether a harness offers its own control tools; every preset carries them"},
	}
	for i := range rows {
		rows[i].Granted = slices.Contains(have, rows[i].Family)
	}
	return rows
}

// writeToolFamilies is explain's section on tool families.
func writeToolFamilies(w io.Writer, g grant.Grant) {
	section(w, "Tool families (tools="+famWord(g.ToolFamilies())+"; what a harness may give the child, decided by wrun tools check/filter):")
	for _, r := range toolFamilies(g) {
		mark := "not granted"
		if r.Granted {
			mark = "granted"
		}
		fmt.Fprintf(w, "  %s: %s\n", r.Family, mark)
		fmt.Fprintf(w, "      kernel:        %s\n", r.Kernel)
		fmt.Fprintf(w, "      decision only: %s\n", r.DecisionOnly)
	}
}

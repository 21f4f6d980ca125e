package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wrun-dev/wrun/config"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/quote"
	"github.com/wrun-dev/wrun/receipt"
	"github.com/wrun-dev/wrun/roster"
)

func newConfigCmd(stdout *os.File) *cobra.Command {
	var workdir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "config [--json]",
		Short: "Show the effective settings and where each came from",
		Long: `config prints every setting a run here would start from, and where it came
from: built-in, your user config ($XDG_CONFIG_HOME/wrun/config.toml), or this
repository's .wrun.toml (which may only narrow). Flags given to a run come on
top, within the ceiling. A malformed file is reported with its file, line and
key, and wrun refuses to run (exit 125) until it is fixed.`,
		Example: "  wrun config\n  wrun config -C ~/src/project --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := wrunPaths()
			if err != nil {
				return err
			}
			eff, err := config.Load(paths, workdirOf(workdir))
			if err != nil {
				return err
			}
			rows := configRows(paths, eff)
			if asJSON {
				type row struct {
					Name   string `json:"name"`
					Value  string `json:"value"`
					Source string `json:"source"`
				}
				var out []row
				for _, r := range rows {
					out = append(out, row{r[0], r[1], r[2]})
				}
				writeJSON(stdout, out)
				return nil
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SETTING\tVALUE\tFROM")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", r[0], quote.Line(r[1]), quote.Line(r[2]))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&workdir, "workdir", "C", "", "the workspace whose .wrun.toml applies (default: the current directory)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	return cmd
}

// configRows are the effective settings: name, value, source.
func configRows(paths config.Paths, e config.Effective) [][3]string {
	file := func(p, what string) string {
		if p == "" {
			return "(none)"
		}
		return p
	}
	ceiling := e.Ceiling.V
	if ceiling == "" {
		ceiling = grant.Ceiling().Compact() + " (your own authority)"
	} else {
		ceiling = plainGrant(ceiling)
	}
	rows := [][3]string{
		{"user config", file(e.UserFile, "user"), paths.UserConfig},
		{"repository config", file(e.RepoFile, "repo"), "the workspace's .wrun.toml"},
		{"grant", plainGrant(e.Grant.V), e.Grant.Source},
		{"ceiling", ceiling, e.Ceiling.Source},
		{"approver", noneIfEmpty(e.Approver.V), e.Approver.Source},
		{"approver_timeout", e.ApproverTimeout.V.String(), e.ApproverTimeout.Source},
		{"keep_env", words(e.KeepEnv.V), e.KeepEnv.Source},
		{"allow_read", words(e.AllowRead.V), e.AllowRead.Source},
		{"hide", words(e.Hide.V), e.Hide.Source},
		{"tools", words(e.Tools.V), e.Tools.Source},
		{"conductor_dir", e.ConductorDir.V, e.ConductorDir.Source},
		{"receipts", paths.Receipts, "XDG_STATE_HOME (else ~/.local/state)"},
		{"receipts_max_bytes", fmt.Sprint(e.ReceiptsMax.V), e.ReceiptsMax.Source},
		{"cache.max_size", formatSize(e.CacheMax.V), e.CacheMax.Source},
		{"roster", paths.Roster, "XDG_RUNTIME_DIR (else the state directory)"},
	}
	for _, m := range sortedNames(e.Models) {
		rows = append(rows, [3]string{"model " + m, "thinking " + strings.Join(e.Models[m].V, ", "), e.Models[m].Source})
	}
	for _, n := range e.RoleNames() {
		r := e.Roles[n]
		rows = append(rows, [3]string{"role " + n, plainGrant(r.Grant) + ", thinking " + r.Thinking + modelWords(r.Model), r.Source})
	}
	return rows
}

func sortedNames[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slicesSort(out)
	return out
}

func noneIfEmpty(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func modelWords(m string) string {
	if m == "" {
		return ""
	}
	return ", model " + m
}

func newRolesCmd(stdout *os.File) *cobra.Command {
	var workdir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "roles [--json]",
		Short: "List the roles: what each may do, with which model and thinking",
		Long: `roles lists each role a run may take with --role: its grant in plain words,
its model and thinking level, and where it was defined (built-in, your user
config, or this repository's .wrun.toml, which may only narrow).

The conductor writes without asking only in its own directory; writes
elsewhere go through approval (never approved automatically inside a git
repository), and it gets no shell at all inside a git repository: delegate to
a worker there.`,
		Example: "  wrun roles\n  wrun roles --json\n  wrun --role verifier --thinking high -- go test ./...",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := wrunPaths()
			if err != nil {
				return err
			}
			eff, err := config.Load(paths, workdirOf(workdir))
			if err != nil {
				return err
			}
			type roleOut struct {
				config.Role
				// GrantCanonical is the grant a run in the role gets here:
				// the role's, narrowed to the configured ceiling.
				GrantCanonical string   `json:"effective_grant"`
				Allows         []string `json:"allows"`
				ConductorDir   string   `json:"conductor_dir,omitempty"`
			}
			var out []roleOut
			for _, n := range eff.RoleNames() {
				r := eff.Roles[n]
				g, _ := grant.Parse(r.Grant)
				ro := roleOut{Role: r, Allows: g.Describe()}
				if eff.Ceiling.V != "" {
					limit := eff.CeilingGrant()
					if n, ex := g.Narrow(limit); len(ex) > 0 {
						g = n
						ro.Allows = append(n.Describe(), "(narrowed to the ceiling "+limit.Compact()+", "+eff.Ceiling.Source+": "+strings.Join(ex, "; ")+")")
					}
				}
				ro.GrantCanonical = g.String()
				if n == config.Conductor {
					ro.ConductorDir = eff.ConductorDir.V
				}
				out = append(out, ro)
			}
			if asJSON {
				writeJSON(stdout, out)
				return nil
			}
			for i, r := range out {
				if i > 0 {
					fmt.Fprintln(stdout)
				}
				model := r.Model
				if model == "" {
					model = "(the harness's default)"
				}
				levels := ""
				if r.ThinkingLevels != nil {
					levels = " (supported: " + strings.Join(r.ThinkingLevels, ", ") + ")"
				}
				fmt.Fprintf(stdout, "%s: %s\n", r.Name, quote.Line(r.Description))
				fmt.Fprintf(stdout, "  grant:    %s\n", plainGrant(r.GrantCanonical))
				for _, l := range r.Allows {
					fmt.Fprintf(stdout, "              %s\n", l)
				}
				if r.ConductorDir != "" {
					fmt.Fprintf(stdout, "              and writes %s without asking; elsewhere only through approval; no shell inside a git repository\n", quote.Word(r.ConductorDir))
				}
				fmt.Fprintf(stdout, "  model:    %s\n", quote.Line(model))
				fmt.Fprintf(stdout, "  thinking: %s%s\n", r.Thinking, levels)
				fmt.Fprintf(stdout, "  from:     %s\n", quote.Line(r.Source))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&workdir, "workdir", "C", "", "the workspace whose .wrun.toml applies (default: the current directory)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	return cmd
}

func newRosterCmd(stdout *os.File) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "roster [--json]",
		Short: "List the runs live now on this machine",
		Long: `roster lists this user's wrun runs that are live now: pid, command line, role,
grant in plain words, model, thinking, workspace, running time, and the
directories each holds for writing. The registry lies in $XDG_RUNTIME_DIR/wrun
(else in wrun's state directory); an entry is dropped when its run exits, and
ignored once its process is gone however it ended.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := wrunPaths()
			if err != nil {
				return err
			}
			live, err := roster.List(paths.Roster)
			if err != nil {
				return err
			}
			if asJSON {
				writeJSON(stdout, roster.NewListing(live))
				return nil
			}
			if len(live) == 0 {
				fmt.Fprintln(stdout, "no live runs")
				return nil
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PID\tID\tRUNNING\tROLE\tGRANT\tMODEL\tTHINKING\tWORKDIR\tWRITES\tCOMMAND")
			for _, e := range live {
				var writes []string
				for _, w := range e.Writes {
					writes = append(writes, w.Path)
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.PID, e.ID, since(e.Start), dash(e.Role), plainGrant(e.Grant),
					dash(e.Model), dash(e.Thinking), quote.Word(e.Workdir), quote.Line(words(writes)), quote.Words(e.Argv))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newReceiptsCmd(stdout *os.File) *cobra.Command {
	var last int
	var asJSON, denied bool
	var file string
	cmd := &cobra.Command{
		Use:   "receipts [--last N] [--json] [--denied] | receipts show ID",
		Short: "List the receipts of past runs: what each ran, under which grant, and what it was refused",
		Long: `Every run appends one receipt (one JSON line) to $XDG_STATE_HOME/wrun/receipts.jsonl
(else ~/.local/state/wrun/receipts.jsonl; --receipt-file on a run writes
elsewhere, --no-receipt writes none): its id, start and end, command line as
given (it may hold secrets), workspace, role, model and thinking, grant and
ceiling and where each came from, the enforcement in force, how it ended,
every denial with its evidence, and the escalation decision and retries. The
file is 0600 in a directory no sandbox can read or write.

receipts lists the last runs; --denied only those that were refused
something, with what; receipts show ID shows one in full.`,
		Example: "  wrun receipts --last 5\n  wrun receipts --denied\n  wrun receipts show 20261202T204512Z-3f9a1c0b",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if last < 0 {
				return &usageError{fmt.Sprintf("--last=%d: want 0 (all) or more", last)}
			}
			rs, bad, err := readReceipts(file)
			if err != nil {
				return err
			}
			if denied {
				var keep []receipt.Receipt
				for _, r := range rs {
					if len(r.Denials) > 0 {
						keep = append(keep, r)
					}
				}
				rs = keep
			}
			if last > 0 && len(rs) > last {
				rs = rs[len(rs)-last:]
			}
			if asJSON {
				if rs == nil {
					rs = []receipt.Receipt{}
				}
				writeJSON(stdout, rs)
				return nil
			}
			if bad > 0 {
				fmt.Fprintf(os.Stderr, "wrun: %d line(s) of the receipts file are not receipts; skipped\n", bad)
			}
			if len(rs) == 0 {
				fmt.Fprintln(stdout, "no receipts")
				return nil
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTART\tTOOK\tEXIT\tROLE\tGRANT\tDENIED\tCOMMAND")
			for _, r := range rs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.ID, r.Start.Local().Format("2006-01-02 15:04:05"),
					(time.Duration(r.DurationMS) * time.Millisecond).String(), exitWords(&r), dash(r.Role), plainGrant(r.Grant), len(r.Denials), quote.Words(r.Argv))
				if denied {
					for _, d := range r.Denials {
						fmt.Fprintf(tw, "\t\t\t\t\t\t\t  %s\n", quote.Line(d.Summary))
					}
				}
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVar(&last, "last", 0, "only the last `N` receipts (0: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "machine-readable output (an array of receipts)")
	cmd.Flags().BoolVar(&denied, "denied", false, "only runs that were refused something, with each denial")
	cmd.PersistentFlags().StringVar(&file, "receipt-file", "", "read `PATH` instead of the default receipts file")
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one receipt in plain words, with the request it produced",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rs, _, err := readReceipts(file)
			if err != nil {
				return err
			}
			for i := len(rs) - 1; i >= 0; i-- {
				if rs[i].ID == args[0] {
					if asJSON {
						writeJSON(stdout, rs[i])
					} else {
						writeReceipt(stdout, &rs[i])
					}
					return nil
				}
			}
			return fmt.Errorf("no receipt %q (wrun receipts lists them)", args[0])
		},
	}
	show.Flags().BoolVar(&asJSON, "json", false, "the receipt as JSON")
	cmd.AddCommand(show)
	return cmd
}

func readReceipts(file string) ([]receipt.Receipt, int, error) {
	if file == "" {
		paths, err := wrunPaths()
		if err != nil {
			return nil, 0, err
		}
		file = paths.Receipts
	}
	return receipt.Read(file)
}

func exitWords(r *receipt.Receipt) string {
	if r.Signal != 0 {
		return fmt.Sprintf("%d (signal %d)", r.ExitCode, r.Signal)
	}
	return fmt.Sprint(r.ExitCode)
}

// writeReceipt says what one run did, in plain words.
func writeReceipt(w io.Writer, r *receipt.Receipt) {
	p := func(label, format string, a ...any) {
		fmt.Fprintf(w, "%-12s %s\n", label+":", quote.Line(fmt.Sprintf(format, a...)))
	}
	p("receipt", "%s", r.ID)
	p("command", "%s", quote.Words(r.Argv))
	p("workspace", "%s", r.Workdir)
	p("ran", "%s to %s (%s), wrun pid %d", r.Start.Local().Format("2006-01-02 15:04:05"), r.End.Local().Format("15:04:05"), time.Duration(r.DurationMS)*time.Millisecond, r.PID)
	p("ended", "exit %s", exitWords(r))
	if r.Error != "" {
		p("error", "%s", r.Error)
	}
	if r.Role != "" || r.Model != "" || r.Thinking != "" {
		p("role", "%s, model %s, thinking %s", dash(r.Role), dash(r.Model), dash(r.Thinking))
	}
	p("grant", "%s (asked: %s, from %s)", plainGrant(r.Grant), plainGrant(r.GrantRequested), r.GrantSource)
	if g, err := grant.Parse(r.Grant); err == nil {
		for _, l := range g.Describe() {
			fmt.Fprintf(w, "%-12s   %s\n", "", l)
		}
	}
	ceiling := r.Ceiling
	if ceiling == "" {
		ceiling = "none set (your own authority)"
	} else {
		ceiling = plainGrant(ceiling)
	}
	p("ceiling", "%s (from %s)", ceiling, r.CeilingSource)
	for _, a := range r.AllowWrite {
		p("writable", "%s", a)
	}
	for _, a := range r.AllowRead {
		p("readable", "%s", a)
	}
	enf := r.Enforcement.Summary
	if enf == "" {
		enf = r.Enforcement.Sandbox
	}
	if r.Enforcement.Degraded {
		enf += ", DEGRADED: not enforced: " + strings.Join(r.Enforcement.Gaps, "; ")
	}
	p("enforced by", "%s", noneIfEmpty(enf))
	for _, n := range r.Notes {
		p("note", "%s", n)
	}
	if len(r.Denials) == 0 {
		p("denied", "nothing")
	}
	for _, d := range r.Denials {
		p("denied", "%s [%s, %s, attempt %d]", strings.TrimPrefix(d.Summary, "wrun: "), d.Kind, d.Evidence, d.Attempt)
	}
	if r.Request != nil {
		p("request", "%d denial(s) asked for; alternatives:", len(r.Request.Denials))
		for _, d := range r.Request.Denials {
			for _, a := range d.Alternatives {
				fmt.Fprintf(w, "%-12s   %s: %s\n", "", a.ID, quote.Line(a.Description))
			}
		}
	}
	if d := r.Decision; d != nil {
		if d.Approved {
			p("decision", "approved %s%s", strings.Join(d.IDs, ", "), map[bool]string{true: ", retried", false: ", not retried"}[d.Retried])
		} else {
			p("decision", "not approved: %s", d.Reason)
		}
	}
	for i, a := range r.Attempts {
		p(fmt.Sprintf("attempt %d", i), "%s under %s: exit %d, %d denial(s)", quote.Words(a.Command), plainGrant(a.Grant), a.ExitCode, a.Denials)
	}
}

package main

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wrun-dev/wrun/config"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/run"
	"github.com/wrun-dev/wrun/sandbox"
)

func newExplainCmd(stdout *os.File) *cobra.Command {
	var pf policyFlags
	cmd := &cobra.Command{
		Use:   "explain [--grant SPEC] [--json]",
		Short: "Show the effective policy of a grant here, in plain words or JSON",
		Long: `explain prints what a grant allows in this workspace on this machine: every
path with its rights and why, what is hidden and protected and what attack
that stops, the network and IPC limits, the environment changes, the kernel
features in use, and anything this kernel cannot enforce. Nothing is run and
nothing is created.`,
		Example: `  wrun explain
  wrun explain --grant verify
  wrun explain --grant write --allow-write /tmp/out --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			spec := pf.spec()
			flags := config.Flags{}
			if cmd.Flags().Changed("grant") {
				flags.Grant = pf.grant
			}
			st, err := loadSettings(workdirOf(pf.workdir), flags)
			if err != nil {
				return err
			}
			var cfg run.Config
			cfg.Spec = spec
			st.apply(&cfg, "")
			spec = cfg.Spec
			e, err := run.Explain(spec)
			if err != nil {
				return err
			}
			if pf.json {
				out := explainDoc{explainSchemaID, 1, e.Policy, e.Report, toolFamilies(e.Policy.Grant), e.WouldRun}
				emptyLists(reflect.ValueOf(&out).Elem())
				writeJSON(stdout, out)
				return nil
			}
			writeExplain(stdout, e.Policy, e.Report, e.Refused)
			return nil
		},
	}
	pf.register(cmd)
	return cmd
}

func writeExplain(w io.Writer, p *policy.Policy, rep sandbox.Report, refused bool) {
	fmt.Fprintf(w, "grant:      %s (%s)\n", p.GrantName, p.GrantSpec)
	for _, l := range p.Grant.Describe() {
		fmt.Fprintf(w, "              %s\n", l)
	}
	fmt.Fprintf(w, "workspace:  %s\n", p.Workdir)
	status := "enforced in full"
	switch {
	case refused:
		status = "REFUSED on this kernel (see below; --best-effort runs degraded)"
	case rep.Degraded:
		status = "DEGRADED: not everything below is enforced"
	}
	fmt.Fprintf(w, "sandbox:    %s: %s\n", rep.Summary, status)

	var writable, devices, extraRead []policy.Rule
	wholeFS := false
	for _, r := range p.Rules {
		switch {
		case r.Path == "/":
			wholeFS = true
		case r.Source == "stdio":
		case strings.HasPrefix(r.Path, "/dev/"):
			devices = append(devices, r)
		case r.Access&policy.Write != 0:
			writable = append(writable, r)
		default:
			extraRead = append(extraRead, r)
		}
	}
	if wholeFS {
		section(w, "Readable: the whole file system, except the hidden paths below; inside them, only the paths listed here.")
	} else {
		section(w, "Readable: these places and what lies beneath them, except the hidden paths below; nothing else (--allow-read PATH adds one).")
	}
	if len(extraRead) > 0 {
		tw := table(w)
		for _, r := range extraRead {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", r.Path, r.Access.Words(), r.Why)
		}
		tw.Flush()
	}

	section(w, "Writable:")
	tw := table(w)
	if p.TempDir == "" {
		fmt.Fprintf(tw, "  $TMPDIR\tread, write\ta private temp dir, empty when each run starts and removed after it; its path ($TMPDIR/wrun-UID/WORKSPACE-SLOT) stays the same from run to run of a workspace, so tools that key caches on it (go test) hit them, and two runs at once get different ones\n")
	}
	for _, r := range writable {
		extra := ""
		if r.Create != policy.CreateNone {
			extra = " [created if missing]"
		}
		if r.Entry {
			extra = " [this one name, which wrun makes, replaces and removes for the command where it mediates; nothing else in its directory]"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s%s\n", r.Path, r.Access.Words(), r.Why, extra)
	}
	var devNames []string
	for _, r := range devices {
		devNames = append(devNames, strings.TrimPrefix(r.Path, "/dev/"))
	}
	fmt.Fprintf(tw, "  /dev/{%s}\tdevices\tdiscarding output, random numbers, the terminal, new pseudo-terminals\n", strings.Join(devNames, ","))
	fmt.Fprintf(tw, "  (fds 0-2)\tas opened\twhatever stdin, stdout and stderr are open on stays usable\n")
	tw.Flush()

	section(w, "Hidden (not readable):")
	tw = table(w)
	hidden := append([]policy.Hole(nil), p.Hidden...)
	sort.SliceStable(hidden, func(i, j int) bool { return hidden[i].Path < hidden[j].Path })
	for _, h := range hidden {
		fmt.Fprintf(tw, "  %s\t%s\n", h.Path, h.Why)
	}
	tw.Flush()

	section(w, "Protected (never writable, even inside writable paths):")
	if len(p.Protected) == 0 {
		fmt.Fprintln(w, "  none needed: no writable path holds a git repository, shell start-up file or wrun config")
	}
	tw = table(w)
	for _, pr := range p.Protected {
		state := ""
		switch {
		case pr.Pin:
			state = " [cannot be renamed or replaced]"
		case pr.Create == policy.CreateDir:
			state = " [missing: created empty, then protected]"
		case !pr.Exists:
			state = " [must not appear: removed after the run if created]"
		}
		fmt.Fprintf(tw, "  %s\t%s%s\n", pr.Path, pr.Why, state)
	}
	tw.Flush()
	if rep.Protection != "" {
		fmt.Fprintf(w, "  enforced by: %s\n", rep.Protection)
	}
	if len(p.ReadOnly) > 0 {
		section(w, "Kept read-only (tools write beside them; nothing grants them):")
		tw = table(w)
		for _, ro := range p.ReadOnly {
			fmt.Fprintf(tw, "  %s\t%s\n", ro.Path, ro.Why)
		}
		tw.Flush()
	}
	if len(p.Prepare)+len(p.Finish) > 0 {
		section(w, "Done by wrun itself, outside the sandbox:")
		for _, st := range p.Prepare {
			fmt.Fprintf(w, "  before the run: %s %s: %s\n", st.Kind, st.Dir, st.Why)
		}
		for _, st := range p.Finish {
			fmt.Fprintf(w, "  after the run:  %s %s: %s\n", st.Kind, st.Dir, st.Why)
		}
	}

	section(w, "Network and IPC:")
	if len(rep.NetworkIPC) == 0 {
		fmt.Fprintln(w, "  not enforced: no sandbox is available here")
	}
	for _, l := range rep.NetworkIPC {
		fmt.Fprintf(w, "  %s\n", l)
	}

	writeHosts(w, p.Network)

	if len(rep.Protections) > 0 {
		section(w, "Held on this machine ("+rep.Environment+"), protection by protection:")
		for _, l := range rep.Protections {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}

	writeHold(w, rep)

	writeToolFamilies(w, p.Grant)

	section(w, "Environment:")
	fmt.Fprintln(w, "  rule: an allowlist of exact names; a variable of this environment reaches the child only when its family below names it, or with --keep-env NAME")
	families := make([]string, 0, len(policy.EnvFamilies))
	for _, f := range policy.EnvFamilies {
		families = append(families, f.Name)
	}
	fmt.Fprintf(w, "  families: %s\n", strings.Join(families, ", "))
	fmt.Fprintf(w, "  passed from this environment: %s\n", orNone(p.EnvPassed))
	var set []string
	for _, e := range p.EnvSet {
		set = append(set, e.Name)
	}
	fmt.Fprintf(w, "  set by wrun: %s\n", orNone(dedupe(set)))
	if len(p.EnvUnset) == 0 {
		fmt.Fprintln(w, "  dropped: none")
	}
	// Grouped by reason: most are simply not on the list.
	var whys []string
	byWhy := map[string][]string{}
	for _, e := range p.EnvUnset {
		if _, ok := byWhy[e.Why]; !ok {
			whys = append(whys, e.Why)
		}
		byWhy[e.Why] = append(byWhy[e.Why], e.Name)
	}
	for _, why := range whys {
		fmt.Fprintf(w, "  dropped, %s: %s\n", why, strings.Join(byWhy[why], ", "))
	}

	if len(rep.Gaps) > 0 {
		section(w, "Not enforceable on this kernel:")
		for _, g := range rep.Gaps {
			mark := ""
			if g.Essential {
				mark = " [refuses to run without --best-effort]"
			}
			fmt.Fprintf(w, "  %s: %s; needs %s%s\n", g.What, g.Consequence, g.Need, mark)
		}
	}
	notes := append(append([]string(nil), p.Notes...), rep.Notes...)
	if len(notes) > 0 {
		section(w, "Notes:")
		for _, n := range notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
}

// orNone joins names, or says there are none.
func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func section(w io.Writer, title string) { fmt.Fprintf(w, "\n%s\n", title) }

func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func newDoctorCmd(stdout *os.File) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor [--json]",
		Short: "Show what this kernel and machine can enforce",
		Long: `doctor lists each kernel feature wrun uses (the Landlock ABI and each of
its rights, seccomp, user notification, namespaces), whether this machine has
it, and what that means for the grants wrun can enforce here; then the
hosts --grant verify reaches from the current directory, each with why.`,
		Example: "  wrun doctor\n  wrun doctor --json | jq '.features[] | select(.available == false)'",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			feats := run.Native().Doctor()
			if asJSON {
				writeJSON(stdout, doctorDoc{doctorSchemaID, 1, feats})
				return nil
			}
			writeDoctor(stdout, feats, widthOf(stdout))
			// What --grant verify reaches from here, host by host.
			if e, err := run.Explain(run.Spec{Grant: "verify"}); err == nil {
				if e.Policy.Network.Proxy {
					writeHosts(stdout, e.Policy.Network)
				} else {
					fmt.Fprintln(stdout, "\n--grant verify here: network=on (every host)")
					for _, n := range e.Policy.Notes {
						fmt.Fprintln(stdout, "  "+n)
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the features as JSON")
	return cmd
}

// writeDoctor writes the features as a person reads them at width
// columns: the name, yes or NO and the detail on one line (the detail
// wrapped beneath itself), what it means for wrun wrapped beneath,
// indented.
func writeDoctor(w io.Writer, feats []sandbox.Feature, width int) {
	name := 0
	for _, f := range feats {
		name = max(name, len(f.Name))
	}
	for _, f := range feats {
		mark := "yes"
		if !f.Available {
			mark = "NO"
		}
		head := fmt.Sprintf("%-*s  %-3s  ", name, f.Name, mark)
		for _, l := range wrap(f.Detail, head, len(head), width) {
			fmt.Fprintln(w, l)
		}
		if f.Consequence != "" {
			for _, l := range wrap(f.Consequence, "    ", 4, width) {
				fmt.Fprintln(w, l)
			}
		}
	}
}

// emptyLists replaces every nil slice reachable from v (exported struct
// fields, pointers, slice elements) with an empty one, so that an empty
// list reads [] in JSON, not null. A field left out when empty
// (omitempty) stays out.
func emptyLists(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			emptyLists(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				emptyLists(f)
			}
		}
	case reflect.Slice:
		if v.IsNil() {
			if v.CanSet() && v.Type().Elem().Kind() != reflect.Uint8 {
				v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			}
			return
		}
		for i := range v.Len() {
			emptyLists(v.Index(i))
		}
	}
}

// writeHold says which refusals --on-denial=hold can hold while the
// command runs (what wrun's supervisor sees before the kernel decides)
// and which keep the rerun path.
func writeHold(w io.Writer, rep sandbox.Report) {
	section(w, "Approval while the command runs (--on-denial=hold, docs/harness.md):")
	if !rep.Observer {
		fmt.Fprintln(w, "  not here: wrun does not see the command's calls before the kernel decides them (no seccomp user notification, --observe off, a nested wrun, or macOS's Seatbelt); every refusal keeps the rerun path (--on-denial=retry)")
		return
	}
	fmt.Fprintln(w, "  held, asked on --control-fd, performed by wrun if an alternative inside the ceiling is approved (and every later such call under it):")
	fmt.Fprintln(w, "    with an --allow-write:")
	fmt.Fprintln(w, "      opens that write or truncate, truncate(2), creates (files, directories, symbolic links, nodes), removals, renames and hard links beyond the write scope; then metadata changes beneath the directory too")
	sockets := "sockets and connects"
	if !rep.UnixConfined && rep.SocketsMediated {
		fmt.Fprintln(w, "    a connect to a UNIX socket outside the sandbox (wrun performs those here): performed if that socket's --allow-unix is approved")
		sockets = "other sockets, datagrams and IP connects"
	}
	fmt.Fprintf(w, "  kept for a rerun (reported when the run ends): reads, listings and executions of paths the grant hides or does not make readable (Landlock refuses them without a notification), metadata changes outside an approved directory, %s, and any alternative that is not an --allow-write or --allow-unix (a --grant, --allow-read, --allow-host)\n", sockets)
}

// writeHosts lists the hosts wrun's proxy reaches under network=hosts,
// each with why: an --allow-host entry, or what named it (a remote in
// .git/config, a registry of the user's configuration).
func writeHosts(w io.Writer, n policy.Network) {
	if !n.Proxy {
		return
	}
	section(w, "Hosts wrun's proxy reaches (network=hosts; --allow-host adds, verify,network=on reaches every host):")
	if len(n.Hosts) == 0 {
		fmt.Fprintln(w, "  none")
	}
	tw := table(w)
	for _, h := range n.Hosts {
		why := "--allow-host"
		for _, d := range n.Derived {
			if d.Host == h {
				why = d.Why
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\n", h, why)
	}
	tw.Flush()
}

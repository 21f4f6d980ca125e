package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wrun-dev/wrun/config"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/quote"
	"github.com/wrun-dev/wrun/run"
	"github.com/wrun-dev/wrun/verify"
)

// cacheListSchemaID names the form of wrun cache list --json.
const cacheListSchemaID = "https://wrun.dev/schema/cache-list.v1.json"

const cacheLong = `Sandboxed runs under shell=verify and wider keep private build caches (a
go build cache, cargo's target dir) in wrun's state directory, one per
workspace and authority (the grant, --allow-write and --allow-read paths,
--keep-env names): a run never uses what a run under other authority
wrote. Each is kept within a bound on them all, cache.max_size in your
config (default 2GiB): when a run ends beyond it, the least recently used
go first, never one a live run holds. Beside each is recorded the
workspace and grant it belongs to.`

func newCacheCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache list|rm",
		Short: "List or remove the private build caches of sandboxed runs",
		Long:  cacheLong,
		Example: `  wrun cache list
  wrun cache list --json | jq '.keys[] | select(.in_use == false) | .key'
  wrun cache rm 0fea30be8367c0e4-7d7b9bb8f65b73d2
  wrun cache rm --workspace ~/src/old-project
  wrun cache rm --all`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &usageError{fmt.Sprintf("wrun cache: %q is not a subcommand; say list or rm (wrun cache --help)", args[0])}
			}
			return cacheList(stdout, false)
		},
	}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the caches: key, workspace, grant, size, last use, whether a live run holds it",
		Long:  cacheLong,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, args []string) error { return cacheList(stdout, asJSON) },
	}
	list.Flags().BoolVar(&asJSON, "json", false, "machine-readable output ("+cacheListSchemaID+")")
	var all bool
	var workspaces []string
	rm := &cobra.Command{
		Use:   "rm KEY... | --workspace DIR | --all",
		Short: "Remove caches (never one a live run holds)",
		Long:  cacheLong + "\n\nrm removes the caches named by key, those of a workspace, or all; a cache a live run holds is left and said so (exit 1).",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && len(workspaces) == 0 && !all {
				return &usageError{"wrun cache rm: name a KEY (wrun cache list), --workspace DIR or --all"}
			}
			return cacheRemove(stdout, args, workspaces, all)
		},
	}
	rm.Flags().BoolVar(&all, "all", false, "remove every cache no live run holds")
	rm.Flags().StringArrayVar(&workspaces, "workspace", nil, "remove the caches of the workspace `DIR` (any grant)")
	cmd.AddCommand(list, rm)
	for _, c := range []*cobra.Command{cmd, list, rm} {
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err.Error()} })
	}
	return cmd
}

// cacheReport is wrun cache list --json.
type cacheReport struct {
	Schema    string              `json:"schema"`
	Version   int                 `json:"version"`
	Root      string              `json:"root"`
	MaxSize   int64               `json:"max_size"`
	MaxSource string              `json:"max_size_source"`
	Total     int64               `json:"total"`
	Keys      []verify.StateEntry `json:"keys"`
}

// cacheBound is the bound in force, from the user's config.
func cacheBound() (int64, string) {
	paths, err := wrunPaths()
	if err != nil {
		return config.DefaultCacheMax, config.SourceBuiltin
	}
	eff, err := config.Load(paths, "")
	if err != nil {
		return config.DefaultCacheMax, config.SourceBuiltin
	}
	return eff.CacheMax.V, eff.CacheMax.Source
}

func cacheList(stdout io.Writer, asJSON bool) error {
	root := run.StateDir()
	if root == "" {
		return errors.New("no cache directory for this user (neither XDG_CACHE_HOME nor HOME is set): wrun keeps no private caches")
	}
	keys, err := verify.ListState(root)
	if err != nil {
		return fmt.Errorf("listing %s: %w", filepath.Join(root, "ws"), err)
	}
	max, src := cacheBound()
	rep := cacheReport{Schema: cacheListSchemaID, Version: 1, Root: root, MaxSize: max, MaxSource: src, Keys: keys}
	if rep.Keys == nil {
		rep.Keys = []verify.StateEntry{}
	}
	for _, k := range keys {
		rep.Total += k.Size
	}
	if asJSON {
		writeJSON(stdout, rep)
		return nil
	}
	fmt.Fprintf(stdout, "%d cache(s), %s of at most %s (cache.max_size, %s), in %s; least recently used first\n",
		len(keys), formatSize(rep.Total), formatSize(max), src, filepath.Join(root, "ws"))
	if len(keys) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tSIZE\tLAST USED\tWORKSPACE\tGRANT")
	for _, k := range keys {
		ws, g := k.Workspace, k.Grant
		if !k.Recorded {
			ws, g = "(not recorded: made by an older wrun)", "-"
		} else if pg, err := grant.Parse(g); err == nil {
			g = pg.Compact()
		}
		for _, p := range k.AllowWrite {
			g += " --allow-write " + quote.Word(p)
		}
		for _, p := range k.AllowRead {
			g += " --allow-read " + quote.Word(p)
		}
		used := k.LastUsed.Local().Format(time.DateTime)
		if k.InUse {
			used += " (in use)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.Key, formatSize(k.Size), used, quote.Line(ws), quote.Line(g))
	}
	return tw.Flush()
}

func cacheRemove(stdout io.Writer, keys, workspaces []string, all bool) error {
	root := run.StateDir()
	if root == "" {
		return errors.New("no cache directory for this user: wrun keeps no private caches")
	}
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	if all || len(workspaces) > 0 {
		list, err := verify.ListState(root)
		if err != nil {
			return err
		}
		for i, w := range workspaces {
			if abs, err := filepath.Abs(w); err == nil {
				if real, err := filepath.EvalSymlinks(abs); err == nil {
					abs = real
				}
				workspaces[i] = abs
			}
		}
		matched := false
		for _, k := range list {
			for _, w := range workspaces {
				if k.Recorded && k.Workspace == w {
					want[k.Key], matched = true, true
				}
			}
			if all {
				want[k.Key] = true
			}
		}
		if len(workspaces) > 0 && !matched && len(keys) == 0 {
			fmt.Fprintf(stdout, "no cache of %s\n", quote.Line(strings.Join(workspaces, ", ")))
			return nil
		}
	}
	busy := 0
	for _, k := range sortedNames(want) {
		switch err := verify.RemoveState(root, k); {
		case err == nil:
			fmt.Fprintf(stdout, "removed %s\n", k)
		case errors.Is(err, verify.ErrStateInUse):
			fmt.Fprintf(stdout, "kept %s: %v\n", k, err)
			busy++
		case errors.Is(err, os.ErrNotExist):
			return &usageError{fmt.Sprintf("no cache %s (wrun cache list)", k)}
		default:
			return err
		}
	}
	if busy > 0 {
		return &exitError{1}
	}
	return nil
}

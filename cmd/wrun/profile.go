package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/wrun-dev/wrun/internal/quote"
	"github.com/wrun-dev/wrun/run"
	"github.com/wrun-dev/wrun/sandbox/darwin"
)

// newProfileCmd prints the Seatbelt profile a grant makes, on any system.
func newProfileCmd(stdout *os.File) *cobra.Command {
	var pf policyFlags
	var osName string
	cmd := &cobra.Command{
		Use:   "profile --os darwin [--grant SPEC] [--workdir DIR] [--json]",
		Short: "Print the macOS Seatbelt profile a grant makes here, and its parameters",
		Long: `profile prints, for review, the Seatbelt profile (SBPL) wrun would give
sandbox-exec on macOS for a grant in this workspace, followed by its -D
parameters. Every path is a parameter, never part of the profile text. The
policy is the one explain shows, computed on this machine: on Linux its
paths are this machine's, mapped as macOS would resolve them (/tmp is
/private/tmp). A run adds a private temp dir, which explain and profile
leave out. Nothing is run.`,
		Example: `  wrun profile --os darwin --grant verify
  wrun profile --os darwin --grant write --workdir ~/src/proj --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if osName != "darwin" {
				return &usageError{fmt.Sprintf("--os=%q: only darwin (macOS Seatbelt) has a profile", osName)}
			}
			spec := pf.spec()
			spec.OS = osName
			e, err := run.Explain(spec)
			if err != nil {
				return err
			}
			var canon func(string) string
			if runtime.GOOS == "darwin" {
				canon = darwin.ResolveExisting
			}
			p := darwin.Adapt(e.Policy, darwin.UserCacheDir(os.Getenv("TMPDIR")))
			prof, err := darwin.Generate(darwin.Input{Policy: p, RunID: "RUNID", Canon: canon})
			if err != nil {
				return err
			}
			if pf.json {
				writeJSON(stdout, prof)
				return nil
			}
			fmt.Fprint(stdout, prof.Text)
			fmt.Fprintln(stdout, ";; Parameters (sandbox-exec -D NAME=VALUE):")
			for _, p := range prof.Params {
				fmt.Fprintf(stdout, ";;   -D %s\n", quote.Word(p.Name+"="+p.Value))
			}
			return nil
		},
	}
	pf.register(cmd)
	cmd.Flags().StringVar(&osName, "os", "darwin", "the system whose profile to print (darwin)")
	return cmd
}

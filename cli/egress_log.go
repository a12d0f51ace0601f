package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/egress"
	"github.com/sandboxforge/sbf/internal/termsafe"
)

// egressCommand is `sbf egress log NAME`: the sandbox's egress decisions.
func (a *app) egressCommand() *cobra.Command {
	parent := &cobra.Command{Use: "egress", Short: "What a sandbox's network policy let through or refused"}
	tail, asJSON := 50, false
	log := &cobra.Command{
		Use:               "log NAME",
		Short:             "Show the last decisions of a sandbox's egress proxy (allowed or denied, host, port, bytes)",
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeSandboxes,
		RunE: func(_ *cobra.Command, list []string) error {
			tgt, err := a.target(list)
			if err != nil {
				return a.reportError(err, asJSON)
			}
			entries, err := tgt.EgressLog(tail)
			if err != nil {
				return a.reportError(err, asJSON)
			}
			if asJSON {
				return writeJSON(a.stdout, map[string]any{"sandbox": tgt.Sandbox, "entries": entries})
			}
			if len(entries) == 0 {
				fmt.Fprintf(a.stderr, "%s: no egress decisions logged (no policy, or nothing tried to leave)\n",
					tgt.Sandbox)
			}
			for _, e := range entries {
				fmt.Fprintln(a.stdout, egressLine(e))
			}
			return nil
		},
	}
	log.Flags().IntVarP(&tail, "tail", "n", tail, "how many of the latest decisions to show")
	log.Flags().BoolVar(&asJSON, "json", false, "print the decisions as JSON")
	parent.AddCommand(log)
	return parent
}

// egressLine is one decision on one line, terminal-safe: the method, host
// and reason are what the guest sent.
func egressLine(e egress.Entry) string {
	line := fmt.Sprintf("%s  %-7s  %s %s:%d", e.Time.UTC().Format("2006-01-02T15:04:05Z"), e.Decision,
		e.Method, e.Host, e.Port)
	if e.Decision == "allowed" {
		line += fmt.Sprintf("  ↑%d ↓%d", e.BytesUp, e.BytesDown)
	}
	if e.Reason != "" {
		line += "  (" + e.Reason + ")"
	}
	return termsafe.Line(line)
}

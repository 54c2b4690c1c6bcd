package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/unflake/unflake/rewrite"
)

func newCheckCmd(opts *options) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check [flags] PATTERNS",
		Short: "Report flaky test code without changing anything",
		Long: `Check reports what fix would do for the packages matching PATTERNS
(default "."), one finding per line as file:line:col: rule: message, with
either the fix or the reason there is none. It exits 1 when there is a
finding. With --json it prints an array of finding objects. With --verify it
runs the affected tests as fix --verify does and reports what fix --verify
would keep.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return checkRun(opts, args, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print findings as a JSON array")
	addAnalysisFlags(cmd, opts)
	addVerifyFlags(cmd, opts)
	return cmd
}

func checkRun(opts *options, patterns []string, asJSON bool) error {
	res, _, base, err := opts.analyse(patterns)
	if err != nil {
		return err
	}
	errs := opts.reportErrors(res, base)
	findings := make([]rewrite.Finding, len(res.Findings))
	for i, f := range res.Findings {
		f.File = rel(base, f.File)
		findings[i] = f
	}
	if asJSON {
		if err := writeJSON(opts.stdout, findings); err != nil {
			return err
		}
	} else {
		for _, f := range findings {
			fmt.Fprintln(opts.stdout, formatFinding(f))
		}
	}
	if errs != nil {
		return errs
	}
	if len(findings) > 0 {
		return errFindings
	}
	return nil
}

// formatFinding prints a finding as file:line:col: rule: message, then the
// fix or the reason there is none.
func formatFinding(f rewrite.Finding) string {
	s := fmt.Sprintf("%s:%d:%d: %s: %s", f.File, f.Line, f.Col, f.Rule, f.Message)
	if f.Fixed {
		return s + "; fix: " + f.Fix
	}
	return s + "; not fixed: " + f.Reason
}

func writeJSON(w io.Writer, findings []rewrite.Finding) error {
	if findings == nil {
		findings = []rewrite.Finding{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(findings)
}

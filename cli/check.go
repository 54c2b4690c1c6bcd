package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newCheckCmd(opts *options) *cobra.Command {
	var (
		asJSON bool
		format string
	)
	cmd := &cobra.Command{
		Use:   "check [flags] PATTERNS",
		Short: "Report flaky test code without changing anything",
		Long: `Check reports what fix would do for the packages matching PATTERNS
(default "."), one finding per line as file:line:col: rule: message, with
either the fix or the reason there is none. It exits 1 when there is a
finding. With --verify it runs the affected tests as fix --verify does and
reports what fix --verify would keep.

--format json prints an array of finding objects (--json is the same);
--format sarif a SARIF 2.1.0 log (for code scanning); --format github one
GitHub Actions ::warning command per finding. With --changed-since REV only
the test files changed since the git revision REV are looked at.

Results are cached (in unflake/ under the user's cache directory, or in
$UNFLAKE_CACHE): a run over code, options and environment that have not
changed since an earlier one prints that run's result without loading
anything. UNFLAKE_CACHE=off turns the cache off; --verify and
--changed-since never use it for results, but --verify remembers there the
unproven fixes a test failed after, so that later runs do not try them
again.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON {
				if cmd.Flags().Changed("format") && format != formatJSON {
					return fmt.Errorf("--json conflicts with --format %s", format)
				}
				format = formatJSON
			}
			if err := checkFormat(format); err != nil {
				return err
			}
			return checkRun(opts, args, format)
		},
	}
	addFormatFlag(cmd, &format)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print findings as a JSON array (deprecated: use --format json)")
	addAnalysisFlags(cmd, opts)
	addChangedSinceFlag(cmd, opts)
	addVerifyFlags(cmd, opts)
	addProfileFlags(cmd)
	return cmd
}

func checkRun(opts *options, patterns []string, format string) error {
	selected, err := opts.selectedRules()
	if err != nil {
		return err
	}
	res, _, base, err := opts.analyse(patterns)
	if err != nil {
		return err
	}
	errs := opts.reportErrors(res, base)
	findings := relFindings(res.Findings, base)
	switch format {
	case formatJSON:
		err = writeJSON(opts.stdout, findings)
	case formatSARIF:
		err = writeSARIF(opts.stdout, selected, findings)
	case formatGitHub:
		err = writeGitHub(opts.stdout, findings)
	default:
		err = writeText(opts.stdout, findings)
	}
	if err != nil {
		return err
	}
	if errs != nil {
		return errs
	}
	if len(findings) > 0 {
		return errFindings
	}
	return nil
}

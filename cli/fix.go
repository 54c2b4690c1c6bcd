package cli

import (
	"bytes"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/unflake/unflake/rewrite"
)

func newFixCmd(opts *options) *cobra.Command {
	var diff bool
	cmd := &cobra.Command{
		Use:   "fix [flags] PATTERNS",
		Short: "Rewrite flaky test code in place (or print a diff with --diff)",
		Long: `Fix rewrites the test files of the packages matching PATTERNS (as for
go test; default ".") in place, atomically. With --diff it writes nothing and
prints a unified diff that git apply and patch -p1 accept; it then exits 1
when there is a change.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return fixRun(opts, args, diff)
		},
	}
	cmd.Flags().BoolVar(&diff, "diff", false, "print a unified diff instead of writing files")
	addAnalysisFlags(cmd, opts)
	return cmd
}

func fixRun(opts *options, patterns []string, diff bool) error {
	res, base, err := opts.analyse(patterns)
	if err != nil {
		return err
	}
	errs := opts.reportErrors(res, base)
	if diff {
		var buf bytes.Buffer
		for _, c := range res.Changes {
			if err := rewrite.WriteDiff(&buf, rel(base, c.Path), c.Old, c.New); err != nil {
				return err
			}
		}
		if _, err := opts.stdout.Write(buf.Bytes()); err != nil {
			return err
		}
	} else {
		for _, c := range res.Changes {
			if err := c.Write(); err != nil {
				return fmt.Errorf("writing %s: %v", rel(base, c.Path), err)
			}
		}
	}
	if errs == nil || len(res.Changes) > 0 {
		fmt.Fprintln(opts.stderr, summary(res, diff))
	}
	if errs != nil {
		return errs
	}
	if diff && len(res.Changes) > 0 {
		return errFindings
	}
	return nil
}

// summary is the one-line report of a fix run.
func summary(res *rewrite.Result, diff bool) string {
	fixed, left := 0, 0
	for _, f := range res.Findings {
		if f.Fixed {
			fixed++
		} else {
			left++
		}
	}
	verb := "rewrote"
	if diff {
		verb = "would rewrite"
	}
	s := fmt.Sprintf("unflake: %s %s (%s)", verb, plural(len(res.Changes), "file"), plural(fixed, "fix"))
	if left > 0 {
		s += fmt.Sprintf("; %s not fixed (see unflake check)", plural(left, "finding"))
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if word == "fix" {
		return fmt.Sprintf("%d fixes", n)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

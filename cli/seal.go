package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/unflake/unflake/internal/seal"
)

func newSealCmd(opts *options) *cobra.Command {
	var diff bool
	cmd := &cobra.Command{
		Use:   "seal [flags] PATTERNS",
		Short: "Empty, in TestMain, every environment variable the code reads",
		Long: `Seal finds the environment variables the module's non-test code reads
(os.Getenv, os.LookupEnv, and module functions that pass a parameter
straight to them, called with a constant name) and, for each package
matching PATTERNS (as for go test; default ".") that has tests, writes or
updates a TestMain that sets every variable the package's code can reach
(its own reads and those of the module packages it imports) to "" before
m.Run(). A new TestMain goes in ` + seal.SealFile + `; an existing one
gets the seal block as its first statement, and a later run updates it.

Reads the seal cannot name (a name that is not a constant, os.Environ,
os.ExpandEnv, libraries that bind variables by prefix) are reported on
stderr as "file:line:col: seal: cannot see: why"; they do not fail the
command.

With --diff it writes nothing and prints a unified diff that git apply and
patch -p1 accept, and exits 1 when there is a change: run it in CI to catch
a seal that fell behind the code.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return sealRun(opts, args, diff)
		},
	}
	cmd.Flags().BoolVar(&diff, "diff", false, "print a unified diff instead of writing files")
	cmd.Flags().StringSliceVar(&opts.tags, "tags", nil, "build `tags` to load packages with (comma-separated)")
	return cmd
}

func sealRun(opts *options, patterns []string, diff bool) error {
	base, err := opts.baseDir()
	if err != nil {
		return err
	}
	res, err := seal.Run(&seal.Config{Dir: base, Patterns: patterns, Tags: opts.tags, Env: opts.env})
	if err != nil {
		return err
	}
	for _, u := range res.Unseen {
		fmt.Fprintf(opts.stderr, "%s:%d:%d: seal: cannot see: %s\n", rel(base, u.Pos.Filename), u.Pos.Line, u.Pos.Column, u.Why)
	}
	errs := opts.printErrors(res.Errors, base)
	if err := opts.emit(res.Changes, base, diff); err != nil {
		return err
	}
	verb := "sealed"
	if diff {
		verb = "would seal"
	}
	fmt.Fprintf(opts.stderr, "unflake: %s %s (%s changed)\n", verb, plural(len(res.Packages), "package"), plural(len(res.Changes), "file"))
	if errs != nil {
		return errs
	}
	if diff && len(res.Changes) > 0 {
		return errFindings
	}
	return nil
}

package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/unflake/unflake/rules"
)

func newRulesCmd(opts *options) *cobra.Command {
	return &cobra.Command{
		Use:   "rules [NAME]",
		Short: "List the rules, or print one rule's documentation",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				r := rules.Lookup(args[0])
				if r == nil {
					_, err := rules.Select([]string{args[0]}, nil)
					return err
				}
				fmt.Fprint(opts.stdout, r.Doc)
				return nil
			}
			tw := tabwriter.NewWriter(opts.stdout, 0, 4, 2, ' ', 0)
			for _, r := range rules.All() {
				set := "default"
				if !r.Default {
					set = "opt-in"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, set, r.Short())
			}
			return tw.Flush()
		},
	}
}

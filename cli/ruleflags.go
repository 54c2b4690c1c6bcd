package cli

import (
	"flag"
	"reflect"
	"strings"

	"github.com/spf13/pflag"

	"github.com/unflake/unflake/rule"
)

// addRuleFlags adds every rule's declared options to fs as flags whose
// values go to opts: parsing the command line fills this run's Options and
// leaves the rules' declarations alone, so two runs in one process never
// see each other's options.
func addRuleFlags(fs *pflag.FlagSet, rules []*rule.Rule, opts *rule.Options) {
	for _, r := range rules {
		r.Flags.VisitAll(func(f *flag.Flag) {
			v := &ruleFlag{rule: r, name: f.Name, opts: opts, text: f.DefValue, kind: kindOf(f.Value)}
			_, v.isBool = f.Value.(interface{ IsBoolFlag() bool })
			pf := fs.VarPF(v, f.Name, "", f.Usage)
			if v.isBool {
				pf.NoOptDefVal = "true"
			}
		})
	}
}

// A ruleFlag is one rule option on the command line. Setting it parses the
// text with the option's own type (so its checks apply) into the run's
// Options.
type ruleFlag struct {
	rule   *rule.Rule
	name   string
	opts   *rule.Options
	text   string // the value as given, or the declared default
	kind   string // the type the help shows ("bool", "duration")
	isBool bool
}

func (v *ruleFlag) String() string { return v.text }
func (v *ruleFlag) Type() string   { return v.kind }

func (v *ruleFlag) Set(s string) error {
	if err := v.opts.Set(v.rule, v.name, s); err != nil {
		return err
	}
	v.text = s
	return nil
}

// kindOf names the type of a flag.Value as pflag does for the flag
// package's values: *flag.durationValue is "duration".
func kindOf(v flag.Value) string {
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return strings.TrimSuffix(t.Name(), "Value")
}

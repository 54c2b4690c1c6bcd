package analyzers

import (
	"flag"
	"strings"

	"golang.org/x/tools/go/analysis/unitchecker"

	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rules"
)

// IsTool reports whether args (the command line after the program name)
// are the go command calling unflake as its vet or fix tool
// (go vet -vettool, go fix -fixtool): to describe the executable (-V=full)
// or its flags (-flags), or to analyse the unit a *.cfg file describes.
// No command of unflake's own CLI looks like that.
func IsTool(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "-V=full", "-flags":
		return true
	}
	return strings.HasSuffix(args[len(args)-1], ".cfg") && strings.HasPrefix(args[0], "-") ||
		len(args) == 1 && strings.HasSuffix(args[0], ".cfg")
}

// Main speaks the go command's vet and fix tool protocol (unitchecker) and
// exits. Each rule is an analyzer named after it, with its options as
// -RULE.OPTION flags. The engine runs the rules the -RULE flags select, as
// --rules and --skip do for unflake check: with no -RULE flag, the default
// rules (parallel, which is opt-in, runs only when named: -parallel); with
// -RULE flags set to true, those rules; with some set to false, the
// default rules but those.
func Main() {
	all := rules.All()
	unitchecker.Main(New(all, func() []*rule.Rule { return selectedByFlags(all) }).Rules...)
}

// selectedByFlags returns the rules that unitchecker's -RULE flags select,
// read from the command line it parsed.
func selectedByFlags(all []*rule.Rule) []*rule.Rule {
	var on, off []string
	flag.Visit(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		if !ok || !isRule(all, f.Name) {
			return
		}
		if b, _ := g.Get().(bool); b {
			on = append(on, f.Name)
		} else {
			off = append(off, f.Name)
		}
	})
	sel, err := rules.Select(on, off)
	if err != nil {
		return nil // every rule turned off
	}
	return sel
}

func isRule(all []*rule.Rule, name string) bool {
	for _, r := range all {
		if r.Name == name {
			return true
		}
	}
	return false
}

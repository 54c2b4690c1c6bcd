package rule

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"sort"
)

// Options are the values one run gives to the rules' options. A rule
// declares its options in Rule.Flags (name, default, usage); a run never
// changes that declaration, it carries its own values here, so runs with
// different options can go on in parallel in one process. The zero
// Options means every option has its declared default.
type Options struct {
	set map[optionKey]any // by rule and flag name: flag.Getter.Get of the parsed value
}

type optionKey struct{ rule, flag string }

// Set parses text as the value of r's option name, with the option's own
// flag.Value type (so its checks apply, as on the command line), without
// changing the declaration. The error of an invalid value is the Value's
// own, for the caller to put in context.
func (o *Options) Set(r *Rule, name, text string) error {
	f := r.Flags.Lookup(name)
	if f == nil {
		return fmt.Errorf("rule %s has no option -%s", r.Name, name)
	}
	v, err := parse(f, text)
	if err != nil {
		return err
	}
	if o.set == nil {
		o.set = map[optionKey]any{}
	}
	o.set[optionKey{r.Name, name}] = v
	return nil
}

// Explicit returns the values the run sets explicitly, as
// "rule.option=value", sorted. A rule may read another rule's option
// (waitfor bounds its polls by attemptloop's poll-timeout), so a result
// keyed on a run's options keys on these, whichever rules run.
func (o Options) Explicit() []string {
	var out []string
	for k, v := range o.set {
		out = append(out, fmt.Sprintf("%s.%s=%v", k.rule, k.flag, v))
	}
	sort.Strings(out)
	return out
}

// SetFlags sets, for each option of r that fs has seen on a command line
// (fs.Visit), the value fs parsed: a go/analysis driver parses an
// analyzer's Flags, and the rule's run reads them through Options.
func (o *Options) SetFlags(r *Rule, fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err == nil && r.Flags.Lookup(f.Name) != nil {
			if e := o.Set(r, f.Name, f.Value.String()); e != nil {
				err = fmt.Errorf("invalid value %q for -%s: %v", f.Value.String(), f.Name, e)
			}
		}
	})
	return err
}

// NewFlags returns a flag set that declares r's options again, with fresh
// values at their defaults: a driver that parses options itself (into a
// go/analysis Analyzer's Flags) parses into it, leaving r.Flags alone, and
// reads what it parsed with Options.SetFlags.
func (r *Rule) NewFlags() (fs flag.FlagSet) {
	fs.Init(r.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // a rule never prints: Parse returns the error
	r.Flags.VisitAll(func(f *flag.Flag) {
		v, err := freshValue(f)
		if err != nil || v.Set(f.DefValue) != nil {
			return // Validate rejects such an option
		}
		fs.Var(v, f.Name, f.Usage)
	})
	return fs
}

// For returns the options of rule r in this run.
func (o Options) For(r *Rule) Values { return Values{rule: r, opts: o} }

// Values are the options of one rule in one run: the run's value of an
// option, or its declared default. A Prefilter reads them through the
// rule's Option values (Option.Of).
type Values struct {
	rule *Rule
	opts Options
}

// value returns the option's value: the run's, else the declared default;
// nil when the rule does not declare it (or there is no rule).
func (v Values) value(name string) any {
	if v.rule == nil {
		return nil
	}
	if x, ok := v.opts.set[optionKey{v.rule.Name, name}]; ok {
		return x
	}
	f := v.rule.Flags.Lookup(name)
	if f == nil {
		return nil
	}
	x, err := parse(f, f.DefValue)
	if err != nil {
		return nil
	}
	return x
}

// Get returns the value of option name as its flag.Getter gives it, or
// nil when the rule does not declare it: for drivers, which handle every
// option alike (a rule reads its own through its Option values).
func (v Values) Get(name string) any { return v.value(name) }

// parse parses text with a fresh value of the type of f's Value, leaving
// f itself alone, and returns what the fresh value's Get returns.
func parse(f *flag.Flag, text string) (any, error) {
	fresh, err := freshValue(f)
	if err != nil {
		return nil, err
	}
	if err := fresh.Set(text); err != nil {
		return nil, err
	}
	return fresh.(flag.Getter).Get(), nil
}

// freshValue returns a new zero value of the type of f's Value. An option's
// Value must be a pointer implementing flag.Getter (the flag package's own
// values are): Validate checks it.
func freshValue(f *flag.Flag) (flag.Value, error) {
	t := reflect.TypeOf(f.Value)
	if t == nil || t.Kind() != reflect.Pointer {
		return nil, fmt.Errorf("its flag.Value %v is not a pointer", t)
	}
	v, ok := reflect.New(t.Elem()).Interface().(flag.Getter)
	if !ok {
		return nil, fmt.Errorf("its flag.Value %v is not a flag.Getter", t)
	}
	return v, nil
}

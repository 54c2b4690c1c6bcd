package rule

import (
	"flag"
	"fmt"
	"time"
)

// An Option is an option a rule declares once, as a package-level value,
// and reads through that value (pollTimeout.Get(pass)), so a misspelt
// option is a compile error rather than a zero value. The rule lists it
// in its flag set (Flags), which names the rule that owns it; another rule
// may read it too (waitfor bounds its polls by attemptloop's
// poll-timeout) by importing the value.
type Option[T any] struct {
	owner    string // the rule whose Flags declare it
	name     string
	def      T
	usage    string
	newValue func(def T) flag.Value // nil: the flag package's own value for T
}

// BoolOption declares a boolean option: its name on the command line,
// its default and its usage.
func BoolOption(name string, def bool, usage string) *Option[bool] {
	return &Option[bool]{name: name, def: def, usage: usage}
}

// DurationOption declares a duration option, as BoolOption.
func DurationOption(name string, def time.Duration, usage string) *Option[time.Duration] {
	return &Option[time.Duration]{name: name, def: def, usage: usage}
}

// IntOption declares an integer option, as BoolOption.
func IntOption(name string, def int, usage string) *Option[int] {
	return &Option[int]{name: name, def: def, usage: usage}
}

// StringOption declares a string option, as BoolOption.
func StringOption(name string, def string, usage string) *Option[string] {
	return &Option[string]{name: name, def: def, usage: usage}
}

// VarOption declares an option parsed by a flag.Value of the rule's own,
// which newValue returns holding def: a pointer implementing flag.Getter
// whose Get returns a T (a duration that must be positive).
func VarOption[T any](name string, def T, usage string, newValue func(def T) flag.Value) *Option[T] {
	return &Option[T]{name: name, def: def, usage: usage, newValue: newValue}
}

// Name returns the option's name on the command line.
func (o *Option[T]) Name() string { return o.name }

// Get returns the run's value of the option in pass, or its default when
// the run does not set it.
func (o *Option[T]) Get(pass *Pass) T { return o.In(pass.Options) }

// Of returns the option's value in the values a Prefilter is given: the
// run's, or its default.
func (o *Option[T]) Of(v Values) T { return o.In(v.opts) }

// In returns the option's value in the run's options, or its default.
func (o *Option[T]) In(opts Options) T {
	if x, ok := opts.set[optionKey{o.owner, o.name}].(T); ok {
		return x
	}
	return o.def
}

func (o *Option[T]) declare(rule string, fs *flag.FlagSet) {
	if o.owner != "" && o.owner != rule {
		panic(fmt.Sprintf("rule %s: option -%s is rule %s's", rule, o.name, o.owner))
	}
	o.owner = rule
	switch def := any(o.def).(type) {
	case bool:
		if o.newValue == nil {
			fs.Bool(o.name, def, o.usage)
			return
		}
	case time.Duration:
		if o.newValue == nil {
			fs.Duration(o.name, def, o.usage)
			return
		}
	case int:
		if o.newValue == nil {
			fs.Int(o.name, def, o.usage)
			return
		}
	case string:
		if o.newValue == nil {
			fs.String(o.name, def, o.usage)
			return
		}
	}
	if o.newValue == nil {
		panic(fmt.Sprintf("rule %s: option -%s has no flag.Value", rule, o.name))
	}
	fs.Var(o.newValue(o.def), o.name, o.usage)
}

// A Declared is an option a rule's Flags declare: an *Option of any type.
type Declared interface {
	declare(rule string, fs *flag.FlagSet)
}

// Flags returns the flag set of rule's options (Rule.Flags), in the order
// given, and makes rule their owner: their values in a run are rule's.
// An option belongs to one rule; declaring it in another panics at
// start-up.
func Flags(rule string, opts ...Declared) (fs flag.FlagSet) {
	fs.Init(rule, flag.ContinueOnError)
	for _, o := range opts {
		o.declare(rule, &fs)
	}
	return fs
}

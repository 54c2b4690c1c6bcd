package rule_test

import (
	"flag"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/unflake/unflake/rule"
)

// options are one option of each kind the rules use.
type options struct {
	fast, loud *rule.Option[bool]
	budget     *rule.Option[time.Duration]
	count      *rule.Option[int]
	name       *rule.Option[string]
}

// optionRule declares the options for a rule named name.
func optionRule(name string) (*rule.Rule, options) {
	r := newRule(name, strings.ReplaceAll(goodDoc, "# good:", "# "+name+":"))
	o := options{
		fast:   rule.BoolOption("fast", false, ""),
		loud:   rule.BoolOption("loud", true, ""),
		budget: rule.DurationOption("budget", 10*time.Second, ""),
		count:  rule.IntOption("count", 3, ""),
		name:   rule.StringOption("name", "x", ""),
	}
	r.Flags = rule.Flags(name, o.fast, o.loud, o.budget, o.count, o.name)
	return r, o
}

func TestOptionsDefaults(t *testing.T) {
	r, o := optionRule("good")
	for _, p := range []*rule.Pass{{Rule: r}, {Rule: r, Options: rule.Options{}}} {
		if o.fast.Get(p) || !o.loud.Get(p) || o.budget.Get(p) != 10*time.Second {
			t.Errorf("zero Options: fast=%v loud=%v budget=%v, want the declared defaults", o.fast.Get(p), o.loud.Get(p), o.budget.Get(p))
		}
		v := p.Options.For(r)
		if o.count.Of(v) != 3 || o.name.Of(v) != "x" {
			t.Errorf("zero Options: count=%d name=%q, want the declared defaults", o.count.Of(v), o.name.Of(v))
		}
	}
	// A driver reads an undeclared option as nil.
	if (rule.Options{}).For(r).Get("missing") != nil {
		t.Error("an undeclared option is not nil")
	}
}

// An option belongs to the rule whose Flags declare it.
func TestOptionOwner(t *testing.T) {
	_, o := optionRule("good")
	defer func() {
		if recover() == nil {
			t.Error("another rule declared good's option")
		}
	}()
	rule.Flags("other", o.fast)
}

func TestOptionsSet(t *testing.T) {
	r, o := optionRule("good")
	var opts rule.Options
	for name, text := range map[string]string{"fast": "true", "loud": "false", "budget": "1500ms", "count": "7", "name": "y"} {
		if err := opts.Set(r, name, text); err != nil {
			t.Fatalf("Set(%s, %s): %v", name, text, err)
		}
	}
	if !o.fast.In(opts) || o.loud.In(opts) || o.budget.In(opts) != 1500*time.Millisecond || o.count.In(opts) != 7 || o.name.In(opts) != "y" {
		t.Errorf("after Set: fast=%v loud=%v budget=%v count=%d name=%q", o.fast.In(opts), o.loud.In(opts), o.budget.In(opts), o.count.In(opts), o.name.In(opts))
	}
	// The declaration and other runs are untouched.
	r.Flags.VisitAll(func(f *flag.Flag) {
		if f.Value.String() != f.DefValue {
			t.Errorf("declaration of -%s changed to %s", f.Name, f.Value)
		}
	})
	if o.fast.In(rule.Options{}) {
		t.Error("another run sees this run's value")
	}
	// Another rule with the same option name has its own value.
	other, oo := optionRule("other")
	if oo.fast.In(opts) {
		t.Error("a rule sees another rule's option")
	}
	_ = other
	// Invalid values and unknown options are errors; the value stays.
	for name, text := range map[string]string{"fast": "maybe", "budget": "soon", "count": "x", "nope": "1"} {
		if err := opts.Set(r, name, text); err == nil {
			t.Errorf("Set(%s, %q) is accepted", name, text)
		}
	}
	if !o.fast.In(opts) || o.budget.In(opts) != 1500*time.Millisecond {
		t.Error("an invalid value changed the option")
	}
}

// TestOptionsSetFlags is what a go/analysis driver does: it parses an
// analyzer's flags, and the run reads those it set.
func TestOptionsSetFlags(t *testing.T) {
	r, o := optionRule("good")
	fs := r.NewFlags()
	if err := fs.Parse([]string{"-fast", "-budget=2s"}); err != nil {
		t.Fatal(err)
	}
	var opts rule.Options
	if err := opts.SetFlags(r, &fs); err != nil {
		t.Fatal(err)
	}
	if !o.fast.In(opts) || !o.loud.In(opts) || o.budget.In(opts) != 2*time.Second {
		t.Errorf("fast=%v loud=%v budget=%v, want true true 2s", o.fast.In(opts), o.loud.In(opts), o.budget.In(opts))
	}
	// The new flag set declares the same options, and parsing it left
	// the declaration alone.
	r.Flags.VisitAll(func(f *flag.Flag) {
		g := fs.Lookup(f.Name)
		if g == nil || g.DefValue != f.DefValue || g.Usage != f.Usage {
			t.Errorf("NewFlags: -%s is %+v, declared %+v", f.Name, g, f)
		}
		if f.Value.String() != f.DefValue {
			t.Errorf("declaration of -%s changed to %s", f.Name, f.Value)
		}
	})
	if err := fs.Parse([]string{"-budget=0x"}); err == nil {
		t.Error("NewFlags: an invalid duration is accepted")
	}
}

// TestOptionsParallel runs passes with different options at once (go test
// -race catches a shared value).
func TestOptionsParallel(t *testing.T) {
	r, o := optionRule("good")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var opts rule.Options
			want := time.Duration(i+1) * time.Second
			if err := opts.Set(r, "budget", want.String()); err != nil {
				t.Error(err)
				return
			}
			p := &rule.Pass{Rule: r, Options: opts}
			if got := o.budget.Get(p); got != want {
				t.Errorf("run %d: budget %v, want %v", i, got, want)
			}
		}()
	}
	wg.Wait()
}

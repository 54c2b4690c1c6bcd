package rule_test

import (
	"flag"
	"sync"
	"testing"
	"time"

	"github.com/unflake/unflake/rule"
)

// optionRule declares one option of each kind the rules use.
func optionRule() *rule.Rule {
	r := newRule("good", goodDoc)
	r.Flags.Bool("fast", false, "")
	r.Flags.Bool("loud", true, "")
	r.Flags.Duration("budget", 10*time.Second, "")
	r.Flags.Int("count", 3, "")
	r.Flags.String("name", "x", "")
	return r
}

func TestOptionsDefaults(t *testing.T) {
	r := optionRule()
	for _, p := range []*rule.Pass{{Rule: r}, {Rule: r, Options: rule.Options{}}} {
		if p.Bool("fast") || !p.Bool("loud") || p.Duration("budget") != 10*time.Second {
			t.Errorf("zero Options: fast=%v loud=%v budget=%v, want the declared defaults", p.Bool("fast"), p.Bool("loud"), p.Duration("budget"))
		}
		v := p.Values()
		if v.Int("count") != 3 || v.String("name") != "x" {
			t.Errorf("zero Options: count=%d name=%q, want the declared defaults", v.Int("count"), v.String("name"))
		}
	}
	// Undeclared options, and a pass without a rule, read as zero.
	if p := (&rule.Pass{Rule: r}); p.Bool("missing") || p.Duration("missing") != 0 {
		t.Error("an undeclared option is not zero")
	}
	if p := (&rule.Pass{}); p.Bool("fast") || p.Values().String("name") != "" {
		t.Error("a pass without a rule has options")
	}
}

func TestOptionsSet(t *testing.T) {
	r := optionRule()
	var opts rule.Options
	for name, text := range map[string]string{"fast": "true", "loud": "false", "budget": "1500ms", "count": "7", "name": "y"} {
		if err := opts.Set(r, name, text); err != nil {
			t.Fatalf("Set(%s, %s): %v", name, text, err)
		}
	}
	v := opts.For(r)
	if !v.Bool("fast") || v.Bool("loud") || v.Duration("budget") != 1500*time.Millisecond || v.Int("count") != 7 || v.String("name") != "y" {
		t.Errorf("after Set: fast=%v loud=%v budget=%v count=%d name=%q", v.Bool("fast"), v.Bool("loud"), v.Duration("budget"), v.Int("count"), v.String("name"))
	}
	// The declaration and other runs are untouched.
	r.Flags.VisitAll(func(f *flag.Flag) {
		if f.Value.String() != f.DefValue {
			t.Errorf("declaration of -%s changed to %s", f.Name, f.Value)
		}
	})
	if (rule.Options{}).For(r).Bool("fast") {
		t.Error("another run sees this run's value")
	}
	// Another rule with the same option name has its own value.
	other := optionRule()
	other.Name = "other"
	if opts.For(other).Bool("fast") {
		t.Error("a rule sees another rule's option")
	}
	// Invalid values and unknown options are errors; the value stays.
	for name, text := range map[string]string{"fast": "maybe", "budget": "soon", "count": "x", "nope": "1"} {
		if err := opts.Set(r, name, text); err == nil {
			t.Errorf("Set(%s, %q) is accepted", name, text)
		}
	}
	if !v.Bool("fast") || v.Duration("budget") != 1500*time.Millisecond {
		t.Error("an invalid value changed the option")
	}
}

// TestOptionsSetFlags is what a go/analysis driver does: it parses an
// analyzer's flags, and the run reads those it set.
func TestOptionsSetFlags(t *testing.T) {
	r := optionRule()
	fs := r.NewFlags()
	if err := fs.Parse([]string{"-fast", "-budget=2s"}); err != nil {
		t.Fatal(err)
	}
	var opts rule.Options
	if err := opts.SetFlags(r, &fs); err != nil {
		t.Fatal(err)
	}
	v := opts.For(r)
	if !v.Bool("fast") || !v.Bool("loud") || v.Duration("budget") != 2*time.Second {
		t.Errorf("fast=%v loud=%v budget=%v, want true true 2s", v.Bool("fast"), v.Bool("loud"), v.Duration("budget"))
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
	r := optionRule()
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
			if got := p.Duration("budget"); got != want {
				t.Errorf("run %d: budget %v, want %v", i, got, want)
			}
		}()
	}
	wg.Wait()
}

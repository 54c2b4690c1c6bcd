// Package rule defines the interface between unflake's engine and its rules.
//
// A rule sees a package the way a go/analysis pass does (file set, syntax,
// types, go version), reports diagnostics, and may attach a fix that edits
// the decorated (dst) form of the file. A rule never prints, writes files or
// reads command-line flags: it declares its options once as typed Option
// values (listed in Flags) and reads the run's values through them; the
// engine decides which fixes are applied, re-type-checks the result and
// writes it.
//
// The API is a small graph: a Rule lists the per-package Analysis values
// it reads (Requires), computed once per package content and handed over
// in Pass.ResultOf; the rules that must run before it (After); and the
// rules whose fixes its fixes may need under verification (Companions).
// Effect summaries of callees come through Pass.Effects, in the types of
// package rule/effect. A Fix says what to change; an unproven one carries
// one Hypothesis, which only verification reads. Run and Fix.Apply return
// an error for a broken invariant, which the engine reports as a finding
// naming the rule; a rule never panics.
package rule

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"go/version"
	"regexp"
	"strings"
	"time"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/rulehook"
	"github.com/unflake/unflake/rule/effect"
)

// A Rule finds one kind of slow or flaky test code and, where it can prove
// the rewrite safe, fixes it.
type Rule struct {
	// Name is the rule's identifier on the command line: lower case letters.
	Name string

	// Doc is the rule's documentation in Markdown. It starts with a
	// "# name: what it does" title (the line `unflake rules` lists), then
	// a one-paragraph summary, and has "## Before" and
	// "## After" sections with a Go example each. It feeds `unflake rules`,
	// docs/rules.md and the help text, so it lives once, beside the rule.
	Doc string

	// Default reports whether the rule runs when --rules is not given.
	Default bool

	// Flags declares the rule's options: name, default and usage (the
	// command line shows them; a go/analysis Analyzer's Flags copy them).
	// Build it with Flags(name, options...) from the rule's Option
	// values, through which Run and Prefilter read them. It is a
	// declaration, never changed by a run: each run carries its own
	// values (Options). Each Value must be a pointer implementing
	// flag.Getter, as the flag package's own values are, so a run can
	// parse into a fresh one.
	Flags flag.FlagSet

	// Prefilter reports whether a test file whose source is src may hold
	// something Run would report, with the rule's options of the run. It
	// must be cheap (a byte search) and it must never return false for a
	// file Run would report on: the engine skips type-checking packages
	// none of whose test files pass it.
	Prefilter func(src []byte, opts Values) bool

	// Run inspects pass.Files and calls pass.Report for each finding. An
	// error (a broken invariant of the rule, never a property of the
	// code) becomes a finding on the package naming the rule, in place of
	// the rule's diagnostics there; a rule never panics.
	Run func(pass *Pass) error

	// Requires lists the per-package analyses Run reads through
	// Pass.ResultOf. The engine computes each once per package content
	// and hands the same result to every rule that requires it.
	Requires []*Analysis

	// Companions names rules whose fixes can make this rule's fixes pass
	// (leak's closed values and joined goroutines let sleep's bubbles
	// end). When verification takes back this rule's fix in a test and a
	// companion did not run, the engine tries that test again with the
	// companion's fixes too, and keeps them together only if it passes.
	Companions []string

	// After names rules that must run before this one when both run,
	// because this rule reads what their fixes leave (wallclock keeps the
	// assertions of a test sleep's fix wrapped in a bubble). The registry
	// lists rules in the order they run; Validate checks it against After.
	After []string
}

// An Analysis is a per-package analysis several rules share (the
// package's function declarations, which function literals are handed to
// the code under test, which tests run in a synctest bubble), as
// go/analysis' Requires and ResultOf share an analyzer's result. Rules
// list the analyses they read in Rule.Requires; the engine runs each
// once per package content, after the analyses it requires, and hands
// its result to every rule that requires it. An analysis only reads the
// package: its Pass has no Rule, Report, Dst or Require, and its result
// must not depend on which rule asks first.
type Analysis struct {
	// Name identifies the analysis in errors: lower case letters.
	Name string

	// Doc says what the result is, in one sentence.
	Doc string

	// Requires lists the analyses Run reads through Pass.ResultOf.
	Requires []*Analysis

	// Run computes the result for pass's package.
	Run func(pass *Pass) (any, error)
}

// A Pass is one run of a rule on one package.
type Pass struct {
	Rule      *Rule
	Fset      *token.FileSet
	Files     []*ast.File // the package's test files that unflake may rewrite
	AllFiles  []*ast.File // every file of the package, for analysis only
	Pkg       *types.Package
	TypesInfo *types.Info

	// Options are the run's values of the rules' options; the zero value
	// means every option has its default. A rule reads them through its
	// Option values (Option.Get).
	Options Options

	// GoVersion is the go version of the package's module ("go1.22"),
	// or "" when unknown. A fix must not use an API or language feature
	// newer than FileVersion of the file it edits.
	GoVersion string

	// ResultOf holds the results of the analyses the rule requires
	// (Rule.Requires) and of those they require, for this package
	// content. Packages that export an Analysis give a typed accessor.
	ResultOf map[*Analysis]any

	// Report records a diagnostic.
	Report func(Diagnostic)

	// Dst returns the decorated node for n, a node of one of Files, so a
	// fix can edit it. The file is decorated on first use.
	Dst func(n ast.Node) dst.Node

	// Require reports whether the packages of module modPath (such as
	// "golang.org/x/sync") can be imported by the package's test files:
	// err is nil when its module already requires modPath (missing is
	// false), or when the engine can add the requirement to go.mod
	// without raising the module's go version (missing is true);
	// otherwise err says why not, for the finding. A fix that imports
	// such a package lists modPath in Fix.Requires.
	Require func(modPath string) (missing bool, err error)

	// Effects summarises functions (the package's own, the module's and
	// its dependencies'), so a rule can decide from what a callee does
	// instead of giving up on code it cannot see. Never nil: a driver
	// without summaries sets effect.None.
	Effects effect.Source

	// Measured returns the measured elapsed time of test, a top-level
	// test of the package or a subtest ("TestX/sub"), from go test -json
	// (fix --from-json, --measure); ok is false when it was not measured.
	// Never nil. A rule compares what a fix saves with it: a test that
	// waits a second on the code's own timer is worth a bubble even when
	// its own sleeps are short.
	Measured func(test string) (elapsed time.Duration, ok bool)

	// Excluded reports whether a file of the package's directory that
	// the build leaves out (another GOOS, a build tag) declares name at
	// package level: a fix that declares a new name must avoid these as
	// well as the package's scope, or the package stops building where
	// those files are in. Nil means none are known.
	Excluded func(name string) bool

	// granted, if set, is called with min each time FileUsesGo allows a
	// feature of go version min: the engine sets it through
	// internal/rulehook to learn the lowest version the fixes need when
	// it analyses a module as if its go directive were raised
	// (rewrite.Config.GoAs).
	granted func(min string)
}

func init() {
	rulehook.SetGranted = func(p any, granted func(min string)) { p.(*Pass).granted = granted }
}

// FileVersion returns the go version that governs f ("go1.22"), taking
// //go:build constraints into account, or "" when unknown.
func (p *Pass) FileVersion(f *ast.File) string {
	if v := p.TypesInfo.FileVersions[f]; v != "" {
		return v
	}
	return p.GoVersion
}

// FileUsesGo reports whether f may use language and library features of
// go version min ("go1.22"). This is the one version gate of every rule
// and the engine: an unknown or invalid file version counts as the oldest
// version the tool supports, so a feature gated on it is not used.
func (p *Pass) FileUsesGo(f *ast.File, min string) bool {
	v := p.FileVersion(f)
	ok := version.IsValid(v) && version.Compare(version.Lang(v), version.Lang(min)) >= 0
	if ok && p.granted != nil {
		p.granted(min)
	}
	return ok
}

// A Diagnostic is a finding at a position, with a fix or the reason there
// is none.
type Diagnostic struct {
	Pos, End token.Pos

	// Message says what is wrong, in lower case, without a trailing period.
	Message string

	// Fix rewrites the code, or is nil when the rule cannot prove a
	// rewrite safe; then NotFixed says why.
	Fix      *Fix
	NotFixed string

	// Blockers, when set, lists everything that stands between the site
	// and a proven fix, in order, each reason once: the first is NotFixed
	// (or, for an unproven fix, its Hypothesis's Reason), the others are
	// what would still hold the fix back once that one is gone (a go
	// version, then the real network, then a goroutine the analysis
	// cannot show ends). The finding's reason then says them all.
	Blockers []string

	// Saving is the static estimate of test time the fix saves (constant
	// durations only), or zero.
	Saving time.Duration

	// Resolved, when not empty, says why the code at Pos is fine as it
	// now is, where the rule would report it otherwise (an assertion on
	// the virtual clock of a bubble another rule's fix made). It is not a
	// finding: it tells the engine that the rule's finding there, made
	// before that fix, was fixed by it rather than lost. Message may be
	// empty.
	Resolved string
}

// A Fix edits decorated nodes obtained from Pass.Dst.
type Fix struct {
	// Message says what the fix does, as a lower-case verb phrase.
	Message string

	// Apply performs the edit. It is called at most once, only if the
	// engine decides to apply the fix (it may not, for example when the
	// site carries an //unflake:ignore directive). Any file of Files may be
	// edited through nodes from Pass.Dst. An error (a broken invariant,
	// such as a statement not in its parent's list) makes the fix an
	// internal error naming the rule, never applied; a fix never panics.
	Apply func() error

	// Deletes lists the nodes whose code the fix removes; comments inside
	// them may disappear from the output. Any other lost comment is an
	// internal error.
	Deletes []ast.Node

	// Changes says what the fix changes in the test's meaning (the
	// clock, a wait's budget, order, paths, a synchronisation point,
	// ownership): at least one, each with the hazards of its kind the
	// rule checked. The engine refuses a fix without one; verification
	// runs every fix and aims its mutants at these kinds.
	Changes []Change

	// Requires lists the modules the fix's new imports need (see
	// Pass.Require); the engine adds those the module's go.mod lacks
	// when it applies the fix.
	Requires []string

	// Hypothesis, when not nil, makes the fix unproven: the rule could
	// not prove it safe statically, and says what only running the tests
	// can tell. Such a fix is applied only under `fix --verify`, which
	// reads the hypothesis and keeps the fix only if the affected tests
	// pass every time after it; otherwise the finding is reported as not
	// fixed with Hypothesis.Reason. Nil means the fix is proven.
	Hypothesis *Hypothesis
}

// Unproven returns why the fix is unproven (its Hypothesis's Reason), or
// "" for a proven fix.
func (f *Fix) Unproven() string {
	if f == nil || f.Hypothesis == nil {
		return ""
	}
	return f.Hypothesis.Reason
}

// Unproven returns the hypothesis of a fix the rule could not prove safe
// for reason, or nil (a proven fix) when reason is empty.
func Unproven(reason string) *Hypothesis {
	if reason == "" {
		return nil
	}
	return &Hypothesis{Reason: reason}
}

// A Hypothesis is what verification needs to try an unproven fix: why it
// is unproven, the further forms to try, and the probe that must fail
// (or, with MustPass, pass) for the fix to be tried at all.
type Hypothesis struct {
	// Reason says why the rule could not prove the fix safe statically
	// ("the test starts goroutines the analysis cannot follow"), and is
	// the finding's reason when the fix is not kept.
	Reason string

	// Alternatives are further forms of the fix, in the order to try
	// them after this one (a wait for 1 goroutine, then 2, ...). Only
	// verification picks one (through Config.Decide): it tries the next
	// form when a test fails after the one before, and keeps the first
	// that passes every run. Each is a complete unproven Fix whose
	// Hypothesis has no Alternatives of its own; plain fix never applies
	// any of them.
	Alternatives []*Fix

	// Probe, when set, is a form of the code that must make the affected
	// tests fail for the fix to be tried at all: the wait the fix
	// replaces removed, with nothing in its place. A fix that polls for
	// the state the test's checks assert is right only when those checks
	// wait for a change; if they pass without any wait, the wait may give
	// an unwanted event the time to happen, and a poll would pass at
	// once. Verification applies the probes first, instead of the fixes,
	// and runs the tests as after a fix: a fix whose probe fails a test
	// in some run is then tried as usual; one whose probe passes every
	// run is held back with ProbeHolds as the reason. Plain fix never
	// applies a probe. The probe is a complete Fix without a Hypothesis.
	Probe *Fix

	// ProbeHolds is the finding's reason when the tests pass every run
	// with Probe ("the checks hold without waiting: ...").
	ProbeHolds string

	// ProbeChecks, when set, are the statements whose failure is the
	// evidence the probe looks for (the checks after the removed wait):
	// a test that fails with the probe elsewhere (a later wait now too
	// short) shows nothing about them. The probe must keep the lines of
	// the file where they are.
	ProbeChecks []ast.Node

	// MustPass turns the probe round: Probe is then a form the tests must
	// pass every run for the fix to be tried at all. The children of a
	// chain run one after another in the reverse order are such a form:
	// a cheap, deterministic check that their order does not matter,
	// where the fix itself (the children run together) would fail only
	// now and then. A test that fails with it holds the fix back, with
	// ProbeFails and the failure as the reason. The fix may be proven
	// (Reason ""): plain fix applies it, verification checks it first.
	MustPass bool

	// ProbeFails is, with MustPass, the finding's reason when a test
	// fails with Probe ("the children depend on their order").
	ProbeFails string
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

// Validate checks a list of rules, the registry in the order its rules
// run, at start-up: names are well formed and unique, docs have a summary
// and a before/after example, functions are set, flag names do not
// collide, required analyses are well formed, companions are other rules,
// and each rule comes after the rules it runs After.
func Validate(rules []*Rule) error {
	names := map[string]bool{}
	flags := map[string]string{}
	for _, r := range rules {
		if !nameRE.MatchString(r.Name) {
			return fmt.Errorf("rule %q: invalid name", r.Name)
		}
		if names[r.Name] {
			return fmt.Errorf("rule %q: duplicate name", r.Name)
		}
		names[r.Name] = true
		if r.Run == nil || r.Prefilter == nil {
			return fmt.Errorf("rule %q: Run and Prefilter must be set", r.Name)
		}
		if !strings.HasPrefix(r.Doc, "# "+r.Name+": ") || r.Short() == "" {
			return fmt.Errorf("rule %q: doc must start with %q", r.Name, "# "+r.Name+": what it does")
		}
		if r.Summary() == "" {
			return fmt.Errorf("rule %q: doc has no summary paragraph", r.Name)
		}
		for _, sec := range []string{"Before", "After"} {
			if r.Section(sec) == "" {
				return fmt.Errorf("rule %q: doc has no %q section", r.Name, "## "+sec)
			}
		}
		var err error
		r.Flags.VisitAll(func(f *flag.Flag) {
			if other, ok := flags[f.Name]; ok && err == nil {
				err = fmt.Errorf("rule %q: flag -%s already defined by rule %q", r.Name, f.Name, other)
			}
			flags[f.Name] = r.Name
			if _, perr := parse(f, f.DefValue); perr != nil && err == nil {
				err = fmt.Errorf("rule %q: option -%s: default %q: %v", r.Name, f.Name, f.DefValue, perr)
			}
		})
		if err != nil {
			return err
		}
	}
	for _, r := range rules {
		if err := validateAnalyses(r.Requires, map[*Analysis]bool{}); err != nil {
			return fmt.Errorf("rule %q: %v", r.Name, err)
		}
	}
	index := map[string]int{}
	for i, r := range rules {
		index[r.Name] = i
	}
	for i, r := range rules {
		for _, c := range r.Companions {
			if !names[c] || c == r.Name {
				return fmt.Errorf("rule %q: companion %q is not another registered rule", r.Name, c)
			}
		}
		for _, a := range r.After {
			j, ok := index[a]
			switch {
			case !ok || a == r.Name:
				return fmt.Errorf("rule %q: runs after %q, which is not another registered rule", r.Name, a)
			case j > i:
				return fmt.Errorf("rule %q: runs after %q, but is registered before it", r.Name, a)
			}
		}
	}
	return nil
}

// validateAnalyses checks the analyses as and those they require: each
// has a name and a Run, and none requires itself. path holds the
// analyses being checked above as.
func validateAnalyses(as []*Analysis, path map[*Analysis]bool) error {
	for _, a := range as {
		switch {
		case a == nil:
			return fmt.Errorf("requires a nil analysis")
		case path[a]:
			return fmt.Errorf("analysis %q requires itself", a.Name)
		case !nameRE.MatchString(a.Name):
			return fmt.Errorf("analysis %q: invalid name", a.Name)
		case a.Run == nil:
			return fmt.Errorf("analysis %q: Run must be set", a.Name)
		}
		path[a] = true
		err := validateAnalyses(a.Requires, path)
		delete(path, a)
		if err != nil {
			return err
		}
	}
	return nil
}

// Short returns what the rule does, from the doc's title "# name: ...".
func (r *Rule) Short() string {
	title, _, _ := strings.Cut(r.Doc, "\n")
	_, short, _ := strings.Cut(title, ": ")
	return strings.TrimSpace(short)
}

// Summary returns the first paragraph after the doc's title, on one line.
func (r *Rule) Summary() string {
	_, body, _ := strings.Cut(r.Doc, "\n")
	body = strings.TrimLeft(body, "\n")
	para, _, _ := strings.Cut(body, "\n\n")
	if strings.HasPrefix(para, "#") {
		return ""
	}
	return strings.Join(strings.Fields(para), " ")
}

// Section returns the body of the doc's "## title" section, trimmed.
func (r *Rule) Section(title string) string {
	head := "\n## " + title + "\n"
	_, rest, ok := strings.Cut(r.Doc, head)
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return strings.TrimSpace(rest)
}

// ContainsAny is a Prefilter helper: it reports whether src contains any of
// the words.
func ContainsAny(src []byte, words ...string) bool {
	for _, w := range words {
		if bytes.Contains(src, []byte(w)) {
			return true
		}
	}
	return false
}

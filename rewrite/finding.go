package rewrite

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"regexp"
	"sort"
	"strings"

	"github.com/unflake/unflake/internal/load"
	"github.com/unflake/unflake/internal/output"
	"github.com/unflake/unflake/rule"
)

// A Finding is one diagnostic of one rule, with its position and whether
// it was fixed (by `fix`) or would be (in `check`), and if not, why not.
type Finding struct {
	// ID is stable across unrelated edits: it hashes the rule, the
	// package, the enclosing test and the matched code, not positions.
	ID       string `json:"id"`
	Rule     string `json:"rule"`
	Package  string `json:"package"`
	Test     string `json:"test,omitempty"` // "TestX/sub", or the enclosing function outside tests
	File     string `json:"file"`
	Line     int    `json:"line"`
	Col      int    `json:"col"`
	Message  string `json:"message"`
	Fixed    bool   `json:"fixed"`
	Fix      string `json:"fix,omitempty"`    // what the fix does
	Reason   string `json:"reason,omitempty"` // why it is not fixed
	SavingMs int64  `json:"savingMs,omitempty"`

	// Blockers lists, when the rule knows them all, every reason the
	// finding is not fixed, in order (rule.Diagnostic.Blockers): Reason
	// says them in words (JoinBlockers). Nil when the finding is fixed,
	// or when its reason is not the rule's (verification held the fix
	// back, the file cannot be written).
	Blockers []string `json:"blockers,omitempty"`

	// Unwritable, when not output.Writable, says why the fix is not applied:
	// fix would refuse to write a file it changes (a symlink, a file
	// without write permission, a file whose real path is outside its
	// module). Reason says so in words.
	Unwritable output.WriteFailure `json:"unwritable,omitempty"`
	// LostTo names the rule whose fix moved this finding's code to where
	// its own rule no longer recognises it (several rules: their names,
	// comma-separated, as --rules takes them): the code is left as it
	// was, and Reason says so in words.
	LostTo string `json:"lostTo,omitempty"`

	// Changes says what the applied fix changes in the test's meaning
	// (rule.Fix.Changes): verification aims its mutants at these kinds.
	// Nil when the finding is not fixed.
	Changes []rule.Change `json:"changes,omitempty"`

	// Unproven is set on a fix the rule could not prove safe, applied
	// because verification will run the tests.
	Unproven bool `json:"unproven,omitempty"`
	// Review is set on a finding not fixed whose fix is for a reviewer's
	// eyes only: a hypothesis of a kind of change no run can show the
	// strength of (rule.Unprovable), which verification holds back
	// before it runs anything and `fix --diff --unproven` shows. A
	// hypothesis without it is one `fix --verify` may keep.
	Review bool `json:"review,omitempty"`
	// Verified is set when `fix --verify` ran the affected tests after
	// the fix and they passed every time; BeforeMs and AfterMs are the
	// measured test times, set (0 included) on every verified finding.
	// (In JSON they are left out only when Verified is not set.)
	Verified bool  `json:"verified,omitempty"`
	BeforeMs int64 `json:"beforeMs,omitempty"`
	AfterMs  int64 `json:"afterMs,omitempty"`
	// MeasuredMs is the measured time of the finding's top-level test
	// in a go test -json log (fix --from-json, --measure), and Flaky is
	// set when that log has the test both failing and passing: plans
	// rank by them. Zero when the test was not measured.
	MeasuredMs int64 `json:"measuredMs,omitempty"`
	Flaky      bool  `json:"flaky,omitempty"`
	// Revert says why verification held the fix back (Reason says it in
	// words); nil when it did not.
	Revert *Revert `json:"revert,omitempty"`
	// Mutants, on a fix verification kept or reverted as Weaker, counts the mutants of the code under test that the
	// original test fails on (Of) and, of those, the ones the rewritten
	// test fails on too (Killed: all of them on a fix kept). Zero when
	// none was built.
	Mutants Mutants `json:"mutants,omitzero"`
	// Variant is the form of the fix applied (rule.Hypothesis.Alternatives; 0
	// for the fix itself), and Variants how many forms the fix has (0 or
	// 1 when it has one): verification tries them in order.
	Variant  int `json:"variant,omitempty"`
	Variants int `json:"variants,omitempty"`
	// NeedsGo is set on a fix found only because Config.GoAs raised the
	// module's go version: the highest version gate its rule passed in
	// the package that the declared version would have failed
	// ("go1.25"). Raising go.mod to it keeps the fix valid. It is also
	// set on a finding not fixed only because its fix is unproven
	// (Reason says fix --verify can try it), so that a raise can count
	// what verification could try.
	NeedsGo string `json:"needsGo,omitempty"`
	// ProbeHolds is set when the fix has a probe (rule.Hypothesis.Probe): the
	// rule's reason for holding the fix back when the tests pass every
	// run with the probe (rule.Hypothesis.ProbeHolds, or a general one when the
	// rule gives none). Verification reads it; it is not output.
	ProbeHolds string `json:"-"`
	// ProbeMustPass is set when the probe is a form the tests must pass
	// (rule.Hypothesis.MustPass); ProbeHolds is then the reason for holding
	// the fix back when a test fails with it (rule.Hypothesis.ProbeFails,
	// or a general one).
	ProbeMustPass bool `json:"-"`

	// ProbeLines are the file's lines, first and last, where a failure
	// with the probe is evidence (rule.Hypothesis.ProbeChecks); zero when any
	// failure is.
	ProbeLines [2]int `json:"-"`

	code string // the matched code, whitespace-normalised, for the ID
}

// Mutants counts the mutants of the code under test a rewritten test
// was tried on: the Of that the original test kills, and the Killed of
// those that the rewritten test kills too. Names are the kinds of the Of
// mutants, each once, in the order tried: those aimed at what the fix
// changes first ("late", "period x3", "duration 0", "one tick",
// "elapsed 0", "closes twice"), then those of state ("twice", "again",
// "undone", "dropped").
type Mutants struct {
	Killed int      `json:"killed"`
	Of     int      `json:"of"`
	Names  []string `json:"names,omitempty"`
}

// String says it in words: "kills 3 of 3 mutants the original kills
// (late, period x3, twice)".
func (m Mutants) String() string {
	s := fmt.Sprintf("kills %d of %d mutants the original kills", m.Killed, m.Of)
	if len(m.Names) > 0 {
		s += " (" + strings.Join(m.Names, ", ") + ")"
	}
	return s
}

// probeFails is a finding's ProbeHolds, for a probe that must pass, when
// its rule gives none.
const probeFails = "a test fails with a form of the fix that must pass"

// probeHolds is a finding's ProbeHolds when its rule gives none.
const probeHolds = "the tests pass without the change the fix waits for: nothing shows it waits for a change"

// A finder converts one rule's diagnostics on one package state into
// findings. It computes what is per file once (the lines the rule's
// ignore directives cover), so that the cost of a finding does not grow
// with the size of its file: a file can hold thousands of findings.
type finder struct {
	fset    *token.FileSet
	rule    *rule.Rule
	info    *types.Info
	files   map[string]*ast.File
	filter  *testFilter
	ignores map[*ast.File]map[int]bool
}

// finding converts a diagnostic, or reports false when the site is
// silenced by //unflake:ignore or lies outside the tests --run selects.
func (j *job) finding(fd *finder, d rule.Diagnostic) (Finding, bool) {
	fset := fd.fset
	r := fd.rule
	pos := fset.Position(d.Pos)
	f := fd.files[pos.Filename]
	if f == nil {
		return Finding{}, false // a rule reported outside the files it may touch
	}
	ign, ok := fd.ignores[f]
	if !ok {
		ign = ignoredLines(fset, f, r.Name)
		fd.ignores[f] = ign
	}
	if ign[pos.Line] {
		return Finding{}, false
	}
	end := d.End
	if !end.IsValid() || end < d.Pos {
		end = d.Pos
	}
	path := pathTo(f, d.Pos, end)
	levels, name := enclosingTest(pathTo(f, d.Pos, d.Pos), fd.info)
	if filter := fd.filter; filter != nil && (levels == nil || !filter.match(levels)) {
		return Finding{}, false
	}
	src := ""
	if data, ok := currentText(path); ok {
		src = data
	}
	out := Finding{
		Rule:     r.Name,
		Package:  load.ForTest(j.pkg),
		Test:     name,
		File:     pos.Filename,
		Line:     pos.Line,
		Col:      pos.Column,
		Message:  d.Message,
		SavingMs: d.Saving.Milliseconds(),
		code:     strings.Join(strings.Fields(src), " "),
	}
	if d.Fix != nil {
		out.Fix = d.Fix.Message
		if h := d.Fix.Hypothesis; h != nil && len(h.Alternatives) > 0 {
			out.Variants = 1 + len(h.Alternatives)
		}
		if h := d.Fix.Hypothesis; h != nil && h.Probe != nil {
			out.ProbeHolds = h.ProbeHolds
			if out.ProbeHolds == "" {
				out.ProbeHolds = probeHolds
			}
			if h.MustPass {
				out.ProbeMustPass = true
				out.ProbeHolds = cmp.Or(h.ProbeFails, probeFails)
			}
			for _, n := range h.ProbeChecks {
				from, to := fset.Position(n.Pos()).Line, fset.Position(n.End()).Line
				if out.ProbeLines[0] == 0 || from < out.ProbeLines[0] {
					out.ProbeLines[0] = from
				}
				out.ProbeLines[1] = max(out.ProbeLines[1], to)
			}
		}
	} else {
		out.Reason = d.NotFixed
		if len(d.Blockers) > 0 {
			out.Reason, out.Blockers = JoinBlockers(d.Blockers), d.Blockers
		}
		if out.Reason == "" {
			out.Reason = "no safe rewrite is known"
		}
	}
	return out, true
}

// JoinBlockers says a finding's blockers in words: the first, then
// "; also: " before each of the next, up to shownBlockers, then how many
// more there are (a helper many tests call may have dozens; the JSON
// output lists them all).
func JoinBlockers(blockers []string) string {
	if n := len(blockers) - shownBlockers; n > 0 {
		return strings.Join(blockers[:shownBlockers], "; also: ") + fmt.Sprintf("; and %d more (--format json lists them)", n)
	}
	return strings.Join(blockers, "; also: ")
}

// shownBlockers is how many blockers a finding's reason names.
const shownBlockers = 4

// pathTo returns the nodes of f that enclose the interval [pos, end],
// innermost first and f last, as astutil.PathEnclosingInterval does for
// an interval that covers whole nodes. It finds the declaration by binary
// search and descends only into enclosing nodes, so its cost follows the
// depth of the site, not the size of the file.
func pathTo(f *ast.File, pos, end token.Pos) []ast.Node {
	i := sort.Search(len(f.Decls), func(i int) bool { return f.Decls[i].End() > pos })
	if i == len(f.Decls) || f.Decls[i].Pos() > pos || f.Decls[i].End() < end {
		if f.Pos() <= pos && end <= f.End() {
			return []ast.Node{f}
		}
		return nil
	}
	var outer []ast.Node // outermost first
	ast.Inspect(f.Decls[i], func(n ast.Node) bool {
		if n == nil || n.Pos() > pos || n.End() < end {
			return false
		}
		if pos == end && n.End() == pos && n.Pos() < pos {
			return false // ends where the position starts: a sibling before it
		}
		outer = append(outer, n)
		return true
	})
	path := make([]ast.Node, 0, len(outer)+1)
	for k := len(outer) - 1; k >= 0; k-- {
		path = append(path, outer[k])
	}
	return append(path, f)
}

// currentText renders the code the innermost node of path holds, for the
// ID hash, from the syntax (the file on disk may already differ after
// earlier rounds).
func currentText(path []ast.Node) (string, bool) {
	if len(path) == 0 {
		return "", false
	}
	var b strings.Builder
	ast.Inspect(path[0], func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			b.WriteString(n.Name + " ")
		case *ast.BasicLit:
			b.WriteString(n.Value + " ")
		}
		return true
	})
	return b.String(), true
}

// assignIDs gives each finding its stable ID; identical matches in the
// same test are numbered in source order.
func assignIDs(fs []Finding) {
	SortFindings(fs)
	count := map[string]int{}
	for i := range fs {
		f := &fs[i]
		key := f.Rule + "\x00" + f.Package + "\x00" + f.Test + "\x00" + f.code
		count[key]++
		if n := count[key]; n > 1 {
			key += fmt.Sprintf("\x00%d", n)
		}
		sum := sha256.Sum256([]byte(key))
		f.ID = f.Rule + "-" + hex.EncodeToString(sum[:6])
	}
}

// SortFindings orders findings by file, line, column and rule.
func SortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Col != b.Col {
			return a.Col < b.Col
		}
		return a.Rule < b.Rule
	})
}

// ignoredLines returns the lines of f an //unflake:ignore directive
// naming rule covers: its own line and the line directly below its
// comment group (possibly with other comment lines between the directive
// and the code).
func ignoredLines(fset *token.FileSet, f *ast.File, name string) map[int]bool {
	lines := map[int]bool{}
	for _, g := range f.Comments {
		for _, c := range g.List {
			rules, ok := parseIgnore(c.Text)
			if !ok || !(rules[name] || rules["all"]) {
				continue
			}
			lines[fset.Position(c.Pos()).Line] = true
			lines[fset.Position(g.End()).Line+1] = true
		}
	}
	return lines
}

// parseIgnore parses "//unflake:ignore rule1,rule2 reason".
func parseIgnore(text string) (map[string]bool, bool) {
	rest, ok := strings.CutPrefix(text, "//unflake:ignore")
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return nil, false
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return nil, false
	}
	m := map[string]bool{}
	for _, r := range strings.Split(fields[0], ",") {
		m[r] = true
	}
	return m, true
}

// enclosingTest returns the test and subtest names on path, the nodes
// enclosing a position innermost first (nil if it is not in a test), and
// a name for the enclosing code: the test path ("TestX/sub") or, outside
// tests, the enclosing function.
// A subtest whose name is not a constant has the level name "".
func enclosingTest(path []ast.Node, info *types.Info) ([]string, string) {
	var levels []string
	name := ""
	for i := len(path) - 1; i >= 0; i-- {
		switch n := path[i].(type) {
		case *ast.FuncDecl:
			name = funcName(n)
			if isTestFunc(n) {
				levels = []string{n.Name.Name}
			}
		case *ast.CallExpr:
			if levels == nil || i == 0 {
				continue
			}
			if lit, ok := path[i-1].(*ast.FuncLit); ok && isRunCall(n, lit, info) {
				levels = append(levels, subtestName(n.Args[0], info))
			}
		}
	}
	if levels != nil {
		name = strings.Join(levels, "/")
	}
	return levels, name
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := ast.Unparen(t).(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

var testFuncRE = regexp.MustCompile(`^(Test|Benchmark|Fuzz|Example)([^a-z]|$)`)

// IsTestName reports whether name is that of a function go test runs.
func IsTestName(name string) bool { return testFuncRE.MatchString(name) }

func isTestFunc(fd *ast.FuncDecl) bool {
	return fd.Recv == nil && IsTestName(fd.Name.Name)
}

// isRunCall reports whether call is t.Run(name, lit) on a *testing.T, B
// or F.
func isRunCall(call *ast.CallExpr, lit *ast.FuncLit, info *types.Info) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Run" || len(call.Args) != 2 || call.Args[1] != lit {
		return false
	}
	fn, ok := info.Uses[sel.Sel].(*types.Func)
	return ok && fn.Pkg() != nil && fn.Pkg().Path() == "testing"
}

// subtestName returns the name go test gives a subtest (spaces become
// underscores), or "" when it is not a constant.
func subtestName(arg ast.Expr, info *types.Info) string {
	tv, ok := info.Types[arg]
	if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
		return ""
	}
	return strings.ReplaceAll(constant.StringVal(tv.Value), " ", "_")
}

// testFilter matches test names as `go test -run` does: the pattern is
// split at slashes outside brackets and parentheses, and each part must
// match (unanchored) the name at its level.
type testFilter struct {
	parts []*regexp.Regexp
}

func newTestFilter(pattern string) (*testFilter, error) {
	var parts []*regexp.Regexp
	for _, p := range splitRegexp(pattern) {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("invalid --run pattern %q: %v", pattern, err)
		}
		parts = append(parts, re)
	}
	return &testFilter{parts: parts}, nil
}

// match reports whether code at the test levels runs under the filter.
// A subtest whose name is unknown ("") may match.
func (tf *testFilter) match(levels []string) bool {
	for i, name := range levels {
		if i >= len(tf.parts) {
			break
		}
		if name == "" && i > 0 {
			continue
		}
		if !tf.parts[i].MatchString(name) {
			return false
		}
	}
	return true
}

func splitRegexp(s string) []string {
	var parts []string
	depth := 0
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case '\\':
			i++
		case '/':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// MarshalJSON writes a finding as its struct tags say, except that a
// verified finding always carries beforeMs and afterMs, 0 included.
// Text is the finding's message followed by its fix, or the reason there
// is none: what every driver prints (check, SARIF, annotations, go vet).
func (f Finding) Text() string {
	if f.Fixed && f.Mutants.Of > 0 {
		return f.Message + "; fix: " + f.Fix + " (verified: " + f.Mutants.String() + ")"
	}
	if f.Fixed {
		return f.Message + "; fix: " + f.Fix
	}
	return f.Message + "; not fixed: " + f.Reason
}

// String is the finding as `unflake check` prints it:
// file:line:col: rule: Text.
func (f Finding) String() string {
	return fmt.Sprintf("%s:%d:%d: %s: %s", f.File, f.Line, f.Col, f.Rule, f.Text())
}

func (f Finding) MarshalJSON() ([]byte, error) {
	type plain Finding // without this method
	out := struct {
		plain
		BeforeMs *int64 `json:"beforeMs,omitempty"`
		AfterMs  *int64 `json:"afterMs,omitempty"`
	}{plain: plain(f)}
	if f.Verified || f.BeforeMs != 0 || f.AfterMs != 0 {
		out.BeforeMs, out.AfterMs = &f.BeforeMs, &f.AfterMs
	}
	return json.Marshal(out)
}

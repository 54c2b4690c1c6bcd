package rewrite

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dave/dst"
	"github.com/dave/dst/decorator"
	"github.com/dave/dst/decorator/resolver/gotypes"

	"github.com/unflake/unflake/internal/crash"
	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/internal/load"
	"github.com/unflake/unflake/internal/output"
	"github.com/unflake/unflake/internal/rulehook"
	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rule"
)

// stepResult is the outcome of running one rule once on a package.
type stepResult struct {
	findings []found
	resolved []found           // sites the rule says an earlier fix resolved (Diagnostic.Resolved)
	next     *state            // the package after the fixes, or nil if none applied
	contents map[string][]byte // new contents of the files the fixes changed
	errors   []error
	requires []string             // modules the applied fixes need
	refused  []*output.WriteError // files fix would refuse to write, whose fixes were not applied
}

// A found is a finding with what the engine needs to follow it across
// rules and rounds.
type found struct {
	Finding
	seen *content // the content of the file its position refers to
	site string   // the reported code, whitespace-normalised
}

// A content is what one file holds at one point of a run. Findings share
// it: a file with thousands of findings is held once per content, not once
// per finding.
type content struct {
	data  []byte
	norm  string          // data whitespace-normalised, once asked for
	lines []output.LineAt // each line's line in the original file, once asked for
}

// normalised returns the content with every run of white space made one
// space.
func (v *content) normalised() string {
	if v.norm == "" && len(v.data) > 0 {
		v.norm = normalise(string(v.data))
	}
	return v.norm
}

func normalise(s string) string { return strings.Join(strings.Fields(s), " ") }

// step runs rule r on the package state cur and applies the fixes it may.
// If the fixes together do not type-check, they are tried in halves, so
// bad fixes do not hold back the others; a fix that does not type-check
// (alone, or with the fixes kept) is not applied and its finding says so
// with the compiler's words; a fix that fails otherwise (its Apply, a
// lost comment) is reported as an internal error naming the rule. With
// dry set, nothing is applied: the findings say what the rule sees in cur.
// A panic of the rule, of an analysis or effect summary it asks for, or of
// the engine's work on its fixes is the step's outcome (panicked): the
// package's other rules and the other packages go on.
func (j *job) step(cfg *Config, r *rule.Rule, cur *state, current map[string]*content, ck *checker, filter *testFilter, mods *modules, dry bool) (out stepResult) {
	defer func() {
		if v := recover(); v != nil {
			out = j.panicked(r, cur, current, crash.Recovered(v))
		}
	}()
	fset := j.pkg.Fset
	files := j.fileIndex(fset, cur)
	s := j.newSession(r, cur, files, mods)
	if err := s.run(r, cur); err != nil && !s.failed(r, err) {
		out.errors = append(out.errors, fmt.Errorf("%s: internal error: rule %s: %v", j.pkg.PkgPath, r.Name, err))
		return out
	}

	var fixable []int // indices into s.diags of fixes to apply
	findingOf := map[int]int{}
	fd := &finder{fset: fset, rule: r, info: cur.info, files: files, filter: filter, ignores: map[*ast.File]map[int]bool{}}
	for i, d := range s.diags {
		f, ok := j.finding(fd, d)
		if !ok {
			continue
		}
		ff := found{Finding: f, seen: current[f.File], site: siteText(fset, d, current[f.File])}
		if d.Resolved != "" {
			ff.Fix = d.Resolved
			out.resolved = append(out.resolved, ff)
			continue
		}
		var held *Revert // verification's answer
		if d.Fix != nil && cfg.Decide != nil {
			site := f.Site()
			site.Unproven = d.Fix.Unproven()
			site.Fix = d.Fix
			dec := cfg.Decide(site)
			held = dec.Revert
			k := dec.Variant
			if dec.Probe {
				k = probeForm
			}
			if fix := variant(d.Fix, k); held == nil && fix != d.Fix {
				switch {
				case fix == nil && dec.Probe:
					held = &Revert{Kind: revert.NoVariant, Detail: "the fix has no probe"}
				case fix == nil:
					held = &Revert{Kind: revert.NoVariant, Detail: fmt.Sprintf("the fix has no form %d", dec.Variant)}
				default:
					s.variants[i] = k
					ff.Fix = fix.Message
					if !dec.Probe {
						ff.Variant = k
					}
					d.Fix = fix // for the checks below
				}
			}
		}
		var reqErr error // a module the fix needs and cannot have
		if d.Fix != nil {
			reqErr = s.requireError(d.Fix)
		}
		switch {
		case d.Fix == nil:
		case held != nil:
			ff.Fix, ff.Reason, ff.Revert = "", held.Reason(), held
		case d.Fix.Unproven() != "" && cfg.Decide == nil:
			next := " (fix --verify can try it)"
			if rule.Unprovable(d.Fix.Changes) != "" {
				// Verification holds such a fix back unrun: it is
				// for a reviewer's eyes.
				next = " (fix --diff --unproven shows it for review)"
				ff.Review = true
			}
			ff.Fix, ff.Reason = "", d.Fix.Unproven()+next
			if len(d.Blockers) > 0 {
				ff.Reason, ff.Blockers = JoinBlockers(d.Blockers)+next, d.Blockers
			}
			ff.NeedsGo = s.needsGo
			if kept := s.siteKept(d, current); kept != nil {
				// A comment at the site says the code is meant as it
				// is: no run would apply the fix (guard), and "can try
				// it" would not be true.
				ff.Reason, ff.Blockers, ff.NeedsGo, ff.Review = kept.Error(), nil, "", false
			}
		case reqErr != nil:
			ff.Fix, ff.Reason = "", reqErr.Error()
			var unchecked *uncheckedError
			if errors.As(reqErr, &unchecked) {
				out.errors = append(out.errors, fmt.Errorf("%s:%d:%d: internal error: rule %s: %v", f.File, f.Line, f.Col, r.Name, reqErr))
			}
		case rule.CheckFix(d.Fix) != nil:
			ff.Fix, ff.Reason = "", "not fixed: internal error"
			out.errors = append(out.errors, fmt.Errorf("%s:%d:%d: internal error: rule %s: %v", f.File, f.Line, f.Col, r.Name, rule.CheckFix(d.Fix)))
		case j.refused[f.File] != nil:
			// Last: a fix that would not be applied anyway says why.
			w := j.refused[f.File]
			ff.Fix, ff.Reason, ff.Unwritable = "", w.FindingReason(), w.Reason
			out.refused = append(out.refused, w)
		default:
			ff.Unproven = d.Fix.Unproven() != ""
			ff.Changes = d.Fix.Changes
			ff.NeedsGo = s.needsGo
			fixable = append(fixable, i)
			findingOf[i] = len(out.findings)
		}
		out.findings = append(out.findings, ff)
	}
	if len(fixable) == 0 || dry {
		return out
	}

	// Have: fixes to apply, in the findings' order (by position), which
	// decides which of two fixes that conflict is kept. Try them all at
	// once first.
	sort.SliceStable(fixable, func(a, b int) bool { return s.diags[fixable[a]].Pos < s.diags[fixable[b]].Pos })
	next, contents, err := j.apply(s, fixable, cur, current, ck)
	applied := fixable
	if err != nil {
		// Find the fixes that fail by halving: the cost grows with the
		// bad fixes times the log of all of them, not with their number
		// (a file can hold thousands). Every set kept type-checks.
		t := &trial{j: j, r: r, cur: cur, files: files, mods: mods, current: current, ck: ck, want: len(s.diags), variants: s.variants}
		t.add(fixable)
		tried := map[int]bool{}
		for _, i := range t.good {
			tried[i] = true
		}
		for _, b := range t.bad {
			tried[b.fix] = true
		}
		for _, i := range fixable {
			if !tried[i] {
				// The trial gave up: the rule reports other findings
				// when run again on the same code.
				f := &out.findings[findingOf[i]]
				f.Fix, f.Reason = "", "internal error: the rule's findings change from one run to the next, so the fix could not be tried apart from the others that do not compile"
				out.errors = append(out.errors, fmt.Errorf("%s:%d:%d: %s (rule %s)", f.File, f.Line, f.Col, f.Reason, r.Name))
			}
		}
		for _, b := range t.bad {
			f := &out.findings[findingOf[b.fix]]
			var unrelated *unrelatedError
			if errors.As(b.err, &unrelated) {
				f.Fix, f.Reason = "", unrelated.Error()
				continue
			}
			var kept *keptError
			if errors.As(b.err, &kept) {
				f.Fix, f.Reason = "", kept.Error()
				continue
			}
			var refused *refusedError
			if errors.As(b.err, &refused) {
				w := refused.w
				f.Fix, f.Reason, f.Unwritable = "", refused.Error(), w.Reason
				out.refused = append(out.refused, w)
				continue
			}
			var failed *applyError
			if errors.As(b.err, &failed) {
				f.Fix, f.Reason = "", "internal error: "+failed.Error()
				out.errors = append(out.errors, fmt.Errorf("%s:%d:%d: internal error: rule %s: %v", f.File, f.Line, f.Col, r.Name, failed))
				continue
			}
			var broken *compileError
			if errors.As(b.err, &broken) {
				// Not the rule's bug to report but its finding's state:
				// the code as it is does not let the fix compile (or,
				// with the fixes kept, the fixes do not compile
				// together).
				f.Fix, f.Reason = "", t.compileReason(b, broken, out.findings, findingOf)
				continue
			}
			f.Fix, f.Reason = "", "internal error: the fix does not compile: "+b.err.Error()
			out.errors = append(out.errors, fmt.Errorf("%s:%d:%d: internal error: rule %s: fix does not compile: %v", f.File, f.Line, f.Col, r.Name, b.err))
		}
		applied, next, contents = t.good, t.next, t.contents
	}
	for _, i := range applied {
		f := &out.findings[findingOf[i]]
		f.Fixed = true
		out.requires = append(out.requires, s.fix(i).Requires...)
	}
	if len(applied) > 0 {
		out.next, out.contents = next, contents
	}
	return out
}

// siteKept returns the keptError a fix of d would meet at its own site
// (a comment beside the line it reports says the code is meant as it
// is), without applying it: plain fix does not apply a hypothesis, and
// its reason must not offer fix --verify a fix the guard would refuse.
func (s *session) siteKept(d rule.Diagnostic, current map[string]*content) *keptError {
	f := s.fileOf(d.Pos)
	if f == nil {
		return nil
	}
	fset := s.pass.Fset
	path := fset.Position(f.Pos()).Filename
	v := current[path]
	if v == nil {
		return nil
	}
	have := bytes.ReplaceAll(v.data, []byte("\r\n"), []byte("\n"))
	var kept *keptError
	if err := guard(fset, f, path, have, have, map[int]bool{fset.Position(d.Pos).Line: true}); errors.As(err, &kept) {
		return kept
	}
	return nil
}

// panicked is the outcome of a step of rule r on cur that panicked with p:
// one finding on the package, at the package clause of its first
// rewritable file, and an internal error naming the rule, the package and
// where it panicked. No fix of the step is applied. The package's effect
// summaries the rule was computing may be half made: they are made again
// for the next rule.
func (j *job) panicked(r *rule.Rule, cur *state, current map[string]*content, p *crash.Panic) stepResult {
	cur.local = nil
	msg := fmt.Sprintf("rule %s panicked in package %s: %v", r.Name, j.pkg.PkgPath, p.Value)
	if p.Frame != "" {
		msg += " (at " + p.Frame + ")"
	}
	var out stepResult
	files := j.fileIndex(j.pkg.Fset, cur)
	for _, path := range j.files {
		if f := files[path]; f != nil {
			pos := j.pkg.Fset.Position(f.Package)
			out.findings = []found{{Finding: Finding{Rule: r.Name, Package: load.ForTest(j.pkg), File: path, Line: pos.Line, Col: pos.Column,
				Message: msg, Reason: "internal error"}, seen: current[path]}}
			out.errors = []error{fmt.Errorf("%s:%d:%d: internal error: %s", path, pos.Line, pos.Column, msg)}
			return out
		}
	}
	out.errors = []error{fmt.Errorf("internal error: %s", msg)}
	return out
}

// A trial finds the largest set of a rule's fixes that applies and
// type-checks, when all of them together do not.
type trial struct {
	j        *job
	r        *rule.Rule
	cur      *state
	files    map[string]*ast.File
	mods     *modules
	current  map[string]*content
	ck       *checker
	want     int         // diagnostics of the first run of the rule
	gaveUp   bool        // the rule is not deterministic
	variants map[int]int // the forms verification chose (session.variants)

	good     []int // fixes kept so far
	next     *state
	contents map[string][]byte
	bad      []badFix
}

type badFix struct {
	fix   int
	err   error
	alone bool // tried with no other fix
}

// compileReason says why fix b, whose set of fixes failed to type-check
// with err, is not applied: it does not compile on its own, or it does not
// compile with the fixes kept (in its own test, when one of them is in
// it). A fix found not to compile with others keeps saying so in later
// rounds, where it is tried alone on top of them (job.conflicts). The
// compiler's positions are the user's lines, in the file as it is before
// the rule's fixes.
func (t *trial) compileReason(b badFix, err *compileError, findings []found, findingOf map[int]int) string {
	f := &findings[findingOf[b.fix]]
	key := t.r.Name + "\x00" + f.File + "\x00" + f.Test + "\x00" + f.site
	if s := t.session(); s != nil && !b.alone {
		_, _, alone := t.j.apply(s, []int{b.fix}, t.cur, t.current, t.ck)
		if alone == nil {
			where := "package"
			for _, i := range t.good {
				if f.Test != "" && findings[findingOf[i]].Test == f.Test {
					where = "test"
				}
			}
			t.j.conflicts[key] = where
			return "the fix does not compile with the other fixes in this " + where + ": " + err.user(t.current, t.j.pkg.Dir)
		}
		var own *compileError
		if errors.As(alone, &own) {
			err = own
		}
	}
	if where := t.j.conflicts[key]; where != "" {
		return "the fix does not compile with the other fixes in this " + where + ": " + err.user(t.current, t.j.pkg.Dir)
	}
	return "the fix does not compile: " + err.user(t.current, t.j.pkg.Dir)
}

// A compileError is a set of fixes that applies but does not type-check:
// the type-checker's errors, and the contents of the files it checked.
type compileError struct {
	err      error
	contents map[string][]byte
}

func (e *compileError) Error() string { return e.err.Error() }

// user returns the type-checker's words with their positions moved to the
// lines of the files before the fixes (current), and the package's
// directory dir left out of their paths.
func (e *compileError) user(current map[string]*content, dir string) string {
	msg := e.err.Error()
	for path, data := range e.contents {
		before := current[path]
		if before == nil {
			continue
		}
		m := output.LineMap(before.data, data)
		kept := map[int]bool{} // lines of before still in data
		for _, at := range m {
			if !at.Added {
				kept[at.Line] = true
			}
		}
		lines := len(output.SplitLines(string(before.data)))
		base := filepath.Base(path)
		msg = lineRef.ReplaceAllStringFunc(msg, func(ref string) string {
			sub := lineRef.FindStringSubmatch(ref)
			n, err := strconv.Atoi(sub[2])
			if sub[1] != base || err != nil || n < 1 || n > len(m) {
				return ref
			}
			at := m[n-1].Line
			if m[n-1].Added && at+1 < lines && !kept[at+1] {
				at++ // a line the fix changed: the line it replaces
			}
			// Else a line the fix added: the line it follows.
			return sub[1] + ":" + strconv.Itoa(at+1)
		})
	}
	if dir != "" {
		msg = strings.ReplaceAll(msg, dir+string(filepath.Separator), "")
	}
	return msg
}

// add tries the fixes of which on top of the good ones: all at once, and
// when they fail, each half in turn.
func (t *trial) add(which []int) {
	if len(which) == 0 || t.gaveUp {
		return
	}
	try := append(append([]int(nil), t.good...), which...)
	s := t.session()
	if s == nil {
		t.gaveUp = true // give up on the rest
		return
	}
	n, c, err := t.j.apply(s, try, t.cur, t.current, t.ck)
	if err == nil {
		t.good, t.next, t.contents = try, n, c
		return
	}
	if len(which) == 1 {
		t.bad = append(t.bad, badFix{which[0], err, len(t.good) == 0})
		return
	}
	half := len(which) / 2
	t.add(which[:half])
	t.add(which[half:])
}

// session returns a fresh run of the rule on cur, whose fixes are not
// applied yet (fixes edit the decorated files of a session: each try
// starts from a new one), or nil when the run does not report what the
// first run did.
func (t *trial) session() *session {
	s := t.j.newSession(t.r, t.cur, t.files, t.mods)
	s.variants = t.variants
	if s.run(t.r, t.cur) != nil {
		return nil // the first run on cur succeeded: not expected
	}
	if len(s.diags) != t.want {
		return nil
	}
	return s
}

// siteText returns the code d reports, whitespace-normalised, from the
// file content v its positions refer to.
func siteText(fset *token.FileSet, d rule.Diagnostic, v *content) string {
	if v == nil {
		return ""
	}
	tf := fset.File(d.Pos)
	end := d.End
	if !end.IsValid() || end < d.Pos {
		end = d.Pos
	}
	if tf == nil || int(end)-tf.Base() > tf.Size() {
		return ""
	}
	from, to := tf.Offset(d.Pos), tf.Offset(end)
	if to > len(v.data) {
		return ""
	}
	return normalise(string(v.data[from:to]))
}

// unrelatedError says a fix cannot be written without changing lines it
// did not mean to change.
type unrelatedError struct{ why string }

func (e *unrelatedError) Error() string { return e.why }

// refusedError says a fix changes a file that fix would refuse to write.
type refusedError struct{ w *output.WriteError }

func (e *refusedError) Error() string {
	return "the fix also changes " + filepath.Base(e.w.Path) + ", which fix does not write: " + e.w.Why()
}

// session is one run of a rule with its lazily decorated files.
type session struct {
	pass     *rule.Pass
	dec      *decorator.Decorator
	files    map[string]*ast.File
	dsts     map[*ast.File]*dst.File
	diags    []rule.Diagnostic
	required map[string]error // Pass.Require's answers in this run
	variants map[int]int      // index into diags → the form of its fix to apply (probeForm: its probe), when not the first
	needsGo  string           // the highest go version granted only by Config.GoAs ("go1.25"), or ""
}

// fix returns the form of diagnostic i's fix to apply.
func (s *session) fix(i int) *rule.Fix {
	return variant(s.diags[i].Fix, s.variants[i])
}

// probeForm is the form of a fix that is its probe (rule.Hypothesis.Probe), as
// Decision.Probe asks for it.
const probeForm = -1

// variant returns form k of fix (0: fix itself; probeForm: its probe), or
// nil when it has none.
func variant(fix *rule.Fix, k int) *rule.Fix {
	var v *rule.Fix
	switch {
	case k == 0:
		return fix
	case fix.Hypothesis == nil:
		return nil
	case k == probeForm:
		v = fix.Hypothesis.Probe
	case k > 0 && k <= len(fix.Hypothesis.Alternatives):
		v = fix.Hypothesis.Alternatives[k-1]
	}
	if v != nil && len(v.Changes) == 0 {
		// A further form or a probe changes what its fix changes,
		// unless it says otherwise.
		w := *v
		w.Changes = fix.Changes
		v = &w
	}
	return v
}

func (j *job) newSession(r *rule.Rule, cur *state, files map[string]*ast.File, mods *modules) *session {
	s := &session{
		dec:      decorator.NewDecoratorWithImports(j.pkg.Fset, j.pkg.PkgPath, gotypes.New(cur.info.Uses)),
		files:    files,
		dsts:     map[*ast.File]*dst.File{},
		required: map[string]error{},
		variants: map[int]int{},
	}
	var list []*ast.File
	for _, f := range cur.syntax {
		for _, g := range files {
			if f == g {
				list = append(list, f)
			}
		}
	}
	goVersion := ""
	if m := j.pkg.Module; m != nil && m.GoVersion != "" {
		goVersion = "go" + m.GoVersion
	}
	s.pass = &rule.Pass{
		Rule:      r,
		Fset:      j.pkg.Fset,
		Files:     list,
		AllFiles:  cur.syntax,
		Pkg:       cur.types,
		TypesInfo: cur.info,
		Options:   j.opts,
		GoVersion: goVersion,
		Report: func(d rule.Diagnostic) {
			// A kind of change no rule proves makes any fix a
			// hypothesis (rule.Demote).
			d.Fix = rule.Demote(d.Fix)
			s.diags = append(s.diags, d)
		},
		Dst:      s.dst,
		Effects:  cur.localEffects(j),
		Excluded: func(name string) bool { return j.excluded.has(j, name) },
		Measured: j.measured,
		Require: func(modPath string) (bool, error) {
			missing, err := mods.require(j.pkg, modPath)
			s.required[modPath] = err
			return missing, err
		},
	}
	if j.declaredGo != "" {
		s.pass.TypesInfo = raisedInfo(cur.info, cur.syntax, j.declaredGo, goVersion)
		rulehook.SetGranted(s.pass, func(min string) { s.granted(j.declaredGo, min) })
	}
	return s
}

// requireError says why fix cannot be applied for want of a module: one
// of its Requires that Pass.Require refused (its error, for the finding),
// or one the rule never asked for (a bug of the rule: the engine has not
// made the module importable).
func (s *session) requireError(fix *rule.Fix) error {
	for _, p := range fix.Requires {
		err, asked := s.required[p]
		if !asked {
			return &uncheckedError{p}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// uncheckedError is a fix's requirement the rule never passed to
// Pass.Require.
type uncheckedError struct{ modPath string }

func (e *uncheckedError) Error() string {
	return "the fix requires " + e.modPath + ", which the rule did not check with Pass.Require"
}

// dst returns the decorated node of n, decorating its file on first use.
func (s *session) dst(n ast.Node) dst.Node {
	f := s.fileOf(n.Pos())
	if f == nil {
		return nil
	}
	if _, ok := s.dsts[f]; !ok {
		df, err := s.dec.DecorateFile(f)
		if err != nil {
			return nil
		}
		s.dsts[f] = df
	}
	return s.dec.Dst.Nodes[n]
}

func (s *session) fileOf(pos token.Pos) *ast.File {
	for _, f := range s.files {
		if f.FileStart <= pos && pos <= f.FileEnd {
			return f
		}
	}
	return nil
}

// apply applies the fixes of s.diags at the indices in which, restores and
// formats the changed files, checks that no comment was lost, and
// type-checks the package with them.
func (j *job) apply(s *session, which []int, cur *state, current map[string]*content, ck *checker) (*state, map[string][]byte, error) {
	defer stages.since(costApply, time.Now())
	// Print each file of a finding back before the fixes edit it: what
	// differs between that and the source is dst's doing, not the fix's.
	for _, i := range which {
		if f := s.fileOf(s.diags[i].Pos); f != nil {
			s.dst(f)
		}
	}
	before := map[*ast.File][]byte{}
	for f, df := range s.dsts {
		src, ok := j.printed[f] // the same file, printed for an earlier rule or trial
		if !ok {
			var err error
			if src, err = restore(j.pkg.PkgPath, cur, df); err != nil {
				return nil, nil, err
			}
			j.printed[f] = src
		}
		before[f] = src
	}
	var deletes []ast.Node
	for _, i := range which {
		fix := s.fix(i)
		if err := applyFix(fix); err != nil {
			return nil, nil, &applyError{err}
		}
		deletes = append(deletes, fix.Deletes...)
	}

	fset := j.pkg.Fset
	contents := map[string][]byte{}
	replaced := map[*ast.File]*ast.File{}
	// Every decorated file is restored; one the fixes did not edit prints
	// back unchanged (dst round-trips source byte for byte) and is skipped.
	for path, f := range s.files {
		df, ok := s.dsts[f]
		if !ok {
			continue
		}
		src, err := restore(j.pkg.PkgPath, cur, df)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %v", path, err)
		}
		// A file with CRLF line endings is compared and spliced with LF
		// ones, and written back with CRLF.
		var have []byte
		if v := current[path]; v != nil {
			have = v.data
		}
		crlf := bytes.Contains(have, []byte("\r\n"))
		if crlf {
			have = bytes.ReplaceAll(have, []byte("\r\n"), []byte("\n"))
		}
		src = keepImportLayout(have, src)
		if bytes.Equal(src, have) {
			continue
		}
		if orig, ok := before[f]; !ok || !bytes.Equal(orig, have) {
			// dst does not print this file back byte for byte (a path
			// imported under two names, a file that is not gofmt-clean):
			// carry over only the lines the fixes changed.
			if orig == nil {
				// First decorated by a fix: print a fresh decoration.
				df, err := decorator.NewDecoratorWithImports(fset, j.pkg.PkgPath, gotypes.New(cur.info.Uses)).DecorateFile(f)
				if err != nil {
					return nil, nil, err
				}
				if orig, err = restore(j.pkg.PkgPath, cur, df); err != nil {
					return nil, nil, err
				}
			}
			spliced, ok := splice(have, orig, src)
			if !ok {
				return nil, nil, &unrelatedError{"unflake cannot print this file back unchanged (for example, it imports a path under two names), and the fix's lines could not be carried over on their own"}
			}
			src = spliced
		}
		// A comment beside what the fixes changed must stay true.
		sites := map[int]bool{}
		for _, i := range which {
			if d := s.diags[i]; s.fileOf(d.Pos) == f {
				sites[fset.Position(d.Pos).Line] = true
			}
		}
		if err := guard(fset, f, path, have, src, sites); err != nil {
			return nil, nil, err
		}
		if crlf {
			src = bytes.ReplaceAll(src, []byte("\n"), []byte("\r\n"))
		}
		nf, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, err
		}
		if lost := lostComments(f, nf, deletes); lost != "" {
			return nil, nil, fmt.Errorf("%s: comment lost: %s", path, lost)
		}
		contents[path] = src
		replaced[f] = nf
	}
	if len(replaced) == 0 {
		return nil, nil, nil
	}
	for path := range contents {
		if w := j.refused[path]; w != nil {
			return nil, nil, &refusedError{w} // a fix elsewhere that also edits a refused file
		}
	}
	syntax := make([]*ast.File, len(cur.syntax))
	for i, f := range cur.syntax {
		if nf, ok := replaced[f]; ok {
			syntax[i] = nf
		} else {
			syntax[i] = f
		}
	}
	checked := time.Now()
	tp, info, err := ck.check(syntax)
	stages.since(costRecheck, checked)
	if err != nil {
		return nil, nil, &compileError{err, contents}
	}
	return &state{syntax: syntax, types: tp, info: info}, contents, nil
}

// applyFix applies fix to the decorated files; a panic is its error, so
// that trying the fixes in halves sets aside the one that panics.
func applyFix(fix *rule.Fix) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = crash.Recovered(v)
		}
	}()
	return fix.Apply()
}

// restore prints a decorated file, managing its imports from the
// package's own imports (not the slow default resolver), and gofmts it.
func restore(pkgPath string, cur *state, f *dst.File) ([]byte, error) {
	return output.Restore(pkgPath, cur.types.Imports(), f)
}

// lostComments returns the first comment of old missing from new, other
// than comments inside deleted nodes.
func lostComments(old, new *ast.File, deletes []ast.Node) string {
	have := map[string]int{}
	for _, g := range new.Comments {
		for _, c := range g.List {
			have[strings.TrimSpace(c.Text)]++
		}
	}
	in := newSpans(deletes)
	for _, g := range old.Comments {
		for _, c := range g.List {
			if in.contains(c) {
				continue
			}
			t := strings.TrimSpace(c.Text)
			if have[t] == 0 {
				return t
			}
			have[t]--
		}
	}
	return ""
}

// spans answers whether a node lies inside one of a set of nodes, in
// logarithmic time: a file can hold thousands of fixes' deletions and of
// comments.
type spans struct {
	starts []token.Pos
	ends   []token.Pos // ends[i]: the largest end of the spans up to i
}

func newSpans(nodes []ast.Node) *spans {
	sorted := append([]ast.Node(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Pos() < sorted[j].Pos() })
	s := &spans{}
	var end token.Pos
	for _, n := range sorted {
		end = max(end, n.End())
		s.starts = append(s.starts, n.Pos())
		s.ends = append(s.ends, end)
	}
	return s
}

// contains reports whether n lies inside one of the spans.
func (s *spans) contains(n ast.Node) bool {
	// The spans that start at or before n, and the furthest they reach.
	i := sort.Search(len(s.starts), func(i int) bool { return s.starts[i] > n.Pos() })
	return i > 0 && n.End() <= s.ends[i-1]
}

// effectSource returns the Source of summaries for the job's rules.
func (j *job) effectSource() effects.Source {
	if j.effects == nil {
		return effects.None
	}
	return j.effects
}

// localEffects returns the effect source of the package at cur: its own
// functions summarised from cur's syntax, once per content, the rest from
// the job's source.
func (cur *state) localEffects(j *job) effects.Source {
	if cur.local == nil {
		cur.local = effects.Local(cur.types, cur.info, cur.syntax, j.effectSource())
	}
	return cur.local
}

package rewrite

import (
	"fmt"
	"go/ast"
	"go/token"
	"slices"
	"sort"
	"strings"

	"github.com/unflake/unflake/rule"
)

// A tracker holds each rule's findings from its last look at a package, so
// that a finding never disappears without being fixed or reported: when
// one rule's fix moves code another rule reported (a test body wrapped in
// a bubble, a statement moved into a closure) and that rule no longer
// recognises it there, the finding is still reported, with the reason.
//
// A finding is followed by its rule, file and reported code
// (whitespace-normalised, so that re-indented code is the same code) and
// the test it is in. It
// has disappeared when its rule's next look at the package does not
// report that code while the file still holds it.
type tracker struct {
	rules   []*rule.Rule
	prev    map[*rule.Rule][]found     // the findings the rule left unfixed in its last look
	since   map[*rule.Rule][]string    // rules whose fixes changed the package since then
	carried map[string][]found         // by key: findings lost, or fixed by other rules' fixes
	touched map[string]map[string]bool // rule → where its fixes applied (touchKey)
}

// touchKey says where a fix applied: its file and top-level test ("" for
// a fix outside tests, which may reach every test of the package).
func touchKey(f *found) string {
	top, _, _ := strings.Cut(f.Test, "/")
	if !IsTestName(top) {
		top = ""
	}
	return f.File + "\x00" + top
}

// touching narrows the rules by to those whose fixes applied in f's test
// (or outside tests, in any file of the package), so that a reason names
// no rule that fixed nothing there; by when none is known to.
func (t *tracker) touching(by []string, f *found) []string {
	var out []string
	for _, name := range by {
		w := t.touched[name]
		if w[touchKey(f)] {
			out = append(out, name)
			continue
		}
		for k := range w {
			if strings.HasSuffix(k, "\x00") { // a fix outside tests
				out = append(out, name)
				break
			}
		}
	}
	if len(out) == 0 {
		return by
	}
	return out
}

func newTracker(rules []*rule.Rule) *tracker {
	return &tracker{rules: rules, prev: map[*rule.Rule][]found{}, since: map[*rule.Rule][]string{}, carried: map[string][]found{}, touched: map[string]map[string]bool{}}
}

// changedFor reports whether a fix changed the package since r last
// looked at it (or, before its first look, since the run began).
func (t *tracker) changedFor(r *rule.Rule) bool { return len(t.since[r]) > 0 }

// baseline records what r reports on the package as written, when other
// rules changed it before r's first look.
func (t *tracker) baseline(r *rule.Rule, fs []found) { t.prev[r] = fs }

// changed records that the fixes of by changed the package, where its
// findings fs say they applied.
func (t *tracker) changed(by *rule.Rule, fs []found) {
	if t.touched[by.Name] == nil {
		t.touched[by.Name] = map[string]bool{}
	}
	for i := range fs {
		if fs[i].Fixed {
			t.touched[by.Name][touchKey(&fs[i])] = true
		}
	}
	for _, r := range t.rules {
		if !slices.Contains(t.since[r], by.Name) {
			t.since[r] = append(t.since[r], by.Name)
		}
	}
}

// ran compares what r reported in its look at the package (fs, on the
// state cur with the contents current) with what it left unfixed in its
// last look, and keeps as lost each earlier finding whose code its
// function still holds but the rule no longer reports.
func (t *tracker) ran(r *rule.Rule, step stepResult, fset *token.FileSet, cur *state, current map[string]*content) {
	fs := step.findings
	if by := t.since[r]; len(by) > 0 {
		now := counts(fs)
		resolved := map[string][]found{}
		for _, f := range step.resolved {
			resolved[f.key()] = append(resolved[f.key()], f)
		}
		had := map[string]int{}  // earlier findings by key
		lost := map[string]int{} // of those, lost now
		for _, f := range t.prev[r] {
			k := f.key()
			had[k]++
			if had[k] <= now[k] {
				continue // still reported
			}
			if rs := resolved[k]; len(rs) > 0 {
				// The rule says the fixes since its last look made
				// this code fine: they fixed the finding.
				resolved[k] = rs[1:]
				f.Fixed, f.Reason, f.Blockers, f.Unproven, f.LostTo = true, "", nil, false, ""
				f.Fix = fmt.Sprintf("%s: %s", resolvesIt(t.touching(by, &f)), rs[0].Fix)
				t.carried[k] = append(t.carried[k], f)
				continue
			}
			// Have: the rule no longer reports this one. Lost if the
			// function holds the code more often than it is reported.
			if occurrences(f, fset, cur, current) <= now[k]+lost[k] {
				continue // the code is gone: a fix removed or changed it
			}
			lost[k]++
			f.Fixed, f.Fix, f.Unproven = false, "", false
			lostTo := t.touching(by, &f)
			f.LostTo = strings.Join(lostTo, ",")
			f.Reason = fmt.Sprintf("after %s, %s no longer recognises this code; it is left as it was", fixesOf(lostTo), r.Name)
			f.Blockers = nil
			t.carried[k] = append(t.carried[k], f)
		}
		// What the rule reports anew may be code it had lost sight of
		// in an earlier look: then it is reported again, not lost.
		for k, n := range now {
			if extra := n - had[k]; extra > 0 {
				c := t.carried[k]
				t.carried[k] = c[:max(len(c)-extra, 0)]
			}
		}
	}
	var left []found
	for _, f := range fs {
		if !f.Fixed {
			left = append(left, f)
		}
	}
	t.prev[r] = left
	t.since[r] = nil
}

// lostFindings returns the findings fixed by other rules' fixes, and the
// lost findings whose code the final package (cur, with the contents
// final) still holds beyond what the last round reports (last).
func (t *tracker) lostFindings(last []found, fset *token.FileSet, cur *state, final map[string]*content) []found {
	reported := counts(last)
	var keys []string
	for k := range t.carried {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the same findings kept whatever the map's order
	var out []found
	for _, k := range keys {
		room := -1 // copies of the code not reported otherwise, once counted
		for _, f := range t.carried[k] {
			if f.Fixed {
				out = append(out, f) // by another rule's fix
				continue
			}
			if room < 0 {
				room = max(occurrences(f, fset, cur, final)-reported[k], 0)
			}
			if room > 0 {
				room--
				out = append(out, f)
			}
		}
	}
	return out
}

// occurrences counts the copies of f's code in its function (its test's
// top-level function; the whole file outside functions) in state cur,
// whose files hold contents.
func occurrences(f found, fset *token.FileSet, cur *state, contents map[string]*content) int {
	c := contents[f.File]
	if c == nil || f.site == "" {
		return 0
	}
	text := c.normalised()
	top, _, _ := strings.Cut(f.Test, "/")
	if top != "" {
		text = ""
		for _, file := range cur.syntax {
			tf := fset.File(file.FileStart)
			if tf == nil || tf.Name() != f.File {
				continue
			}
			for _, d := range file.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || funcName(fd) != top {
					continue
				}
				from, to := tf.Offset(fd.Pos()), tf.Offset(fd.End())
				if to <= len(c.data) {
					text += normalise(string(c.data[from:to])) + "\n"
				}
			}
		}
	}
	return strings.Count(text, f.site)
}

// key identifies a finding's code across rules' fixes.
func (f *found) key() string {
	return f.Rule + "\x00" + f.File + "\x00" + f.Test + "\x00" + f.site
}

func counts(fs []found) map[string]int {
	m := map[string]int{}
	for i := range fs {
		m[fs[i].key()]++
	}
	return m
}

// resolvesIt says that the fixes of the rules by resolve a finding:
// "sleep's fix resolves it", "the fixes of sleep and leak resolve it".
func resolvesIt(by []string) string {
	if len(by) == 1 {
		return fixesOf(by) + " resolves it"
	}
	return fixesOf(by) + " resolve it"
}

// fixesOf names the fixes of the rules by: "sleep's fix", "the fixes of
// sleep and leak".
func fixesOf(by []string) string {
	if len(by) == 1 {
		return by[0] + "'s fix"
	}
	return "the fixes of " + strings.Join(by, " and ")
}

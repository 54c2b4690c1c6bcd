package rewrite

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/intent"
	"github.com/unflake/unflake/internal/output"
)

// keptError says a fix would leave a comment beside the code it changes
// that the change makes false: the comment says the code is meant as it
// is ("intentionally never closed", "must listen on exactly :48089"), or
// says it uses a real resource the change takes away ("dials it over
// TCP" above a listener made in-memory). Such a fix is held back like
// one that does not compile, and the other fixes are kept.
type keptError struct{ why string }

func (e *keptError) Error() string { return e.why }

// lineState is what a fix did to a line of the original file.
type lineState uint8

const (
	untouched lineState = iota
	moved               // the same code, re-indented: it now runs elsewhere (a new block, a closure)
	changed             // edited or removed
)

// guardClaims are the resources a comment may say the code uses.
var guardClaims = []intent.Claim{intent.Network, intent.Clock, intent.FileSystem}

// guard compares before, the content of file f (path), with after, the
// same file with fixes applied, and returns a keptError when a comment of
// before attached to what the fixes changed says something the change
// contradicts. A comment is attached to the line of code it ends right
// above (no blank line between: a doc comment, the comment above a
// statement) or that it trails; a doc comment is also attached to its
// function's whole signature. sites are the lines the fixes' findings
// report: a fix's own site counts even when the fix changes the lines
// around it (a Cleanup added after "f, err := os.Open(p) //
// intentionally never closed"), but a function's doc comment does not
// count for a site on its name (adding t.Parallel() leaves "uses the
// system clock, on purpose" true).
func guard(fset *token.FileSet, f *ast.File, path string, before, after []byte, sites map[int]bool) error {
	if len(before) == 0 {
		return nil // a new file: no comment of it was there before
	}
	a := output.SplitLines(string(before))
	state, newText := lineStates(a, output.SplitLines(string(after)))
	line := func(p token.Pos) int { return fset.Position(p).Line }
	docOf := map[*ast.CommentGroup]*ast.FuncDecl{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Doc != nil {
			docOf[fd.Doc] = fd
		}
	}
	for _, g := range f.Comments {
		at, st, site := 0, untouched, false
		if fd := docOf[g]; fd != nil {
			// The signature: from func to the body's brace.
			if fd.Body == nil {
				continue
			}
			at = line(fd.Pos())
			last := line(fd.Body.Lbrace)
			st = signatureState(a, state, newText, at, last, fset.Position(fd.Body.Lbrace).Column)
		} else {
			at = attachedLine(fset, g, a)
			if at == 0 {
				continue
			}
			st, site = state[at], sites[at]
		}
		if at > len(a) || st == untouched && !site {
			continue
		}
		text := intent.Prose(g) // without analysistest's expectations, which quote diagnostics
		var said string
		if st == changed || site {
			said, _ = intent.Keeps(text)
		}
		for _, c := range guardClaims {
			if said != "" {
				break
			}
			// The change takes the resource away from the line: the code
			// now runs elsewhere, or the new code does not name it.
			if intent.Code(a[at-1], c) && (st == moved || st == changed && !intent.Code(newText[at], c)) {
				said = intent.Uses(text, c)
			}
		}
		if said != "" {
			return &keptError{"a comment beside it says \"" + strings.Join(strings.Fields(said), " ") + "\" (" +
				filepath.Base(path) + ":" + strconv.Itoa(phraseLine(fset, g, said)) + "); left as is"}
		}
	}
	return nil
}

// signatureState returns what a change did to the signature on lines
// [at, last] of a, which ends at column brace of the last: changed only
// when the signature's text is not in the lines that replace it (a body
// written on the signature's line, spread over several by a fix, leaves
// the signature as it was).
func signatureState(a []string, state map[int]lineState, newText map[int]string, at, last, brace int) lineState {
	var sig, repl []string
	st := untouched
	for l := at; l <= last && l <= len(a); l++ {
		text := a[l-1]
		if l == last {
			text = text[:min(brace-1, len(text))]
		}
		sig = append(sig, text)
		st = max(st, state[l])
		if state[l] != untouched && (len(repl) == 0 || repl[len(repl)-1] != newText[l]) {
			repl = append(repl, newText[l])
		}
	}
	if st == changed && strings.Contains(normalise(strings.Join(repl, " ")), normalise(strings.Join(sig, " "))) {
		return untouched
	}
	return st
}

// attachedLine returns the line (1-based) of the code comment group g is
// attached to in the file whose lines are a: the line it trails, or the
// line right after it when that holds code; or 0.
func attachedLine(fset *token.FileSet, g *ast.CommentGroup, a []string) int {
	start := fset.Position(g.Pos())
	if start.Line <= len(a) && strings.TrimSpace(a[start.Line-1][:min(start.Column-1, len(a[start.Line-1]))]) != "" {
		return start.Line // a trailing comment
	}
	next := fset.Position(g.End()).Line + 1
	if next > len(a) {
		return 0
	}
	code := strings.TrimSpace(a[next-1])
	if code == "" || strings.HasPrefix(code, "//") || strings.HasPrefix(code, "/*") {
		return 0
	}
	return next
}

// lineStates diffs the lines a and b and returns, for each line of a
// (1-based), what the change did to it, and the new code that replaces
// it: its counterpart when a run of changed lines is replaced line for
// line, else the whole run's new lines.
func lineStates(a, b []string) (map[int]lineState, map[int]string) {
	state, newText := map[int]lineState{}, map[int]string{}
	var del, add []string
	var delAt []int
	flush := func() {
		added := map[string]bool{}
		for _, l := range add {
			added[strings.TrimSpace(l)] = true
		}
		all := strings.Join(add, "")
		for k, i := range delAt {
			t := strings.TrimSpace(del[k])
			switch {
			case t != "" && added[t]:
				state[i] = moved
			default:
				state[i] = changed
			}
			newText[i] = all
			if len(del) == len(add) {
				newText[i] = add[k]
			}
		}
		del, add, delAt = nil, nil, nil
	}
	for _, o := range output.LineOps(a, b) {
		switch o.Kind {
		case ' ':
			flush()
		case '-':
			del = append(del, o.Line)
			delAt = append(delAt, o.A+1)
		case '+':
			add = append(add, o.Line)
		}
	}
	flush()
	return state, newText
}

// phraseLine returns the line of the comment of g where said starts, or
// g's first line.
func phraseLine(fset *token.FileSet, g *ast.CommentGroup, said string) int {
	words := strings.Fields(said)
	for _, n := range []int{3, 1} {
		if len(words) == 0 {
			break
		}
		start := strings.Join(words[:min(n, len(words))], " ")
		for _, c := range g.List {
			if strings.Contains(strings.Join(strings.Fields(c.Text), " "), start) {
				return fset.Position(c.Pos()).Line
			}
		}
	}
	return fset.Position(g.Pos()).Line
}

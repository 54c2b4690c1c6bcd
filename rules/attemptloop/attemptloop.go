package attemptloop

import (
	"cmp"
	_ "embed"
	"fmt"
	"go/ast"
	"go/types"
	"strings"
	"time"

	"github.com/unflake/unflake/internal/contract"
	"github.com/unflake/unflake/internal/handover"
	"github.com/unflake/unflake/internal/intent"
	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/internal/polls"
	"github.com/unflake/unflake/rule"
)

//go:embed doc.md
var doc string

// Rule finds polls bounded by an attempt count in tests and bounds them by
// a deadline instead.
var Rule = &rule.Rule{
	Name:      "attemptloop",
	Doc:       doc,
	Default:   true,
	Flags:     rule.Flags("attemptloop", polls.Timeout),
	Prefilter: prefilter,
	Run:       run,
	Requires:  []*rule.Analysis{handover.Analysis, match.Decls},
	// sleep and wallclock run first: a poll they put in a synctest bubble
	// runs on the virtual clock, where its count is exact, and is left as
	// it is; a deadline written first would be kept inside their bubble.
	After: []string{"sleep", "wallclock"},
}

// prefilter: a file that waits through the time package names it in an
// import and calls Sleep or After.
func prefilter(src []byte, _ rule.Values) bool {
	return rule.ContainsAny(src, `"time"`, "`time`") && rule.ContainsAny(src, "Sleep", "After")
}

func run(pass *rule.Pass) error {
	timeout := polls.Timeout.Get(pass)
	hands := handover.Of(pass)
	bubbled := newBubbles(pass.TypesInfo, pass.AllFiles)
	pkg := &pkgState{}
	for _, f := range pass.Files {
		name := pass.Fset.File(f.Pos()).Name()
		if !strings.HasSuffix(name, "_test.go") || ast.IsGenerated(f) {
			continue
		}
		c := &checker{pass: pass, info: pass.TypesInfo, file: f, timeout: timeout, hands: hands, bubbles: bubbled, pkg: pkg}
		match.WithStack(f, func(n ast.Node, stack []ast.Node) bool {
			switch n.(type) {
			case *ast.ForStmt, *ast.RangeStmt:
				c.check(n.(ast.Stmt), stack)
			}
			return true
		})
	}
	return nil
}

// checker checks the loops of one file.
type checker struct {
	pass    *rule.Pass
	info    *types.Info
	file    *ast.File
	timeout time.Duration
	hands   *handover.Finder
	bubbles *bubbles
	pkg     *pkgState

	// serving names the server made from the code under test that the
	// loop acts checks sends to (network.go), or "".
	serving string
	// usesCode names the code under test the loop's test uses, or "".
	usesCode string
}

// pkgState holds what the checkers of a package's files share, made on
// first use (timing.go).
type pkgState struct {
	said      *intent.Package
	contracts *contract.Finder
}

// A loop is a loop bounded by a counter:
//
//	for i := lo; i < hi; i++ (or <=, i += 1)
//	for i := hi; i > lo; i-- (or >=, i -= 1)
//	for range hi, for i := range hi
//
// It runs hi-lo times (hi-lo+1 when incl).
type loop struct {
	stmt    ast.Stmt         // *ast.ForStmt or *ast.RangeStmt
	parent  ast.Node         // the node whose statement list or label holds stmt
	labeled *ast.LabeledStmt // the loop's label statement, or nil
	label   *types.Label     // the loop's label, or nil
	body    *ast.BlockStmt
	stack   []ast.Node // the nodes enclosing stmt, outermost first

	counter *types.Var // nil for `for range hi`
	outer   bool       // the counter is declared before the loop
	down    bool       // the counter counts down
	lo, hi  ast.Expr   // nil lo or hi: unknown (the counter starts at a value set before the loop)
	incl    bool

	// reeval is the bound the loop evaluates on every pass (hi counting up,
	// lo counting down, none for range loops), or nil.
	reeval ast.Expr

	// others are the conditions a compound loop condition tests besides
	// the counter (i < n && !done).
	others []ast.Expr
}

// A wait is a time.Sleep(d) or <-time.After(d) in a loop body.
type wait struct {
	d      ast.Expr
	nested bool // inside a loop nested in the body
}

// check reports the poll loop stmt, enclosed by stack, if it is one.
func (c *checker) check(stmt ast.Stmt, stack []ast.Node) {
	l := c.match(stmt, stack)
	if l == nil {
		return
	}
	// Have: a loop bounded by a counter.
	if c.inGoroutine(l) {
		return // background work (restart a server 3 times unless stopped), not a poll the test waits on
	}
	waits := c.waits(l.body)
	if len(waits) == 0 {
		return
	}
	// Have: a counted loop that waits.
	use := c.counterUse(l)
	if !c.successExit(l) && (len(l.others) == 0 || !use.ok()) {
		return // it does work on each pass and rests between passes: not a poll
	}
	hand := c.hands.Enclosing(l.stack)
	if hand.Kind == handover.Handed {
		return // the behaviour of the code under test (a handler simulating work), not a poll the test waits on
	}
	// Have: a poll bounded by an attempt count.
	if c.bubbles.encloses(l.stack) {
		// On a bubble's virtual clock the attempts take exactly their
		// waits, whatever the load: nothing flakes, and a deadline would
		// only let code that needs more attempts pass. Not a finding; a
		// finding made before another rule's fix moved the loop into a
		// bubble was fixed by that fix.
		pos := l.stmt.Pos()
		if l.labeled != nil {
			pos = l.labeled.Pos()
		}
		c.pass.Report(rule.Diagnostic{Pos: pos, End: l.body.Lbrace, Resolved: "the poll runs on a synctest bubble's virtual clock, where its attempts take exactly their waits"})
		return
	}
	// Below, everything is a finding; either it is fixed or it says why
	// not.
	d := rule.Diagnostic{
		Pos:     l.stmt.Pos(),
		End:     l.body.Lbrace,
		Message: c.message(l, waits),
	}
	if l.labeled != nil {
		d.Pos = l.labeled.Pos()
	}
	fix, why := c.fix(l, waits, use)
	if w := c.unwaitedWhy(l, waits); w != "" {
		if fix == nil {
			why += "; also: " + w
		}
		fix, why = nil, cmp.Or(why, w)
	}
	if hand.Kind == handover.Unknown {
		fix, why = nil, fmt.Sprintf("the loop is in a function literal that goes to %s; the rule cannot tell whether the test runs it or hands it to the code under test, whose behaviour the loop would then be", hand.To)
	}
	if fix == nil {
		d.NotFixed = why
	} else {
		d.Fix = fix
		fix.Hypothesis = rule.Unproven(c.lateHazard(l))
	}
	c.pass.Report(d)
}

// inGoroutine reports whether the function the loop is in is a func literal
// started as a goroutine (match.InGoroutine).
func (c *checker) inGoroutine(l *loop) bool { return match.InGoroutine(c.info, l.stack) }

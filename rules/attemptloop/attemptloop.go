package attemptloop

import (
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"go/version"
	"strconv"
	"strings"
	"time"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/handover"
	"github.com/unflake/unflake/internal/match"
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
	Flags:     newFlags(),
	Prefilter: prefilter,
	Run:       run,
}

// defaultPollTimeout is the least budget a rewritten poll gets.
const defaultPollTimeout = 10 * time.Second

const pollTimeoutFlag = "poll-timeout"

func newFlags() (fs flag.FlagSet) {
	fs.Init("attemptloop", flag.ContinueOnError)
	d := durationValue(defaultPollTimeout)
	fs.Var(&d, pollTimeoutFlag, "the least time a rewritten poll waits for its condition")
	return fs
}

// durationValue is a flag.Value holding a duration greater than zero.
// (Named like the flag package's own values, so help text calls it a
// duration.)
type durationValue time.Duration

func (d *durationValue) String() string { return time.Duration(*d).String() }
func (d *durationValue) Get() any       { return time.Duration(*d) }

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v <= 0 {
		return errors.New("must be greater than zero")
	}
	*d = durationValue(v)
	return nil
}

// pollTimeout reads the --poll-timeout flag of the running rule.
func pollTimeout(pass *rule.Pass) time.Duration {
	if pass.Rule == nil {
		return defaultPollTimeout
	}
	if f := pass.Rule.Flags.Lookup(pollTimeoutFlag); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			if d, ok := g.Get().(time.Duration); ok && d > 0 {
				return d
			}
		}
	}
	return defaultPollTimeout
}

// prefilter: a file that waits through the time package names it in an
// import and calls Sleep or After.
func prefilter(src []byte) bool {
	return rule.ContainsAny(src, `"time"`, "`time`") && rule.ContainsAny(src, "Sleep", "After")
}

func run(pass *rule.Pass) {
	timeout := pollTimeout(pass)
	hands := handover.New(pass.TypesInfo, pass.Fset, pass.AllFiles)
	for _, f := range pass.Files {
		name := pass.Fset.File(f.Pos()).Name()
		if !strings.HasSuffix(name, "_test.go") || ast.IsGenerated(f) {
			continue
		}
		c := &checker{pass: pass, info: pass.TypesInfo, file: f, timeout: timeout, hands: hands}
		match.WithStack(f, func(n ast.Node, stack []ast.Node) bool {
			switch n.(type) {
			case *ast.ForStmt, *ast.RangeStmt:
				c.check(n.(ast.Stmt), stack)
			}
			return true
		})
	}
}

// checker checks the loops of one file.
type checker struct {
	pass    *rule.Pass
	info    *types.Info
	file    *ast.File
	timeout time.Duration
	hands   *handover.Finder
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
	// Have: a poll bounded by an attempt count. Below, everything is a
	// finding; either it is fixed or it says why not.
	d := rule.Diagnostic{
		Pos:     l.stmt.Pos(),
		End:     l.body.Lbrace,
		Message: c.message(l, waits),
	}
	if l.labeled != nil {
		d.Pos = l.labeled.Pos()
	}
	fix, why := c.fix(l, waits, use)
	if hand.Kind == handover.Unknown {
		fix, why = nil, fmt.Sprintf("the loop is in a function literal that goes to %s; the rule cannot tell whether the test runs it or hands it to the code under test, whose behaviour the loop would then be", hand.To)
	}
	if fix == nil {
		d.NotFixed = why
	} else {
		d.Fix = fix
	}
	c.pass.Report(d)
}

// inGoroutine reports whether the function the loop is in is a func literal
// started as a goroutine: go func() { ... }(), wg.Go(func() { ... }) or
// errgroup's g.Go(func() error { ... }).
func (c *checker) inGoroutine(l *loop) bool {
	for k := len(l.stack) - 1; k >= 1; k-- {
		lit, ok := l.stack[k].(*ast.FuncLit)
		if !ok {
			continue
		}
		call, ok := l.stack[k-1].(*ast.CallExpr)
		if !ok {
			return false
		}
		if ast.Unparen(call.Fun) == lit {
			if k < 2 {
				return false
			}
			_, isGo := l.stack[k-2].(*ast.GoStmt)
			return isGo
		}
		return match.IsMethod(c.info, call, "sync", "Go") || match.IsMethod(c.info, call, "golang.org/x/sync/errgroup", "Go")
	}
	return false
}

// match returns the counted loop stmt, or nil.
func (c *checker) match(stmt ast.Stmt, stack []ast.Node) *loop {
	l := &loop{stmt: stmt, stack: append([]ast.Node(nil), stack...)}
	if len(stack) == 0 {
		return nil
	}
	l.parent = stack[len(stack)-1]
	if ls, ok := l.parent.(*ast.LabeledStmt); ok {
		l.labeled = ls
		l.label, _ = c.info.Defs[ls.Label].(*types.Label)
	}
	switch s := stmt.(type) {
	case *ast.ForStmt:
		l.body = s.Body
		if !c.matchFor(l, s) {
			return nil
		}
	case *ast.RangeStmt:
		l.body = s.Body
		if !c.matchRange(l, s) {
			return nil
		}
	}
	if l.lo != nil && l.hi != nil {
		if n, ok := c.count(l); ok && n <= 0 {
			return nil // the body never runs
		}
	}
	return l
}

func (c *checker) matchFor(l *loop, s *ast.ForStmt) bool {
	// The post statement names the counter and its direction.
	var id *ast.Ident
	switch post := s.Post.(type) {
	case *ast.IncDecStmt:
		id, _ = ast.Unparen(post.X).(*ast.Ident)
		l.down = post.Tok == token.DEC
	case *ast.AssignStmt:
		if len(post.Lhs) != 1 || len(post.Rhs) != 1 || (post.Tok != token.ADD_ASSIGN && post.Tok != token.SUB_ASSIGN) {
			return false
		}
		if n, ok := match.ConstInt(c.info, post.Rhs[0]); !ok || n != 1 {
			return false
		}
		id, _ = ast.Unparen(post.Lhs[0]).(*ast.Ident)
		l.down = post.Tok == token.SUB_ASSIGN
	}
	if id == nil {
		return false
	}
	l.counter, _ = c.info.Uses[id].(*types.Var)
	if l.counter == nil || !isInteger(l.counter.Type()) {
		return false
	}
	// Have: a post statement stepping an integer counter by one.

	var start ast.Expr
	switch init := s.Init.(type) {
	case nil:
		l.outer = true
	case *ast.AssignStmt:
		if len(init.Lhs) != 1 || len(init.Rhs) != 1 {
			return false
		}
		lid, ok := init.Lhs[0].(*ast.Ident)
		if !ok || c.info.ObjectOf(lid) != l.counter {
			return false
		}
		switch init.Tok {
		case token.DEFINE:
		case token.ASSIGN:
			l.outer = true
		default:
			return false
		}
		start = init.Rhs[0]
	default:
		return false
	}
	// Have: the counter's start value, or nil if it is set before the loop.

	var bound ast.Expr
	var op token.Token
	for _, e := range match.Conjuncts(s.Cond) {
		if bound == nil {
			if b, o, ok := c.comparison(e, l.counter); ok {
				bound, op = b, o
				continue
			}
		}
		l.others = append(l.others, e)
	}
	if bound == nil || c.mentions(bound, l.counter) || start != nil && c.mentions(start, l.counter) {
		return false
	}
	switch {
	case !l.down && (op == token.LSS || op == token.LEQ):
		l.lo, l.hi, l.reeval = start, bound, bound
	case l.down && (op == token.GTR || op == token.GEQ):
		l.lo, l.hi, l.reeval = bound, start, bound
	default:
		return false // the counter moves away from its bound
	}
	l.incl = op == token.LEQ || op == token.GEQ
	// Have: for i := lo; i < hi; i++ or one of its relatives.
	return true
}

func (c *checker) matchRange(l *loop, s *ast.RangeStmt) bool {
	if s.Value != nil || !isInteger(c.info.TypeOf(s.X)) {
		return false
	}
	if id, ok := s.Key.(*ast.Ident); ok && id.Name != "_" {
		l.counter, _ = c.info.ObjectOf(id).(*types.Var)
		l.outer = s.Tok == token.ASSIGN
	} else if s.Key != nil && !ok {
		return false // for x.f = range n
	}
	// Have: for range hi, or for i := range hi.
	l.lo = zero
	l.hi = s.X
	return true
}

// comparison matches e against `counter op bound` or `bound op counter` and
// returns the bound and the operator with the counter on the left.
func (c *checker) comparison(e ast.Expr, counter *types.Var) (ast.Expr, token.Token, bool) {
	b, ok := ast.Unparen(e).(*ast.BinaryExpr)
	if !ok {
		return nil, 0, false
	}
	flip := map[token.Token]token.Token{token.LSS: token.GTR, token.LEQ: token.GEQ, token.GTR: token.LSS, token.GEQ: token.LEQ}
	if _, ok := flip[b.Op]; !ok {
		return nil, 0, false
	}
	if c.isVar(b.X, counter) {
		return b.Y, b.Op, true
	}
	if c.isVar(b.Y, counter) {
		return b.X, flip[b.Op], true
	}
	return nil, 0, false
}

func (c *checker) isVar(e ast.Expr, v *types.Var) bool {
	id, ok := ast.Unparen(e).(*ast.Ident)
	return ok && c.info.Uses[id] == v
}

// mentions reports whether n refers to v.
func (c *checker) mentions(n ast.Node, v *types.Var) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && c.info.ObjectOf(id) == v {
			found = true
		}
		return !found
	})
	return found
}

func isInteger(t types.Type) bool {
	if t == nil {
		return false
	}
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&types.IsInteger != 0
}

// waits returns the waits of a loop body: time.Sleep(d) and <-time.After(d)
// statements and select cases <-time.After(d) of a select without default,
// outside func literals (a goroutine's sleep is not the loop's).
func (c *checker) waits(body *ast.BlockStmt) []wait {
	var out []wait
	match.WithStack(body, func(n ast.Node, stack []ast.Node) bool {
		es, ok := n.(*ast.ExprStmt)
		if !ok {
			_, lit := n.(*ast.FuncLit)
			return !lit
		}
		d := c.waitDuration(es.X)
		if d == nil {
			return true
		}
		if cc, ok := stack[len(stack)-1].(*ast.CommClause); ok && cc.Comm == es {
			sel := stack[len(stack)-3].(*ast.SelectStmt)
			for _, s := range sel.Body.List {
				if s.(*ast.CommClause).Comm == nil {
					return true // the select does not wait: it has a default case
				}
			}
		}
		nested := false
		for _, s := range stack[1:] {
			switch s.(type) {
			case *ast.ForStmt, *ast.RangeStmt:
				nested = true
			}
		}
		out = append(out, wait{d: d, nested: nested})
		return true
	})
	return out
}

// waitDuration returns d if e is time.Sleep(d) or <-time.After(d).
func (c *checker) waitDuration(e ast.Expr) ast.Expr {
	e = ast.Unparen(e)
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.ARROW {
		if call, ok := ast.Unparen(u.X).(*ast.CallExpr); ok && len(call.Args) == 1 && match.IsPkgFunc(c.info, call, "time", "After") {
			return call.Args[0]
		}
		return nil
	}
	if call, ok := e.(*ast.CallExpr); ok && len(call.Args) == 1 && match.IsPkgFunc(c.info, call, "time", "Sleep") {
		return call.Args[0]
	}
	return nil
}

// successExit reports whether the loop body can leave the loop other than
// by failing the test: a break, return or goto leaving the loop whose
// branch does not call t.Error, t.Fatal, t.Skip or their relatives.
func (c *checker) successExit(l *loop) bool {
	found := false
	match.WithStack(l.body, func(n ast.Node, stack []ast.Node) bool {
		if found {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // its return and branches are its own
		case *ast.BranchStmt:
			found = c.leaves(l, n, stack) && !c.failure(l, n, stack)
		case *ast.ReturnStmt:
			found = !c.failure(l, n, stack)
		}
		return !found
	})
	return found
}

// leaves reports whether the branch statement b, enclosed by stack within
// the loop body (stack[0] is the body), leaves the loop.
func (c *checker) leaves(l *loop, b *ast.BranchStmt, stack []ast.Node) bool {
	inside := func(lab *types.Label) bool {
		return lab != nil && l.stmt.Pos() <= lab.Pos() && lab.Pos() < l.stmt.End()
	}
	var lab *types.Label
	if b.Label != nil {
		lab, _ = c.info.Uses[b.Label].(*types.Label)
		if lab == nil {
			return false
		}
	}
	switch b.Tok {
	case token.BREAK:
		if lab != nil {
			return lab == l.label || !inside(lab)
		}
		for _, s := range stack[1:] {
			switch s.(type) {
			case *ast.ForStmt, *ast.RangeStmt, *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.SelectStmt:
				return false // it breaks out of s
			}
		}
		return true
	case token.CONTINUE:
		return lab != nil && lab != l.label && !inside(lab)
	case token.GOTO:
		return !inside(lab)
	}
	return false
}

// failureMethods are the testing methods that mark a branch as failing (or
// skipping) the test.
var failureMethods = []string{"Error", "Errorf", "Fatal", "Fatalf", "Fail", "FailNow", "Skip", "Skipf", "SkipNow"}

// failure reports whether the exit statement exit, enclosed by stack within
// the loop body, is a failure exit. Its branch is the blocks between it and
// the loop body (the body itself if exit is directly in it). The exit is a
// failure if a simple statement of its branch calls a testing failure
// method or builds an error (errors.New, fmt.Errorf, errors.Join: an error
// returned, sent or stored), or if it lies in the then branch of an
// `if err != nil`.
func (c *checker) failure(l *loop, exit ast.Stmt, stack []ast.Node) bool {
	var blocks [][]ast.Stmt
	for i, s := range stack[1:] {
		switch s := s.(type) {
		case *ast.BlockStmt:
			blocks = append(blocks, s.List)
		case *ast.CaseClause:
			blocks = append(blocks, s.Body)
		case *ast.CommClause:
			blocks = append(blocks, s.Body)
		case *ast.IfStmt:
			if i+2 < len(stack) && stack[i+2] == s.Body && c.testsErrNotNil(s.Cond) {
				return true
			}
		}
	}
	if len(blocks) == 0 {
		blocks = append(blocks, l.body.List)
	}
	for _, list := range blocks {
		for _, s := range list {
			switch s.(type) {
			case *ast.ExprStmt, *ast.AssignStmt, *ast.SendStmt, *ast.ReturnStmt, *ast.DeclStmt:
				if c.failing(s) {
					return true
				}
			}
		}
	}
	return false
}

// failing reports whether the simple statement s calls a testing failure
// method or builds an error, outside func literals.
func (c *checker) failing(s ast.Stmt) bool {
	return anyCall(s, func(call *ast.CallExpr) bool {
		return match.IsMethod(c.info, call, "testing", failureMethods...) ||
			match.IsPkgFunc(c.info, call, "errors", "New", "Join") ||
			match.IsPkgFunc(c.info, call, "fmt", "Errorf")
	})
}

// anyCall reports whether n holds a call, outside func literals, for which
// pred is true.
func anyCall(n ast.Node, pred func(*ast.CallExpr) bool) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			found = found || pred(n)
		}
		return !found
	})
	return found
}

// testsErrNotNil reports whether cond is, or has a conjunct, `x != nil`
// (or `nil != x`) with x an error.
func (c *checker) testsErrNotNil(cond ast.Expr) bool {
	errType := types.Universe.Lookup("error").Type().Underlying().(*types.Interface)
	for _, e := range match.Conjuncts(cond) {
		b, ok := ast.Unparen(e).(*ast.BinaryExpr)
		if !ok || b.Op != token.NEQ {
			continue
		}
		x, y := b.X, b.Y
		if c.isNil(x) {
			x, y = y, x
		}
		if !c.isNil(y) {
			continue
		}
		if t := c.info.TypeOf(x); t != nil && types.Implements(t, errType) {
			return true
		}
	}
	return false
}

func (c *checker) isNil(e ast.Expr) bool {
	id, ok := ast.Unparen(e).(*ast.Ident)
	if !ok {
		return false
	}
	_, isNil := c.info.Uses[id].(*types.Nil)
	return isNil
}

// A counterUse says how a loop body uses the loop counter.
type counterUse struct {
	used   bool   // the body refers to the counter
	logged bool   // only in the arguments of logging calls
	why    string // how it uses it otherwise: "as an index", ...
}

// ok reports whether the counter can be dropped or kept as it is.
func (u counterUse) ok() bool { return u.why == "" }

// logCall reports whether call only writes a message: t.Log, t.Errorf, ...
// (the counter in its arguments numbers the attempt) or fmt or log Print*.
func (c *checker) logCall(call *ast.CallExpr) bool {
	return match.IsMethod(c.info, call, "testing", "Log", "Logf", "Error", "Errorf", "Fatal", "Fatalf", "Skip", "Skipf") ||
		match.IsPkgFunc(c.info, call, "fmt", "Print", "Printf", "Println") ||
		match.IsPkgFunc(c.info, call, "log", "Print", "Printf", "Println") ||
		match.IsMethod(c.info, call, "log", "Print", "Printf", "Println")
}

// counterUse classifies the uses of the counter in the loop body.
func (c *checker) counterUse(l *loop) counterUse {
	var u counterUse
	if l.counter == nil {
		return u
	}
	match.WithStack(l.body, func(n ast.Node, stack []ast.Node) bool {
		if u.why != "" {
			return false
		}
		id, ok := n.(*ast.Ident)
		if !ok || c.info.Uses[id] != l.counter {
			return true
		}
		u.used = true
		if c.logged(id, stack) {
			u.logged = true
		} else {
			u.why = c.useKind(id, stack)
		}
		return true
	})
	if u.why != "" {
		u.logged = false
	}
	return u
}

// climb returns the outermost expression that holds id through arithmetic
// and conversions only, and the node above it.
func (c *checker) climb(id *ast.Ident, stack []ast.Node) (ast.Expr, ast.Node) {
	var child ast.Expr = id
	for i := len(stack) - 1; i >= 0; i-- {
		switch p := stack[i].(type) {
		case *ast.ParenExpr:
			child = p
			continue
		case *ast.UnaryExpr:
			if p.Op != token.AND && p.Op != token.ARROW {
				child = p
				continue
			}
		case *ast.BinaryExpr:
			if p.Op.Precedence() >= 4 { // arithmetic, not a comparison
				child = p
				continue
			}
		case *ast.CallExpr:
			if tv, ok := c.info.Types[p.Fun]; ok && tv.IsType() && p.Fun != child {
				child = p
				continue
			}
		}
		return child, stack[i]
	}
	return child, nil
}

// logged reports whether the use id is an argument (or part of one, through
// arithmetic) of a logging call.
func (c *checker) logged(id *ast.Ident, stack []ast.Node) bool {
	e, p := c.climb(id, stack)
	call, ok := p.(*ast.CallExpr)
	return ok && call.Fun != e && c.logCall(call)
}

// useKind describes a use of the counter that is not logging.
func (c *checker) useKind(id *ast.Ident, stack []ast.Node) string {
	e, p := c.climb(id, stack)
	switch p := p.(type) {
	case *ast.IndexExpr:
		if p.Index == e {
			return "as an index"
		}
	case *ast.IndexListExpr, *ast.SliceExpr:
		return "as an index"
	case *ast.AssignStmt:
		for _, l := range p.Lhs {
			if l == e {
				return "assigned"
			}
		}
		if len(p.Lhs) == 1 {
			return "assigned to " + types.ExprString(p.Lhs[0])
		}
		return "in an assignment"
	case *ast.IncDecStmt:
		return "assigned"
	case *ast.BinaryExpr:
		return "in a comparison"
	case *ast.CallExpr:
		if c.waitDuration(p) != nil || match.IsPkgFunc(c.info, p, "time", "After") {
			return "in a wait duration"
		}
		return "as an argument of " + types.ExprString(p.Fun)
	case *ast.CompositeLit, *ast.KeyValueExpr:
		return "in a composite literal"
	case *ast.ReturnStmt:
		return "as a result"
	}
	return "in " + types.ExprString(e)
}

// count returns the constant attempt count of l, if it is one.
func (c *checker) count(l *loop) (int64, bool) {
	if l.lo == nil || l.hi == nil {
		return 0, false
	}
	lo, ok1 := c.constBound(l.lo)
	hi, ok2 := c.constBound(l.hi)
	if !ok1 || !ok2 {
		return 0, false
	}
	n := hi - lo
	if (hi >= lo) != (n >= 0) {
		return 0, false // overflow
	}
	if l.incl {
		n++
	}
	return n, true
}

// constWaits splits the waits into the sum of the constant ones and the
// others.
func (c *checker) constWaits(waits []wait) (sum time.Duration, others []ast.Expr, ok bool) {
	for _, w := range waits {
		d, isConst := match.ConstDuration(c.info, w.d)
		if !isConst {
			others = append(others, w.d)
			continue
		}
		s, overflow := match.AddDuration(sum, d)
		if overflow {
			return 0, nil, false
		}
		sum = s
	}
	return sum, others, true
}

// message says what the poll is: "poll bounded by 20 attempts of 5ms
// (100ms) runs out under load".
func (c *checker) message(l *loop, waits []wait) string {
	n, constCount := c.count(l)
	sum, others, ok := c.constWaits(waits)
	for _, w := range waits {
		ok = ok && !w.nested // the time a pass takes is not known
	}
	switch {
	case !ok && constCount:
		return fmt.Sprintf("poll bounded by %s runs out under load", plural(n, "attempt"))
	case !ok || l.lo == nil || l.hi == nil:
		return "poll bounded by an attempt count runs out under load"
	case !constCount:
		return fmt.Sprintf("poll bounded by an attempt count (%s × %s) runs out under load", parenText(l.hi, c.countText(l)), waitText(sum, others))
	case len(others) > 0:
		return fmt.Sprintf("poll bounded by %s of %s runs out under load", plural(n, "attempt"), waitText(sum, others))
	}
	if total, overflow := match.MulDuration(sum, n); !overflow {
		return fmt.Sprintf("poll bounded by %s of %s (%s) runs out under load", plural(n, "attempt"), match.FormatDuration(sum), match.FormatDuration(total))
	}
	return fmt.Sprintf("poll bounded by %s of %s runs out under load", plural(n, "attempt"), match.FormatDuration(sum))
}

func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.FormatInt(n, 10) + " " + word + "s"
}

// countText writes the attempt count of l as an expression.
func (c *checker) countText(l *loop) string {
	if n, ok := c.count(l); ok {
		return strconv.FormatInt(n, 10)
	}
	lo, loConst := c.constBound(l.lo)
	hi, hiConst := c.constBound(l.hi)
	inc := int64(0)
	if l.incl {
		inc = 1
	}
	switch {
	case loConst:
		return types.ExprString(l.hi) + offsetText(inc-lo)
	case hiConst:
		return strconv.FormatInt(hi+inc, 10) + "-" + exprText(l.lo, true)
	default:
		return types.ExprString(l.hi) + "-" + exprText(l.lo, true) + offsetText(inc)
	}
}

// zero is the start of a range loop's counter.
var zero = &ast.BasicLit{Kind: token.INT, Value: "0"}

// constBound returns the value of a loop bound if it is constant.
func (c *checker) constBound(e ast.Expr) (int64, bool) {
	if e == zero {
		return 0, true
	}
	return match.ConstInt(c.info, e)
}

func offsetText(k int64) string {
	switch {
	case k > 0:
		return "+" + strconv.FormatInt(k, 10)
	case k < 0:
		return strconv.FormatInt(k, 10)
	}
	return ""
}

// exprText writes e, in parentheses if paren and it is a binary expression.
func exprText(e ast.Expr, paren bool) string {
	if _, ok := ast.Unparen(e).(*ast.BinaryExpr); ok && paren {
		return "(" + types.ExprString(e) + ")"
	}
	return types.ExprString(e)
}

// parenText returns text, the rendering of a count whose upper bound is
// hi, in parentheses if it is more than hi: "n+1" gives "(n+1)".
func parenText(hi ast.Expr, text string) string {
	if text != types.ExprString(hi) {
		return "(" + text + ")"
	}
	return text
}

// fix returns the fix for the poll l, or why there is none.
func (c *checker) fix(l *loop, waits []wait, use counterUse) (*rule.Fix, string) {
	if len(l.others) > 0 {
		var others []string
		for _, o := range l.others {
			others = append(others, types.ExprString(o))
		}
		return nil, "the loop condition also tests " + strings.Join(others, " && ")
	}
	// Have: a condition that only compares the counter with its bound.

	if l.outer {
		if c.usedAfter(l) {
			return nil, "the loop counter is used after the loop"
		}
		return nil, "the loop counter is declared outside the loop"
	}
	if !use.ok() {
		if use.why == "assigned" {
			return nil, "the loop counter is assigned in the body"
		}
		return nil, "the loop counter is used in the body (" + use.why + ")"
	}
	keep := use.logged
	if keep && l.down {
		return nil, "the loop counter counts down the attempts left and the body logs it"
	}
	if _, isRange := l.stmt.(*ast.RangeStmt); keep && isRange && !types.Identical(l.counter.Type(), types.Typ[types.Int]) {
		return nil, "the loop counter is not an int"
	}
	// Have: a counter the body does not use, or only logs counting up.

	for _, w := range waits {
		if w.nested {
			return nil, "the loop also waits inside a nested loop"
		}
	}
	sum, others, ok := c.constWaits(waits)
	if !ok {
		return nil, "the waits add up to more than a time.Duration holds"
	}
	n, constCount := c.count(l)
	budget := time.Duration(0)
	if constCount && len(others) == 0 {
		total, overflow := match.MulDuration(sum, n)
		if overflow {
			return nil, "the attempts add up to more than a time.Duration holds"
		}
		budget = max(c.timeout, total)
		if total < budget && !c.exhaustionFails(l) {
			return nil, notAFailure
		}
	} else {
		if !c.exhaustionFails(l) {
			return nil, notAFailure
		}
		// Have: a budget computed at run time. Its operands must be
		// evaluated once, before the loop, to the values the loop sees.
		for _, b := range []ast.Expr{l.lo, l.hi} {
			if _, ok := c.constBound(b); ok {
				continue
			}
			if !match.IsPure(c.info, b) {
				return nil, "the attempt count " + types.ExprString(b) + " is not a simple expression"
			}
		}
		if l.reeval != nil && match.Modifies(c.info, l.body, match.Vars(c.info, l.reeval)) != nil {
			return nil, "the attempt count " + types.ExprString(l.reeval) + " is changed in the body"
		}
		for _, o := range others {
			if !match.IsPure(c.info, o) {
				return nil, "the wait duration " + types.ExprString(o) + " is not a simple expression"
			}
			vars := match.Vars(c.info, o)
			for _, v := range vars {
				if l.stmt.Pos() <= v.Pos() && v.Pos() < l.stmt.End() {
					return nil, "the wait duration " + types.ExprString(o) + " is computed in the loop"
				}
			}
			if match.Modifies(c.info, l.body, vars) != nil {
				return nil, "the wait duration " + types.ExprString(o) + " is changed in the body"
			}
		}
		v := c.pass.FileVersion(c.file)
		if !version.IsValid(v) {
			return nil, "the budget needs max (go1.21) and the file's go version is unknown"
		}
		if version.Compare(v, "go1.21") < 0 {
			return nil, "the budget needs max, which needs go1.21, and the file is " + v
		}
		if !c.resolvesTo(l, "max", types.Universe.Lookup("max")) {
			return nil, "max is shadowed at the loop"
		}
	}
	// Have: a budget: constant, or max(timeout, count × waits).

	if why := c.timePackage(l); why != "" {
		return nil, why
	}
	name := c.freshName(l, "deadline")

	var deletes []ast.Node
	msg := fmt.Sprintf("bound the poll by a %s deadline", match.FormatDuration(budget))
	if budget == 0 {
		count := strconv.FormatInt(n, 10)
		if !constCount {
			count = parenText(l.hi, c.countText(l))
		}
		msg = fmt.Sprintf("bound the poll by a deadline of max(%s, %s × %s)", match.FormatDuration(c.timeout), count, waitText(sum, others))
	}
	if keep {
		msg += ", keeping the attempt counter"
	}
	switch s := l.stmt.(type) {
	case *ast.ForStmt:
		deletes = append(deletes, s.Cond)
		if !keep {
			deletes = append(deletes, s.Init, s.Post) // both set: the counter is declared in the loop
		}
	case *ast.RangeStmt:
		deletes = append(deletes, s.X)
		if s.Key != nil {
			deletes = append(deletes, s.Key)
		}
	}
	apply := func() {
		var budgetExpr dst.Expr
		if budget != 0 {
			budgetExpr = match.DurationExpr(budget)
		} else {
			budgetExpr = &dst.CallExpr{
				Fun:  dst.NewIdent("max"),
				Args: []dst.Expr{match.DurationExpr(c.timeout), c.product(l, n, constCount, sum, others)},
			}
		}
		c.rewrite(l, name, budgetExpr, keep)
	}
	return &rule.Fix{Message: msg, Apply: apply, Deletes: deletes}, ""
}

// notAFailure is the reason to leave a poll alone whose exhaustion the test
// tolerates: it may be a check that something does not happen, which passes
// by running out of attempts, and a longer deadline would make it slower.
const notAFailure = "running out of attempts does not fail the test, so a longer deadline could slow down a test that passes that way"

// exhaustionFails reports whether the code right after the loop fails the
// test (or makes a helper return a failure) when the loop runs out of
// attempts: the first statement after the loop other than up to two plain
// calls (mu.Unlock(), cancel()) fails
// (calls t.Fatal and relatives, a testify assertion, panic, log.Fatal,
// builds an error, or returns a value other than nil or true), directly or
// in the body of an if whose condition is not one the loop exits on (`if
// bad() { break }` followed by `if bad() { t.Fatal() }` is a check that
// something stays false, which passes by running out of attempts).
func (c *checker) exhaustionFails(l *loop) bool {
	list, at := c.enclosingList(l)
	exits := c.exitConditions(l)
	for k := at + 1; k < len(list) && k <= at+3; k++ {
		switch s := list[k].(type) {
		case *ast.IfStmt:
			return !exits[types.ExprString(s.Cond)] && c.blockFails(s.Body)
		case *ast.ExprStmt:
			if c.stmtFails(s) {
				return true
			}
			// A call such as mu.Unlock() or cancel(): look further.
		default:
			return c.stmtFails(s)
		}
	}
	return false
}

// enclosingList returns the statement list holding the loop (or its label)
// and the loop's index in it, or nil.
func (c *checker) enclosingList(l *loop) ([]ast.Stmt, int) {
	stmt := ast.Stmt(l.stmt)
	k := len(l.stack) - 1
	if l.labeled != nil {
		stmt, k = l.labeled, k-1
	}
	if k < 0 {
		return nil, 0
	}
	var list []ast.Stmt
	switch p := l.stack[k].(type) {
	case *ast.BlockStmt:
		list = p.List
	case *ast.CaseClause:
		list = p.Body
	case *ast.CommClause:
		list = p.Body
	}
	for i, s := range list {
		if s == stmt {
			return list, i
		}
	}
	return nil, 0
}

// exitConditions returns the conditions (as text) of the if statements
// whose then branch holds one of the loop's success exits.
func (c *checker) exitConditions(l *loop) map[string]bool {
	conds := map[string]bool{}
	match.WithStack(l.body, func(n ast.Node, stack []ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		exit := false
		switch n := n.(type) {
		case *ast.BranchStmt:
			exit = c.leaves(l, n, stack) && !c.failure(l, n, stack)
		case *ast.ReturnStmt:
			exit = !c.failure(l, n, stack)
		}
		if exit {
			for i := len(stack) - 1; i >= 0; i-- {
				if ifs, ok := stack[i].(*ast.IfStmt); ok {
					conds[types.ExprString(ifs.Cond)] = true
					break
				}
			}
		}
		return true
	})
	return conds
}

// blockFails reports whether a statement of b, outside func literals,
// fails as stmtFails says.
func (c *checker) blockFails(b *ast.BlockStmt) bool {
	found := false
	ast.Inspect(b, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case ast.Stmt:
			if _, ok := n.(*ast.BlockStmt); !ok && !found {
				found = c.stmtFails(n)
			}
		}
		return !found
	})
	return found
}

// stmtFails reports whether the statement s fails the test or returns a
// failure (see exhaustionFails).
func (c *checker) stmtFails(s ast.Stmt) bool {
	if ret, ok := s.(*ast.ReturnStmt); ok {
		for _, r := range ret.Results {
			if id, ok := ast.Unparen(r).(*ast.Ident); !ok || (id.Name != "nil" && id.Name != "true") {
				return true
			}
		}
		return false
	}
	switch s.(type) {
	case *ast.ExprStmt, *ast.AssignStmt, *ast.SendStmt, *ast.DeclStmt:
	default:
		return false
	}
	return c.failing(s) || anyCall(s, func(call *ast.CallExpr) bool {
		if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok && id.Name == "panic" {
			_, builtin := c.info.Uses[id].(*types.Builtin)
			return builtin
		}
		fn := match.Callee(c.info, call)
		if fn == nil || fn.Pkg() == nil {
			return false
		}
		path := fn.Pkg().Path()
		return strings.HasSuffix(path, "testify/require") || strings.HasSuffix(path, "testify/assert") ||
			path == "log" && strings.HasPrefix(fn.Name(), "Fatal")
	})
}

func waitText(sum time.Duration, others []ast.Expr) string {
	var each []string
	for _, o := range others {
		each = append(each, exprText(o, len(others) > 1 || sum != 0))
	}
	if sum != 0 || len(others) == 0 {
		each = append(each, match.FormatDuration(sum))
	}
	if len(each) == 1 {
		return each[0]
	}
	return "(" + strings.Join(each, " + ") + ")"
}

// usedAfter reports whether the counter, declared outside the loop, is
// used after it.
func (c *checker) usedAfter(l *loop) bool {
	var scope ast.Node = c.file
	for _, n := range l.stack {
		switch n.(type) {
		case *ast.FuncDecl, *ast.FuncLit:
			scope = n
		}
	}
	found := false
	ast.Inspect(scope, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Pos() >= l.stmt.End() && c.info.Uses[id] == l.counter {
			found = true
		}
		return !found
	})
	return found
}

// scope returns the scope the loop statement is in.
func (c *checker) scope(l *loop) *types.Scope {
	s := c.pass.Pkg.Scope().Innermost(l.stmt.Pos())
	if s != nil && s == c.info.Scopes[l.stmt] {
		s = s.Parent()
	}
	return s
}

// resolvesTo reports whether name denotes obj at the loop.
func (c *checker) resolvesTo(l *loop, name string, obj types.Object) bool {
	s := c.scope(l)
	if s == nil {
		return false
	}
	_, got := s.LookupParent(name, l.stmt.Pos())
	return got == obj
}

// timePackage checks that the fix can name the time package at the loop:
// the file imports it once, under a name that is not shadowed there. It
// returns why not, or "".
func (c *checker) timePackage(l *loop) string {
	name, n := "", 0
	for _, imp := range c.file.Imports {
		if path, err := strconv.Unquote(imp.Path.Value); err != nil || path != "time" {
			continue
		}
		n++
		name = "time"
		if imp.Name != nil {
			name = imp.Name.Name
		}
	}
	switch {
	case n == 0:
		return "the file does not import time"
	case n > 1:
		return "the file imports time more than once"
	case name == ".":
		return "the file dot-imports time"
	case name == "_":
		return "the file imports time only for its side effects"
	}
	s := c.scope(l)
	if s == nil {
		return "the loop's scope is unknown"
	}
	_, obj := s.LookupParent(name, l.stmt.Pos())
	if pn, ok := obj.(*types.PkgName); !ok || pn.Imported().Path() != "time" {
		if name == "time" {
			return "time is shadowed at the loop"
		}
		return name + " (the time package) is shadowed at the loop"
	}
	return ""
}

// freshName returns base, or base2, base3, ... if base is used in the loop
// body, is the counter's name, or is declared in scope at the loop.
func (c *checker) freshName(l *loop, base string) string {
	used := map[string]bool{}
	ast.Inspect(l.body, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			used[id.Name] = true
		}
		return true
	})
	if l.counter != nil {
		used[l.counter.Name()] = true
	}
	s := c.scope(l)
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name += strconv.Itoa(i)
		}
		if used[name] {
			continue
		}
		if s != nil {
			if _, obj := s.LookupParent(name, l.stmt.Pos()); obj != nil {
				continue
			}
		}
		return name
	}
}

// product returns count × waits as a dst expression of type time.Duration:
// 20*interval, time.Duration(n)*5*time.Millisecond,
// time.Duration(n)*(interval+time.Millisecond).
func (c *checker) product(l *loop, n int64, constCount bool, sum time.Duration, others []ast.Expr) dst.Expr {
	var count dst.Expr
	if constCount {
		count = intLit(n)
	} else {
		count = &dst.CallExpr{Fun: &dst.Ident{Path: "time", Name: "Duration"}, Args: []dst.Expr{c.countExpr(l)}}
	}
	if len(others) == 0 {
		// Have: a constant wait: count * k * unit.
		d := match.DurationExpr(sum)
		if b, ok := d.(*dst.BinaryExpr); ok {
			return &dst.BinaryExpr{X: &dst.BinaryExpr{X: count, Op: token.MUL, Y: b.X}, Op: token.MUL, Y: b.Y}
		}
		return &dst.BinaryExpr{X: count, Op: token.MUL, Y: d}
	}
	var waits dst.Expr
	for _, o := range others {
		w := c.clone(o)
		if waits == nil {
			waits = w
			continue
		}
		waits = &dst.BinaryExpr{X: waits, Op: token.ADD, Y: parenIfBinary(w, token.ADD)}
	}
	if sum != 0 {
		waits = &dst.BinaryExpr{X: waits, Op: token.ADD, Y: match.DurationExpr(sum)}
	}
	return &dst.BinaryExpr{X: count, Op: token.MUL, Y: parenIfBinary(waits, token.MUL)}
}

// countExpr returns the attempt count hi-lo (+1) of l as a dst expression,
// for a count that is not constant.
func (c *checker) countExpr(l *loop) dst.Expr {
	lo, loConst := c.constBound(l.lo)
	hi, hiConst := c.constBound(l.hi)
	inc := int64(0)
	if l.incl {
		inc = 1
	}
	var e dst.Expr
	switch {
	case loConst:
		e = addConst(c.clone(l.hi), inc-lo)
	case hiConst:
		e = &dst.BinaryExpr{X: intLit(hi + inc), Op: token.SUB, Y: parenIfBinary(c.clone(l.lo), token.SUB)}
	default:
		e = &dst.BinaryExpr{X: c.clone(l.hi), Op: token.SUB, Y: parenIfBinary(c.clone(l.lo), token.SUB)}
		e = addConst(e, inc)
	}
	return e
}

func addConst(e dst.Expr, k int64) dst.Expr {
	switch {
	case k > 0:
		return &dst.BinaryExpr{X: e, Op: token.ADD, Y: intLit(k)}
	case k < 0:
		return &dst.BinaryExpr{X: e, Op: token.SUB, Y: intLit(-k)}
	}
	return e
}

func intLit(n int64) dst.Expr {
	if n < 0 {
		return &dst.UnaryExpr{Op: token.SUB, X: intLit(-n)}
	}
	return &dst.BasicLit{Kind: token.INT, Value: strconv.FormatInt(n, 10)}
}

// parenIfBinary parenthesizes e, the right operand of op, if it is a binary
// expression that would otherwise bind differently.
func parenIfBinary(e dst.Expr, op token.Token) dst.Expr {
	if b, ok := e.(*dst.BinaryExpr); ok && b.Op.Precedence() <= op.Precedence() {
		return &dst.ParenExpr{X: e}
	}
	return e
}

// clone returns a copy of the decorated form of e without its comments.
func (c *checker) clone(e ast.Expr) dst.Expr {
	d := dst.Clone(c.pass.Dst(e)).(dst.Expr)
	match.StripDecorations(d)
	return d
}

// rewrite edits the decorated loop: its header becomes
//
//	for deadline := time.Now().Add(budget); time.Now().Before(deadline); {
//
// or, keeping the counter,
//
//	for i, deadline := 0, time.Now().Add(budget); time.Now().Before(deadline); i++ {
//
// and its body stays as it is.
func (c *checker) rewrite(l *loop, name string, budget dst.Expr, keep bool) {
	now := func() dst.Expr { return &dst.CallExpr{Fun: &dst.Ident{Path: "time", Name: "Now"}} }
	start := &dst.CallExpr{Fun: &dst.SelectorExpr{X: now(), Sel: dst.NewIdent("Add")}, Args: []dst.Expr{budget}}
	cond := &dst.CallExpr{Fun: &dst.SelectorExpr{X: now(), Sel: dst.NewIdent("Before")}, Args: []dst.Expr{dst.NewIdent(name)}}

	switch s := c.pass.Dst(l.stmt).(type) {
	case *dst.ForStmt:
		if keep {
			init := s.Init.(*dst.AssignStmt)
			init.Lhs = append(init.Lhs, dst.NewIdent(name))
			init.Rhs = append(init.Rhs, start)
		} else {
			s.Init = &dst.AssignStmt{Lhs: []dst.Expr{dst.NewIdent(name)}, Tok: token.DEFINE, Rhs: []dst.Expr{start}}
			s.Post = nil
		}
		s.Cond = cond

	case *dst.RangeStmt:
		f := &dst.ForStmt{
			Init: &dst.AssignStmt{Lhs: []dst.Expr{dst.NewIdent(name)}, Tok: token.DEFINE, Rhs: []dst.Expr{start}},
			Cond: cond,
			Body: s.Body,
		}
		if keep {
			key := s.Key.(*dst.Ident)
			f.Init = &dst.AssignStmt{
				Lhs: []dst.Expr{dst.NewIdent(key.Name), dst.NewIdent(name)},
				Tok: token.DEFINE,
				Rhs: []dst.Expr{intLit(0), start},
			}
			f.Post = &dst.IncDecStmt{X: dst.NewIdent(key.Name), Tok: token.INC}
		}
		f.Decs.NodeDecs = s.Decs.NodeDecs
		f.Decs.For = s.Decs.For
		f.Decs.Init = append(append(append(f.Decs.Init, s.Decs.Key...), s.Decs.Value...), s.Decs.Range...)
		f.Decs.Cond = s.Decs.X
		replaceStmt(c.pass.Dst(l.parent), s, f)
	}
}

// replaceStmt replaces old by new in parent, a node holding statements.
func replaceStmt(parent dst.Node, old, new dst.Stmt) {
	replace := func(list []dst.Stmt) {
		for i, s := range list {
			if s == old {
				list[i] = new
			}
		}
	}
	switch p := parent.(type) {
	case *dst.LabeledStmt:
		p.Stmt = new
	case *dst.BlockStmt:
		replace(p.List)
	case *dst.CaseClause:
		replace(p.Body)
	case *dst.CommClause:
		replace(p.Body)
	default:
		panic(fmt.Sprintf("attemptloop: a loop inside %T", parent))
	}
}

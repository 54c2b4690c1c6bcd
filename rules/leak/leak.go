package leak

import (
	_ "embed"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/internal/modsrc"
	"github.com/unflake/unflake/rule"
)

//go:embed doc.md
var doc string

// Rule makes tests end what they start.
var Rule = &rule.Rule{
	Name:      "leak",
	Doc:       doc,
	Default:   true,
	Prefilter: prefilter,
	Run:       run,
	Requires:  []*rule.Analysis{match.Decls},
}

// A leak needs something started in the file: a go statement, or a
// value the file creates and (in this test or another of the file) ends,
// starts, or builds with a well-known constructor. The byte prefilter and
// the rule agree on this (mentions reads the same words from the syntax),
// so the prefilter never hides a file the rule would report on.
var (
	lifecycleWords = []string{"Close", "Stop", "Shutdown", "Cancel", "Start"}
	constructors   = []string{
		"httptest.NewServer", "httptest.NewTLSServer", "httptest.NewUnstartedServer",
		"net.Listen", "net.ListenPacket", "net.Dial", "net.DialTimeout",
		"os.Open", "os.OpenFile", "os.Create", "os.CreateTemp",
		"time.NewTicker", "time.NewTimer", "sql.Open",
	}
)

func prefilter(src []byte, _ rule.Values) bool {
	return rule.ContainsAny(src, "go func") || rule.ContainsAny(src, lifecycleWords...) || rule.ContainsAny(src, constructors...)
}

// mentions is prefilter on syntax: whether f has a go statement, an
// identifier named like a lifecycle method, or a call of a constructor.
func mentions(f *ast.File) bool {
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			if _, ok := n.Call.Fun.(*ast.FuncLit); ok {
				found = true
			}
		case *ast.Ident:
			for _, w := range lifecycleWords {
				if strings.Contains(n.Name, w) {
					found = true
				}
			}
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok {
				for _, c := range constructors {
					if x.Name+"."+n.Sel.Name == c {
						found = true
					}
				}
			}
		}
		return !found
	})
	return found
}

func run(pass *rule.Pass) error {
	c := &checker{
		pass:   pass,
		info:   pass.TypesInfo,
		decls:  match.DeclsOf(pass),
		sums:   map[*types.Func]*summary{},
		others: map[*types.Func]token.Pos{},
	}
	c.style = c.closeStyle()
	for _, f := range pass.Files {
		if !strings.HasSuffix(pass.Fset.File(f.Pos()).Name(), "_test.go") || ast.IsGenerated(f) {
			continue
		}
		if !mentions(f) {
			continue // see prefilter
		}
		c.file = f
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || fd.Name.Name == "TestMain" || strings.HasPrefix(fd.Name.Name, "Benchmark") || example(fd) {
				continue
			}
			c.fn = fd
			c.values(fd)
			c.goroutines(fd)
		}
	}
	return nil
}

// example reports whether fd is an example (func ExampleX()): it has no
// *testing.T to end a value with, a variable in it named t is not a
// test's, and godoc shows its body as written, so a cleanup added there
// would show in the documentation.
func example(fd *ast.FuncDecl) bool {
	return fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Example") && fd.Type.Params.NumFields() == 0
}

// checker checks the tests of one package.
type checker struct {
	// goroutine caches codeGoroutine: nil until it is asked.
	goroutine *string
	// locksFree: a mutex taken inside the code under test counts as no
	// wait (see endWaits); a join's goroutine counts it.
	locksFree bool
	// waitAt: the first operation bodyWaits found that may wait.
	waitAt string
	pass   *rule.Pass
	info   *types.Info
	decls  map[*types.Func]*ast.FuncDecl
	file   *ast.File
	fn     *ast.FuncDecl

	// sums holds the summaries of the package's methods (stop.go).
	sums map[*types.Func]*summary

	// others memoizes otherCall.
	others map[*types.Func]token.Pos

	// style is how the package's tests handle an error from Close, so
	// that a cleanup handles it the same way.
	style errStyle

	// locks memoizes lockTaken: where code the tests may run takes a
	// file lock, or "" (filelock.go).
	locks *string

	// src is the syntax of the package's files, every build, and of the
	// module's packages they reach (moduleSrc); pool memoizes
	// longLivedServer (pool.go).
	src  *modsrc.Module
	pool *string
}

// testParam returns the name of fn's *testing.T, *testing.B, *testing.F or
// testing.TB parameter, or "".
func (c *checker) testParam(typ *ast.FuncType) string {
	if typ == nil || typ.Params == nil {
		return ""
	}
	for _, p := range typ.Params.List {
		if !match.IsNamed(c.info.TypeOf(p.Type), "testing", "T", "B", "F", "TB") {
			continue
		}
		for _, n := range p.Names {
			if n.Name != "_" {
				return n.Name
			}
		}
	}
	return ""
}

// enclosingFunc returns the innermost function (declaration or literal)
// of c.fn that contains pos, and the statement path to it.
func (c *checker) enclosingFunc(pos ast.Node) (typ *ast.FuncType, body *ast.BlockStmt, inGo bool) {
	typ, body = c.fn.Type, c.fn.Body
	match.WithStack(c.fn.Body, func(n ast.Node, stack []ast.Node) bool {
		if n.Pos() > pos.Pos() || n.End() < pos.End() {
			return false
		}
		if lit, ok := n.(*ast.FuncLit); ok {
			typ, body = lit.Type, lit.Body
			inGo = false
			if len(stack) >= 2 {
				if _, ok := stack[len(stack)-2].(*ast.GoStmt); ok {
					inGo = true
				}
			}
		}
		return true
	})
	return typ, body, inGo
}

package rewrite_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// findingLines returns res's findings as "file:line fixed=... reason".
func findingLines(res *rewrite.Result) string {
	var got []string
	for _, f := range res.Findings {
		got = append(got, fmt.Sprintf("%s:%d fixed=%v %s", filepath.Base(f.File), f.Line, f.Fixed, f.Reason))
	}
	return strings.Join(got, "\n")
}

// A fix that changes a line under a comment saying the code is meant as
// it is ("Deliberately ...") is held back with the comment's words and
// line; the other fixes of the rule are kept, and so is the one in a
// function whose doc comment says "deliberately" (the doc is not beside
// the line the fix changes). The engine does it for every rule: this
// one knows nothing of comments.
func TestGuardHoldsBackAFixAComment(t *testing.T) {
	t.Parallel()
	dir := testmod.Write(t, `
-- go.mod --
module example.com/m

go 1.22
-- a_test.go --
package m

import (
	"testing"
	"time"
)

func TestA(t *testing.T) {
	// Deliberately long, the worker needs it.
	time.Sleep(10 * time.Millisecond)
	// wait for the worker
	time.Sleep(20 * time.Millisecond)
	time.Sleep(30 * time.Millisecond) // not on purpose
}

// TestB deliberately sleeps.
func TestB(t *testing.T) {
	time.Sleep(40 * time.Millisecond)
}
`)
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Env: testmod.GoEnv(t), Patterns: []string{"./..."}, Rules: []*rule.Rule{sleepZero("zero", zero)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Errorf("errors: %v", res.Errors)
	}
	want := strings.Join([]string{
		`a_test.go:10 fixed=false a comment beside it says "Deliberately long, the worker needs it." (a_test.go:9); left as is`,
		"a_test.go:12 fixed=true ",
		"a_test.go:13 fixed=true ",
		"a_test.go:18 fixed=true ",
	}, "\n")
	if got := findingLines(res); got != want {
		t.Errorf("findings:\n%s\nwant:\n%s", got, want)
	}
	if len(res.Changes) != 1 || !strings.Contains(string(res.Changes[0].New), "time.Sleep(10 * time.Millisecond)") || strings.Count(string(res.Changes[0].New), "time.Sleep(0)") != 3 {
		t.Errorf("changes: want every fix but the first")
	}
}

// pipeListen is a test rule: it replaces net.Listen(...) by
// listenPipe(), an in-memory listener the module declares.
func pipeListen() *rule.Rule {
	return testRule("pipe", func(src []byte) bool { return bytes.Contains(src, []byte("Listen")) }, func(pass *rule.Pass) {
		for _, f := range pass.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if fn, ok := pass.TypesInfo.Uses[sel.Sel].(*types.Func); !ok || fn.Pkg().Path() != "net" || fn.Name() != "Listen" {
					return true
				}
				pass.Report(rule.Diagnostic{Pos: call.Pos(), End: call.End(), Message: "listens", Fix: &rule.Fix{Changes: []rule.Change{{Kind: rule.Paths, What: "a test change", Unseen: true}}, Message: "listen in memory", Apply: func() error {
					dc := pass.Dst(call).(*dst.CallExpr)
					dc.Fun, dc.Args = dst.NewIdent("listenPipe"), nil
					return nil
				}}})
				return true
			})
		}
	})
}

// A comment that says the code uses the network ("over TCP") holds back
// a fix that takes the network away from the line below it; one that
// only explains the line does not.
func TestGuardHoldsBackAFixThatTakesTheNetworkAway(t *testing.T) {
	t.Parallel()
	dir := testmod.Write(t, `
-- go.mod --
module example.com/m

go 1.22
-- a_test.go --
package m

import (
	"net"
	"testing"
)

func listenPipe() (net.Listener, error) { return nil, nil }

func TestA(t *testing.T) {
	// Listen on an ephemeral loopback TCP port; the client dials it over TCP.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	_, _ = l, err
	// start the server
	m, err := net.Listen("tcp", "127.0.0.1:0")
	_, _ = m, err
}
`)
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Env: testmod.GoEnv(t), Patterns: []string{"./..."}, Rules: []*rule.Rule{pipeListen()}})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		`a_test.go:12 fixed=false a comment beside it says "Listen on an ephemeral loopback TCP port" (a_test.go:11); left as is`,
		"a_test.go:15 fixed=true ",
	}, "\n")
	if got := findingLines(res); got != want {
		t.Errorf("findings:\n%s\nwant:\n%s", got, want)
	}
}

// firstStmt is a test rule: it adds `_ = 0` as the first statement of
// every test, as a rule adding t.Parallel() does.
func firstStmt() *rule.Rule {
	return testRule("first", func([]byte) bool { return true }, func(pass *rule.Pass) {
		for _, f := range pass.Files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || !strings.HasPrefix(fd.Name.Name, "Test") {
					continue
				}
				if a, ok := fd.Body.List[0].(*ast.AssignStmt); ok && a.Tok == token.ASSIGN {
					continue // done
				}
				pass.Report(rule.Diagnostic{Pos: fd.Name.Pos(), End: fd.Name.End(), Message: "no first statement", Fix: &rule.Fix{Changes: []rule.Change{{Kind: rule.Paths, What: "a test change", Unseen: true}}, Message: "add one", Apply: func() error {
					body := pass.Dst(fd).(*dst.FuncDecl).Body
					st := &dst.AssignStmt{Lhs: []dst.Expr{dst.NewIdent("_")}, Tok: token.ASSIGN, Rhs: []dst.Expr{&dst.BasicLit{Kind: token.INT, Value: "0"}}}
					st.Decs.After = dst.EmptyLine
					body.List = append([]dst.Stmt{st}, body.List...)
					return nil
				}}})
			}
		}
	})
}

// A doc comment is beside its function's signature, not its body: a fix
// that spreads a body written on the signature's line over several lines
// leaves "must keep real time" true, and is made. One that changes the
// signature is not tried here: no rule does.
func TestGuardReadsADocCommentForTheSignatureOnly(t *testing.T) {
	t.Parallel()
	dir := testmod.Write(t, `
-- go.mod --
module example.com/m

go 1.22
-- a_test.go --
package m

import "testing"

func check(t *testing.T) {}

// TestA must keep real time: check runs on the wall clock.
func TestA(t *testing.T) { check(t) }
`)
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Env: testmod.GoEnv(t), Patterns: []string{"./..."}, Rules: []*rule.Rule{firstStmt()}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := findingLines(res), "a_test.go:8 fixed=true "; got != want {
		t.Errorf("findings:\n%s\nwant:\n%s", got, want)
	}
}

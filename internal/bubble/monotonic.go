package bubble

import (
	"go/ast"
	"go/token"
	"go/types"
	"sort"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// A bubble changes the values of time.Time, not only the clock: inside
// one, time.Now carries no monotonic clock reading (the runtime omits
// it), where in real time every reading has one. A copy of a reading
// that lost it (decoded by UnmarshalBinary or from JSON, parsed, rebuilt,
// stripped by Round(0)) is then the same Time value as the reading in a
// bubble and a different one in real time. Whatever compares times by
// their value rather than by Equal, Before or After sees the difference:
// == and != (of times, or of structs holding one), a map keyed by them,
// reflect.DeepEqual and testify's Equal, and their text (String and %v
// print "m=+0.0012" after a reading that has one). A bug that compares
// the store's stamp with a decoded version token by != reports a change
// at once in real time, which the original catches, and none in the
// bubble; the correct code (After, Equal) passes either way, so running
// cannot tell: not fixed (red team batch 19, etagwait). The comparison
// may be only a bug's, or the test's own (a got == want the correct code
// keeps and a bug round-trips), so every build of the package and its
// test files are read by syntax, as textcoarse.go reads them; the hazard
// needs a reading of the clock there (time.Now), the only source of a
// monotonic reading.

// valueCompared names the first comparison of times by value in files
// and tests, "x at file:line", when some file reads the clock, or "".
func valueCompared(files, tests []*lockFile) string {
	all := append(append([]*lockFile(nil), files...), tests...)
	timeOf, tn := fileTimeNames(all)
	holders := timeHolders(all, timeOf)
	held := heldValues(all, holders)
	reads := false
	var hits []string
	for _, lf := range all {
		tm := timeOf[lf] // "" in a file that does not import time: it may still compare the package's times
		byValue := func(e ast.Expr) bool {
			e = ast.Unparen(e)
			if tn.isTime(e, tm) {
				return true
			}
			if cl, ok := e.(*ast.CompositeLit); ok {
				id, ok := cl.Type.(*ast.Ident)
				return ok && holders[id.Name]
			}
			return held[lastName(e)]
		}
		hit := func(n ast.Node, what string) {
			hits = append(hits, what+" at "+lf.at(n.Pos()))
		}
		imports := match.ImportNames(lf.f)
		ast.Inspect(lf.f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if isPkgSel(n, tm, "Now") {
					reads = true
				}
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && !zeroTime(n.X, tm) && !zeroTime(n.Y, tm) && (byValue(n.X) || byValue(n.Y)) {
					hit(n, types.ExprString(n))
				}
			case *ast.MapType:
				if isTimeType(n.Key, tm) && !isStar(n.Key) {
					hit(n, "a map keyed by time.Time")
				} else if id, ok := n.Key.(*ast.Ident); ok && holders[id.Name] {
					hit(n, "a map keyed by "+id.Name+", which holds a time.Time")
				}
			case *ast.CallExpr:
				sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if sel.Sel.Name == "String" && len(n.Args) == 0 && tn.isTime(sel.X, tm) {
					hit(n, types.ExprString(n))
					return true
				}
				x, ok := sel.X.(*ast.Ident)
				if !ok || !valueEqualFunc(imports[x.Name], sel.Sel.Name) {
					return true
				}
				args := n.Args
				if strings.HasPrefix(imports[x.Name], "github.com/stretchr/") && len(args) > 0 {
					args = args[1:] // the TestingT
				}
				for _, arg := range args {
					if byValue(arg) || tn.containers[lastName(arg)] {
						hit(n, types.ExprString(n.Fun))
						break
					}
				}
			}
			return true
		})
	}
	if !reads || len(hits) == 0 {
		return ""
	}
	sort.Strings(hits)
	return hits[0]
}

// valueEqualFunc reports whether the function name of the package at
// path compares or prints its arguments by their value, a time's
// monotonic reading included: reflect.DeepEqual, testify's Equal (which
// is DeepEqual), fmt's Sprint family (the "m=+..." of String).
func valueEqualFunc(path, name string) bool {
	switch path {
	case "reflect":
		return name == "DeepEqual"
	case "github.com/stretchr/testify/assert", "github.com/stretchr/testify/require":
		return name == "Equal" || name == "NotEqual" || name == "EqualValues" || name == "Contains" || name == "ElementsMatch"
	case "fmt":
		return strings.HasPrefix(name, "Sprint")
	}
	return false
}

// timeHolders are the struct types of files that hold a time.Time by
// value, directly or through another such struct (an array of them too).
func timeHolders(files []*lockFile, timeOf map[*lockFile]string) map[string]bool {
	holders := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, lf := range files {
			tm := timeOf[lf]
			ast.Inspect(lf.f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok || holders[ts.Name.Name] {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return true
				}
				for _, fd := range st.Fields.List {
					t := fd.Type
					if at, ok := t.(*ast.ArrayType); ok && at.Len != nil {
						t = at.Elt
					}
					id, isIdent := t.(*ast.Ident)
					if (isTimeType(t, tm) && !isStar(t)) || (isIdent && holders[id.Name]) {
						holders[ts.Name.Name] = true
						changed = true
						break
					}
				}
				return true
			})
		}
	}
	return holders
}

// heldValues are the names declared of a holder type (by value) in
// files, or set to a composite literal of one.
func heldValues(files []*lockFile, holders map[string]bool) map[string]bool {
	out := map[string]bool{}
	isHolder := func(e ast.Expr) bool {
		if cl, ok := ast.Unparen(e).(*ast.CompositeLit); ok {
			e = cl.Type
		}
		id, ok := e.(*ast.Ident)
		return ok && holders[id.Name]
	}
	for _, lf := range files {
		ast.Inspect(lf.f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				if isHolder(n.Type) {
					for _, id := range n.Names {
						out[id.Name] = true
					}
				}
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if (n.Type != nil && isHolder(n.Type)) || (i < len(n.Values) && isHolder(n.Values[i])) {
						out[id.Name] = true
					}
				}
			case *ast.AssignStmt:
				if len(n.Lhs) == len(n.Rhs) {
					for i, r := range n.Rhs {
						if isHolder(r) {
							if name := lastName(n.Lhs[i]); name != "" {
								out[name] = true
							}
						}
					}
				}
			}
			return true
		})
	}
	return out
}

// zeroTime reports whether e is the zero time written out (time.Time{})
// or nil: comparing with either is the same in and out of a bubble (a
// reading with a monotonic reading is never zero, one without is zero
// only at year 1).
func zeroTime(e ast.Expr, tm string) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		return e.Name == "nil"
	case *ast.CompositeLit:
		return len(e.Elts) == 0 && isTimeType(e.Type, tm)
	}
	return false
}

func isStar(e ast.Expr) bool {
	_, ok := e.(*ast.StarExpr)
	return ok
}

// monotonicHazard says where the package or its tests, in some build,
// compare times by their value, or "" (valueCompared).
func (a *Analysis) monotonicHazard() string {
	if a.monotonic != nil {
		return *a.monotonic
	}
	why := ""
	if at := valueCompared(a.codeFiles(), a.testFiles()); at != "" {
		why = "the code under test or its test, in some build, compares times by their value (" + at + "): in a synctest bubble time.Now carries no monotonic clock reading, so a reading and a copy of it that lost the reading (decoded, parsed, rebuilt, Round(0)) are the same value there, where in real time the reading keeps it and they differ; a bug that compares times with == or != (or as map keys, by reflect.DeepEqual, by their text) instead of Equal or After fails the original and passes the bubble, and running the correct build cannot tell"
	}
	a.monotonic = &why
	return why
}

// testFiles are the package's test files the analysis typed.
func (a *Analysis) testFiles() []*lockFile {
	var tests []*lockFile
	for _, f := range a.pass.AllFiles {
		if name := a.pass.Fset.File(f.Pos()).Name(); strings.HasSuffix(name, "_test.go") {
			tests = append(tests, &lockFile{name: name, fset: a.pass.Fset, f: f})
		}
	}
	return tests
}

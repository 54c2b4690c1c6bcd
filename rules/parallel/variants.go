package parallel

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// The typed analysis sees one build of the package. Its directory may
// hold others: a file behind a build tag, a _windows.go file, a variant
// the tests also run against. They are implementations of the same
// functions, and a test made parallel must observe the same thing under
// every one of them: a default that one build keeps in a constant and
// another in a variable that an instance's option overwrites, a
// sync.Once that one build's stamp shares between two functions the
// other keeps apart. So the rule reads every Go file of the directory,
// from its syntax, and follows calls by name across all of them (a
// function by its name, a method by its name on any type): a test stays
// sequential when the code it may reach, in any build, reads a
// package-level variable that some build's code writes, or hands on, or
// that a build the analysis does not type declares exported.
//
// The same reading gives the tests of the external test package
// (package x_test), which run in the same binary after the package's
// own: they count for the order of first use (order.go) as tests that
// run later.

// variants is the package's code in every build, by name.
type variants struct {
	// funcs maps a function's name, or a method's as ".M", to its
	// declarations in the package's files, whichever build selects them.
	funcs map[string][]*ast.FuncDecl
	// xfuncs is the same for the external test package's files.
	xfuncs map[string][]*ast.FuncDecl
	// vars is the set of the package's package-level variables, in any
	// build.
	vars map[string]bool
	// plain marks the variables that every build declares to hold no
	// reference (see plainDecl): handing one on copies it.
	plain map[string]bool
	// written maps a variable to where a file the build leaves out
	// writes it, hands it on, or declares it exported.
	written map[string]string
	// left is the set of files the build leaves out, and imports their
	// imports, by the name they import them as.
	left    map[*token.File]bool
	imports map[*token.File]map[string]string
	// called is the set of package-level variables some file (any
	// build, tests included) calls as a function value.
	called map[string]bool
	// xtests are the external test package's tests, in run order.
	xtests []*xtest
	// sibling holds the files of the other package of the test binary
	// (see binary.go): the external test package's for the package's
	// own pass, the package's own (every build, its tests included) for
	// the external test package's pass.
	sibling []*ast.File
	// broken, when not empty, names a file of the directory the rule
	// cannot read: what it holds may be anything.
	broken string

	fset *token.FileSet
	// pkgLevel reports whether an identifier of a body names a
	// package-level declaration (of its file, or of another file, or
	// the universe), not a local.
	pkgLevel func(id *ast.Ident) bool
}

// An xtest is a test of the external test package.
type xtest struct {
	fd       *ast.FuncDecl
	parallel bool
	reach    map[string]bool // names (see variants.funcs) of the package it reaches
}

// variantsOf reads the package's directory, once.
func (c *checker) variantsOf() *variants {
	if c.variants != nil {
		return c.variants
	}
	v := &variants{
		funcs: map[string][]*ast.FuncDecl{}, xfuncs: map[string][]*ast.FuncDecl{},
		vars: map[string]bool{}, plain: map[string]bool{}, written: map[string]string{}, left: map[*token.File]bool{}, imports: map[*token.File]map[string]string{},
		fset: token.NewFileSet(),
	}
	c.variants = v
	v.pkgLevel = func(*ast.Ident) bool { return false }
	if len(c.pass.AllFiles) == 0 {
		return v
	}
	// The external test package's own pass reads the package's files
	// only as the other half of its test binary (binary.go): its calls
	// into the package are code the rule does not follow.
	base, xpass := strings.CutSuffix(c.pass.Pkg.Name(), "_test")
	built := map[string]bool{}
	for _, f := range c.pass.AllFiles {
		built[c.pass.Fset.File(f.Pos()).Name()] = true
	}
	dir := filepath.Dir(c.pass.Fset.File(c.pass.AllFiles[0].Pos()).Name())
	entries, err := os.ReadDir(dir)
	if err != nil {
		v.broken = dir
		return v
	}
	name := base
	top := map[ast.Node]bool{} // the package-level declarations of every file
	var files, xfiles, leftFiles []*ast.File
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".go" {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := parser.ParseFile(v.fset, path, nil, 0)
		if err != nil {
			v.broken = e.Name()
			continue
		}
		if xpass {
			if f.Name.Name == base {
				v.sibling = append(v.sibling, f)
			}
			continue
		}
		for _, d := range f.Decls {
			top[d] = true
			if gd, ok := d.(*ast.GenDecl); ok {
				for _, s := range gd.Specs {
					top[s] = true
				}
			}
		}
		switch f.Name.Name {
		case name:
			files = append(files, f)
			if !built[path] {
				tf := v.fset.File(f.Pos())
				v.left[tf] = true
				leftFiles = append(leftFiles, f)
				v.imports[tf] = match.ImportNames(f)
			}
		case name + "_test":
			xfiles = append(xfiles, f)
		}
	}
	if xpass {
		return v
	}
	v.sibling = xfiles
	v.pkgLevel = func(id *ast.Ident) bool {
		if id.Obj == nil {
			return true // declared in another file, or the universe
		}
		d, _ := id.Obj.Decl.(ast.Node)
		return top[d]
	}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				v.funcs[funcKey(d)] = append(v.funcs[funcKey(d)], d)
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, s := range d.Specs {
					vs := s.(*ast.ValueSpec)
					for i, id := range vs.Names {
						plain := plainDecl(vs, i)
						if was, ok := v.plain[id.Name]; ok {
							plain = plain && was
						}
						v.vars[id.Name], v.plain[id.Name] = true, plain
					}
				}
			}
		}
	}
	v.called = calledVars(append(append([]*ast.File{}, files...), xfiles...), v)
	for _, f := range leftFiles {
		v.scanLeft(f)
	}
	v.readXTests(xfiles, c.pass.Pkg.Path())
	return v
}

// funcKey names fd: "F" for a function, ".M" for a method of any type.
func funcKey(fd *ast.FuncDecl) string {
	if fd.Recv != nil {
		return "." + fd.Name.Name
	}
	return fd.Name.Name
}

// scanLeft records in v.written what f, a file the build leaves out,
// writes or hands on of the package's variables, and the exported
// variables it declares (the external tests may write them). As in the
// typed build (shared.go), the writes of init and TestMain happen before
// the tests, but for those of the function literals they leave behind.
func (v *variants) scanLeft(f *ast.File) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			if d.Tok != token.VAR {
				continue
			}
			for _, s := range d.Specs {
				for _, id := range s.(*ast.ValueSpec).Names {
					if id.IsExported() && v.written[id.Name] == "" {
						v.written[id.Name] = fmt.Sprintf("is exported in %s, a file this build leaves out: an external test package may write it", v.base(id))
					}
				}
			}
			v.scanWrites(d, "a package-level declaration", false)
			for _, s := range d.Specs {
				vs := s.(*ast.ValueSpec)
				if vs.Type != nil && plainTypes[types.ExprString(vs.Type)] {
					continue
				}
				for i, id := range vs.Names {
					switch {
					case len(vs.Values) == len(vs.Names):
						v.funcState(f, id, vs.Values[i], false)
					case len(vs.Values) == 1:
						v.funcState(f, id, vs.Values[0], false) // v1, v2 = f(): a call
					}
				}
			}
		case *ast.FuncDecl:
			if d.Body != nil && d.Recv == nil && (d.Name.Name == "init" || d.Name.Name == "TestMain") {
				// What init and TestMain store is what every test calls.
				ast.Inspect(d.Body, func(n ast.Node) bool {
					as, ok := n.(*ast.AssignStmt)
					if !ok {
						return true
					}
					for i, l := range as.Lhs {
						id, ok := ast.Unparen(l).(*ast.Ident)
						if !ok || !v.isVar(id) {
							continue
						}
						switch {
						case len(as.Rhs) == len(as.Lhs):
							v.funcState(f, id, as.Rhs[i], true)
						case len(as.Rhs) == 1:
							v.funcState(f, id, as.Rhs[0], true)
						}
					}
					return true
				})
			}
			if d.Body != nil {
				v.scanWrites(d.Body, d.Name.Name, d.Recv == nil && (d.Name.Name == "init" || d.Name.Name == "TestMain"))
			}
		}
	}
}

// scanWrites records the package-level variables root writes or hands
// on. Without types, a use is a read only where it cannot change the
// variable or let other code change it: an operand of an operator, a
// condition, an index, a call of it, len or cap.
func (v *variants) scanWrites(root ast.Node, fn string, setup bool) {
	match.WithStack(root, func(n ast.Node, stack []ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || !v.isVar(id) || v.written[id.Name] != "" {
			return true
		}
		if len(stack) > 0 {
			switch p := stack[len(stack)-1].(type) {
			case *ast.SelectorExpr:
				if p.Sel == id {
					return true // a field or method named like the variable
				}
			case *ast.ValueSpec:
				for _, name := range p.Names {
					if name == id {
						return true // its declaration
					}
				}
			}
		}
		if setup && !inFuncLit(stack) {
			return true
		}
		if how := v.synUse(id, stack); how != "" {
			p := v.fset.Position(id.Pos())
			v.written[id.Name] = fmt.Sprintf("%s (%s:%d), in a file this build leaves out, %s", fn, filepath.Base(p.Filename), p.Line, how)
		}
		return true
	})
}

// plainTypes are the types a declaration may name for a variable that
// holds no reference.
var plainTypes = map[string]bool{
	"bool": true, "string": true, "int": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true, "uintptr": true,
	"float32": true, "float64": true, "complex64": true, "complex128": true, "byte": true, "rune": true,
	"time.Duration": true, "time.Month": true, "time.Weekday": true,
}

// plainDecl reports whether the i-th variable of vs holds no reference,
// as far as its syntax says: its type is a basic one (or time.Duration),
// or its value a literal or arithmetic (5 * time.Minute).
func plainDecl(vs *ast.ValueSpec, i int) bool {
	if vs.Type != nil {
		return plainTypes[types.ExprString(vs.Type)]
	}
	if len(vs.Values) != len(vs.Names) {
		return false
	}
	switch e := ast.Unparen(vs.Values[i]).(type) {
	case *ast.BasicLit:
		return true
	case *ast.BinaryExpr:
		return true // arithmetic, a comparison or a logic operator: a value
	case *ast.UnaryExpr:
		return e.Op == token.SUB || e.Op == token.ADD || e.Op == token.NOT || e.Op == token.XOR
	}
	return false
}

// synUse says how the use id, whose enclosing nodes are stack, may
// change the variable or let other code change it ("writes", "calls its
// method Do", "hands it on"), or "" for a read. A variable that holds no
// reference (see plain) handed on is copied: a read.
func (v *variants) synUse(id *ast.Ident, stack []ast.Node) string {
	use := synUse(id, stack)
	if v.plain[id.Name] && (use == "hands it on" || strings.HasPrefix(use, "calls its method ")) {
		return "" // a copy, or a method of a value (time.Duration.String)
	}
	return use
}

func synUse(e ast.Expr, stack []ast.Node) string {
	k := len(stack) - 1
	for ; k >= 0; k-- {
		switch p := stack[k].(type) {
		case *ast.ParenExpr, *ast.StarExpr:
			e = p.(ast.Expr)
			continue
		case *ast.IndexExpr:
			if p.X == e {
				e = p
				continue
			}
		case *ast.SliceExpr:
			if p.X == e {
				e = p
				continue
			}
		case *ast.SelectorExpr:
			if p.X == e {
				if k > 0 {
					if call, ok := stack[k-1].(*ast.CallExpr); ok && call.Fun == p {
						return "calls its method " + p.Sel.Name // a pointer method may write it (once.Do, mu.Lock)
					}
				}
				e = p
				continue
			}
		}
		break
	}
	if k < 0 {
		return "hands it on"
	}
	switch p := stack[k].(type) {
	case *ast.AssignStmt:
		for _, l := range p.Lhs {
			if l == e {
				return "writes it"
			}
		}
	case *ast.IncDecStmt:
		return "writes it"
	case *ast.UnaryExpr:
		switch p.Op {
		case token.AND:
			return "takes its address"
		case token.ARROW:
			return "receives from it"
		}
		return ""
	case *ast.BinaryExpr:
		return ""
	case *ast.IfStmt, *ast.SwitchStmt, *ast.CaseClause, *ast.ForStmt:
		return ""
	case *ast.IndexExpr:
		if p.Index == e {
			return ""
		}
	case *ast.CallExpr:
		if p.Fun == e {
			return "" // a call of a function value: its code is followed by name
		}
		if fun, ok := p.Fun.(*ast.Ident); ok && (fun.Name == "len" || fun.Name == "cap") {
			return ""
		}
	}
	return "hands it on"
}

// usePhrase spells a change synUse found to the variable name: "writes
// package-level variable defaultTTL".
func usePhrase(use, name string) string {
	switch {
	case use == "writes it":
		return "writes package-level variable " + name
	case strings.HasPrefix(use, "calls its method "):
		return "calls " + strings.TrimPrefix(use, "calls its method ") + " on package-level variable " + name
	case use == "takes its address":
		return "takes the address of package-level variable " + name
	case use == "receives from it":
		return "receives from package-level variable " + name
	}
	return "hands on package-level variable " + name
}

// readXTests records the external test package's tests and what of the
// package (at path) each reaches.
func (v *variants) readXTests(files []*ast.File, path string) {
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				v.xfuncs[funcKey(fd)] = append(v.xfuncs[funcKey(fd)], fd)
			}
		}
	}
	for _, f := range files {
		imp := "" // the name the file imports the package as
		for _, s := range f.Imports {
			if p, _ := strconv.Unquote(s.Path.Value); p == path {
				imp = path[strings.LastIndexByte(path, '/')+1:]
				if s.Name != nil {
					imp = s.Name.Name
				}
			}
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || fd.Recv != nil || !strings.HasPrefix(fd.Name.Name, "Test") || fd.Name.Name == "TestMain" {
				continue
			}
			xt := &xtest{fd: fd, reach: map[string]bool{}}
			if ps := fd.Type.Params.List; len(ps) == 1 && len(ps[0].Names) == 1 {
				xt.parallel = callsParallelOn(fd.Body, ps[0].Names[0].Name)
			}
			v.xreach(fd.Body, imp, xt.reach, map[*ast.FuncDecl]bool{})
			v.xtests = append(v.xtests, xt)
		}
	}
	sort.SliceStable(v.xtests, func(i, j int) bool {
		pi, pj := v.fset.Position(v.xtests[i].fd.Pos()), v.fset.Position(v.xtests[j].fd.Pos())
		if pi.Filename != pj.Filename {
			return pi.Filename < pj.Filename
		}
		return pi.Offset < pj.Offset
	})
}

// xreach adds to out the names of the package's functions root, code of
// the external test package, reaches: pkg.F, a method called by name,
// through the external package's own helpers too.
func (v *variants) xreach(root ast.Node, imp string, out map[string]bool, seen map[*ast.FuncDecl]bool) {
	ast.Inspect(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && imp != "" && x.Name == imp && x.Obj == nil {
				v.reachNames(n.Sel.Name, out)
				return false
			}
			v.reachNames("."+n.Sel.Name, out)
			for _, fd := range v.xfuncs["."+n.Sel.Name] {
				v.xfollow(fd, imp, out, seen)
			}
		case *ast.Ident:
			if v.pkgLevel(n) {
				for _, fd := range v.xfuncs[n.Name] {
					v.xfollow(fd, imp, out, seen)
				}
			}
		}
		return true
	})
}

func (v *variants) xfollow(fd *ast.FuncDecl, imp string, out map[string]bool, seen map[*ast.FuncDecl]bool) {
	if seen[fd] || fd.Body == nil {
		return
	}
	seen[fd] = true
	v.xreach(fd.Body, imp, out, seen)
}

// reachNames adds name, if it names a function of the package, and the
// names it reaches in any build, to out.
func (v *variants) reachNames(name string, out map[string]bool) {
	if out[name] || len(v.funcs[name]) == 0 {
		return
	}
	out[name] = true
	for _, fd := range v.funcs[name] {
		if fd.Body != nil {
			v.namesIn(fd.Body, func(callee string) { v.reachNames(callee, out) }, nil)
		}
	}
}

// namesIn calls fn for each function name (see funcs) root names, and
// variable (when not nil) for each use of a package-level variable, with
// its enclosing nodes.
func (v *variants) namesIn(root ast.Node, fn func(string), variable func(*ast.Ident, []ast.Node)) {
	sels := map[*ast.Ident]bool{}
	match.WithStack(root, func(n ast.Node, stack []ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			sels[n.Sel] = true
			if len(v.funcs["."+n.Sel.Name]) > 0 {
				fn("." + n.Sel.Name)
			}
		case *ast.Ident:
			if sels[n] || !v.pkgLevel(n) {
				return true
			}
			if len(v.funcs[n.Name]) > 0 {
				fn(n.Name)
			}
			if variable != nil && v.isVar(n) {
				variable(n, stack)
			}
		}
		return true
	})
}

// isVar reports whether id may name a package-level variable of the
// package: one of its file, or a name some build declares a variable
// that the file does not declare itself (a constant in this file may be
// a variable in another build's).
func (v *variants) isVar(id *ast.Ident) bool {
	if !v.vars[id.Name] || !v.pkgLevel(id) {
		return false
	}
	return id.Obj == nil || id.Obj.Kind == ast.Var
}

// base names the file of n and its line: "ttl_spurious.go:17".
func (v *variants) base(n ast.Node) string {
	p := v.fset.Position(n.Pos())
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

// variantReads says how the test ts, in any build of the package, may
// read or change a package-level variable that some build's code writes
// or hands on, where the typed analysis of this build cannot see it (the
// read or the write is in a file this build leaves out), or use the real
// clock there; "" when none. unseen is set, with the call, when another
// build's code the test may reach calls code the typed analysis would
// not follow either: the test is left alone without a report.
func (c *checker) variantReads(ts *test) (why string, unseen bool) {
	root := ts.fd.Body
	v := c.variantsOf()
	if v.broken != "" {
		return fmt.Sprintf("is in a package whose directory holds %s, which the analysis cannot read: another build's code may share state between the tests", v.broken), false
	}
	if len(v.left) == 0 {
		return "", false // one build: the typed analysis sees it all
	}
	typed := map[string]string{} // this build's variables its code writes or hands on
	s := c.sharedState()
	for tv, how := range s.vars {
		if tv.Pkg() == c.pass.Pkg && how != "" {
			typed[tv.Name()] = how
		}
	}
	// What the typed analysis followed: the functions of the code under
	// test the test reaches in this build, and the test files' helpers.
	seen := map[string]bool{}
	for fn := range c.reachOf(ts) {
		seen[typedKey(fn)] = true
	}
	for name, decls := range v.funcs {
		for _, d := range decls {
			if !v.left[v.fset.File(d.Pos())] && strings.HasSuffix(v.fset.Position(d.Pos()).Filename, "_test.go") {
				seen[name] = true
			}
		}
	}
	// The test's own body is typed; follow its names into every build.
	// Its own reads are judged by the typed analysis but for variables
	// only another build writes.
	via := map[string]string{} // a reached name -> the name it was reached from ("" for the test)
	var queue, reached []string
	add := func(name, from string) {
		if _, ok := via[name]; ok || len(v.funcs[name]) == 0 {
			return
		}
		via[name] = from
		queue = append(queue, name)
		reached = append(reached, name)
	}
	// A write is the better reason than a method call or an alias (a
	// default overwritten beside the mutex that guards it): the first
	// write found, else the first other change.
	found, weak := "", ""
	check := func(id *ast.Ident, stack []ast.Node, from string) {
		if found != "" {
			return
		}
		left := v.left[v.fset.File(id.Pos())]
		// Of this build, the typed analysis judged what the test reaches;
		// another build's code may change the variable, or read one
		// this build's code changes, or change it itself.
		use := ""
		if left {
			use = v.synUse(id, stack)
		}
		how := v.written[id.Name]
		if how == "" && (left || from != "" && !seen[from]) {
			// This build's variable, read by code only another build
			// reaches (a build's F calls this build's G, which reads
			// what H writes): the typed analysis did not follow it.
			how = typed[id.Name]
		}
		if how == "" && use == "" {
			return
		}
		where := ""
		if left {
			where = " in " + v.base(id) + ", a file this build leaves out,"
		}
		var why string
		switch {
		case use != "":
			// A write of shared state: beside another test it races, and
			// what one test leaves the next one meets.
			why = usePhrase(use, id.Name) + ", which every test shares"
		default:
			why = fmt.Sprintf("reads package-level variable %s, which %s", id.Name, how)
		}
		if from != "" {
			why = fmt.Sprintf("calls %s, which%s %s", chainOf(via, from), where, why)
		}
		why += ": every build's code is an implementation the tests run against, and made parallel the test would run after or beside the tests that change it"
		switch {
		case use == "writes it" || strings.HasSuffix(how, " writes it"):
			found = why
		case weak == "":
			weak = why
		}
	}
	c.namesOfTest(root, add)
	// The test's own reads, typed (its file may hold an earlier rule's
	// rewrite, which the directory scan did not read): a variable only
	// another build changes.
	ast.Inspect(root, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && found == "" {
			if tv, ok := c.info.Uses[id].(*types.Var); ok && tv.Pkg() == c.pass.Pkg && tv.Parent() == c.pass.Pkg.Scope() && v.written[tv.Name()] != "" {
				found = fmt.Sprintf("reads package-level variable %s, which %s: every build's code is an implementation the tests run against, and made parallel the test would run after or beside the tests that change it", tv.Name(), v.written[tv.Name()])
			}
		}
		return true
	})
	for len(queue) > 0 && found == "" {
		name := queue[0]
		queue = queue[1:]
		for _, decl := range v.funcs[name] {
			if decl.Body == nil {
				continue
			}
			v.namesIn(decl.Body, func(callee string) { add(callee, name) }, func(id *ast.Ident, stack []ast.Node) { check(id, stack, name) })
		}
	}
	if found == "" {
		found = weak
	}
	if found != "" {
		return found, false
	}
	// Another build's calls out of the package: the real clock is a
	// concrete reason (as in this build, see clock); a call the typed
	// analysis would not follow either (another package of the module, a
	// dependency, the standard library's stateful parts) leaves the test
	// alone without a report.
	other := ""
	for _, name := range reached {
		for _, decl := range v.funcs[name] {
			tf := v.fset.File(decl.Pos())
			if decl.Body == nil || !v.left[tf] {
				continue
			}
			clock, call := v.calls(decl.Body, v.imports[tf])
			if clock != "" {
				return fmt.Sprintf("calls %s, which in a file this build leaves out uses the real clock (%s): made parallel, it would run later (after the sequential tests) and beside other tests whose load stretches the time it waits or measures, so a check that depends on the time could fail on correct code or pass a bug", chainOf(via, name), clock), false
			}
			if other == "" {
				other = call
			}
		}
	}
	return other, other != ""
}

// calls returns, for root, code of a file the build leaves out whose
// imports are imports, its first use of the real clock ("time.Now at
// x.go:12") and its first call of another package's function the
// typed analysis would not judge pure, or "".
func (v *variants) calls(root ast.Node, imports map[string]string) (clock, other string) {
	ast.Inspect(root, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || clock != "" {
			return clock == ""
		}
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok || x.Obj != nil {
			return true
		}
		path, ok := imports[x.Name]
		if !ok {
			return true
		}
		switch {
		case path == "time" && oneOf(sel.Sel.Name, clockFuncs),
			path == "context" && oneOf(sel.Sel.Name, []string{"WithTimeout", "WithDeadline", "WithTimeoutCause", "WithDeadlineCause"}):
			clock = path + "." + sel.Sel.Name + " at " + v.base(sel)
		case !pure[path] && other == "":
			other = "calls " + path + "." + sel.Sel.Name + " in " + v.base(sel) + ", a file this build leaves out"
		}
		return true
	})
	return clock, other
}

// namesOfTest adds the names of the package's functions the typed test
// body root names, and the methods code outside the package may call on
// the values it hands on (see handoffs).
func (c *checker) namesOfTest(root ast.Node, add func(name, from string)) {
	ast.Inspect(root, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if fn, ok := c.info.Uses[id].(*types.Func); ok && fn.Pkg() == c.pass.Pkg {
				add(typedKey(fn), "")
			}
		}
		return true
	})
	for _, h := range c.handoffs(root) {
		add(typedKey(h.method), "")
	}
}

// typedKey names fn as funcKey does.
func typedKey(fn *types.Func) string {
	if fn.Type().(*types.Signature).Recv() != nil {
		return "." + fn.Name()
	}
	return fn.Name()
}

// chainOf spells how name was reached: "New → ttlFor".
func chainOf(via map[string]string, name string) string {
	var chain []string
	for n := name; n != ""; n = via[n] {
		chain = append([]string{strings.TrimPrefix(n, ".")}, chain...)
		if len(chain) > 8 {
			break
		}
	}
	return strings.Join(chain, " → ")
}

// callsParallelOn reports whether body calls t.Parallel() on the
// variable named t (syntax only).
func callsParallelOn(body *ast.BlockStmt, t string) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Parallel" {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == t {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// calledVars returns the package-level variables of the package (any
// build) that some file calls as a function value: v(...).
func calledVars(files []*ast.File, v *variants) map[string]bool {
	called := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok && v.isVar(id) {
					called[id.Name] = true
				}
			}
			return true
		})
	}
	return called
}

// funcState is the syntax reading of funcstate.go for a file the build
// leaves out: a package-level variable id that the package calls, set
// (by its declaration, or by init or TestMain when inFunc) to a value
// that may be a function with state of its own (a closure a call
// returns, a method value bound to a variable), counts as written: every
// call may change that state, which no package-level variable names. A
// value that names a function or variable (F, pkg.F), a literal, or a
// function literal declared at package level keeps nothing of its own.
func (v *variants) funcState(f *ast.File, id *ast.Ident, val ast.Expr, inFunc bool) {
	if !v.called[id.Name] || v.written[id.Name] != "" || v.synStateless(f, val, inFunc) {
		return
	}
	v.written[id.Name] = fmt.Sprintf("holds a function value that may keep state of its own (set at %s, in a file this build leaves out): every call may change it", v.base(val))
}

// synStateless reports whether e, as far as its syntax says, holds no
// function value with state of its own.
func (v *variants) synStateless(f *ast.File, e ast.Expr, inFunc bool) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		return true // a function, nil, a constant; a variable is judged itself
	case *ast.BasicLit, *ast.BinaryExpr:
		return true
	case *ast.FuncLit:
		return !inFunc
	case *ast.SelectorExpr:
		// pkg.F names another package's function; x.m binds x.
		x, ok := ast.Unparen(e.X).(*ast.Ident)
		return ok && v.imports[v.fset.File(f.Pos())][x.Name] != "" && !v.vars[x.Name]
	case *ast.UnaryExpr:
		return e.Op != token.AND || v.synStateless(f, e.X, inFunc)
	case *ast.CompositeLit:
		for _, el := range e.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				el = kv.Value
			}
			if !v.synStateless(f, el, inFunc) {
				return false
			}
		}
		return true
	}
	// A call, an index, a conversion: what it gives may be a closure.
	return false
}

package bubble

import (
	"fmt"
	"go/ast"
	"go/token"
	"path/filepath"
	"sort"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// In a synctest bubble, time moves only when every goroutine of the
// bubble is durably blocked; a goroutine waiting for a sync.Mutex is
// not. So code that takes a lock and then, before releasing it, sleeps,
// waits on a timer, a ticker, time.After, a channel or a WaitGroup
// (itself or through a call: of a function of the package, or of a
// function value, which may be a callback of the test that sleeps)
// stops the bubble's clock as soon as a second goroutine wants the
// lock: the sleeper never wakes, and the test hangs where the original
// failed at a check (a reader that waited behind a refresh) or passed.
// A bug may be exactly that, so the hazard is read in every build of
// the package (files the build leaves out too, by their syntax), and in
// no test file: the code under test's. A test of such a package is not
// put in a bubble. Running cannot reliably tell: the hang needs the
// bug's build, or a second goroutine at the right moment.

type lockWaitKey struct{}

// lockWaitHazard says where code of the package, in any build, holds a
// lock across a wait ("c.mu held from cache.go:38 across c.startRefresh
// at cache.go:41, which calls the function value c.load at
// refresh_late.go:12"), or "". It reads the package's directory once.
func (a *Analysis) lockWaitHazard() string {
	if a.lockWait != nil {
		return *a.lockWait
	}
	why := a.readLockWait()
	a.lockWait = &why
	return why
}

// codeStartsGoroutines reports whether the package's code, in any build
// (read from its syntax), may start a goroutine: a go statement, a call
// of a function or method named AfterFunc or Go (time.AfterFunc,
// errgroup's and sync.WaitGroup's Go). A lock held across a wait stops a
// bubble's clock only when a second goroutine of the bubble wants it:
// with none in the test, in what it reaches, or in any build of the
// code, no goroutine of the bubble can (go-retry's backoff, which holds
// its lock across the user's function value, called by tests that start
// none).
func (a *Analysis) codeStartsGoroutines() bool {
	if a.goStarts != nil {
		return *a.goStarts
	}
	found := false
	for _, lf := range a.codeFiles() {
		ast.Inspect(lf.f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				found = true
			case *ast.SelectorExpr:
				if n.Sel.Name == "AfterFunc" || n.Sel.Name == "Go" {
					found = true
				}
			}
			return !found
		})
		if found {
			break
		}
	}
	a.goStarts = &found
	return found
}

// lockFile is a parsed non-test file of the package, in any build.
type lockFile struct {
	name string
	fset *token.FileSet
	f    *ast.File
}

func (a *Analysis) readLockWait() string {
	files := a.codeFiles()
	if len(files) == 0 {
		return ""
	}
	lw := &lockWaits{fieldKinds: map[string]map[string]string{}, importsOf: map[*lockFile]map[string]string{}, decls: map[string][]*lockDecl{}, fields: map[string]bool{}, conds: map[string]bool{}, memo: map[*ast.FuncDecl]*string{}}
	for _, lf := range files {
		ast.Inspect(lf.f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Body != nil {
					lw.decls[n.Name.Name] = append(lw.decls[n.Name.Name], &lockDecl{file: lf, decl: n})
				}
			case *ast.TypeSpec:
				if st, ok := n.Type.(*ast.StructType); ok {
					kinds := map[string]string{}
					for _, fd := range st.Fields.List {
						for _, id := range fd.Names {
							kinds[id.Name] = typeName(fd.Type, lw.imports(lf))
						}
					}
					lw.fieldKinds[n.Name.Name] = kinds
				}
			case *ast.StructType:
				for _, fd := range n.Fields.List {
					if _, ok := fd.Type.(*ast.FuncType); ok {
						for _, id := range fd.Names {
							lw.fields[id.Name] = true
						}
					}
					if isCond(fd.Type) {
						for _, id := range fd.Names {
							lw.conds[id.Name] = true
						}
					}
				}
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if n.Type != nil && isCond(n.Type) || i < len(n.Values) && isCond(n.Values[i]) {
						lw.conds[id.Name] = true
					}
				}
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					if i < len(n.Rhs) && isCond(n.Rhs[i]) {
						if id := lastName(l); id != "" {
							lw.conds[id] = true
						}
					}
				}
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok && isCond(n.Value) {
					lw.conds[id.Name] = true
				}
			}
			return true
		})
	}
	names := make([]string, 0, len(lw.decls))
	for n := range lw.decls {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, d := range lw.decls[n] {
			if why := lw.held(d); why != "" {
				return why + ": in a synctest bubble a goroutine waiting for the lock is not durably blocked, so the clock stops and the wait never ends (a hang where the test failed or passed), whichever build has it"
			}
		}
	}
	return ""
}

// codeFiles parses the package's non-test Go files, of every build: the
// directory's, or the analysed ones when the package has no directory
// of its own (a driver's in-memory files).
func (a *Analysis) codeFiles() []*lockFile {
	if a.files == nil {
		a.files = a.readCodeFiles()
	}
	return *a.files
}

func (a *Analysis) readCodeFiles() *[]*lockFile {
	var out []*lockFile
	for _, f := range a.pass.AllFiles {
		name := a.pass.Fset.File(f.Pos()).Name()
		if !strings.HasSuffix(name, "_test.go") {
			out = append(out, &lockFile{name: name, fset: a.pass.Fset, f: f})
		}
	}
	fset := token.NewFileSet()
	files, err := match.LeftOutFiles(fset, a.pass.Fset, a.pass.AllFiles)
	if err != nil {
		return &out
	}
	for _, lf := range files {
		if lf.Err != nil || strings.HasSuffix(lf.Path, "_test.go") {
			continue
		}
		out = append(out, &lockFile{name: lf.Path, fset: fset, f: lf.File})
	}
	return &out
}

type lockDecl struct {
	file *lockFile
	decl *ast.FuncDecl
}

type lockWaits struct {
	// fieldKinds holds, for each struct type of the package (every
	// build's), what kindOf says of each field's type.
	fieldKinds map[string]map[string]string
	importsOf  map[*lockFile]map[string]string
	decls      map[string][]*lockDecl // by name, every build's
	fields     map[string]bool        // struct fields of a function type
	conds      map[string]bool        // variables and fields holding a sync.Cond
	memo       map[*ast.FuncDecl]*string
}

func (lf *lockFile) at(pos token.Pos) string {
	p := lf.fset.Position(pos)
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

// held says where d takes a lock and waits before releasing it, or "".
func (lw *lockWaits) held(d *lockDecl) string {
	var why string
	var walk func(list []ast.Stmt)
	walk = func(list []ast.Stmt) {
		for i, st := range list {
			if why != "" {
				return
			}
			if recv, ok := lockCall(st, "Lock", "RLock"); ok {
				if w := lw.heldWait(d, list[i+1:], recv); w != "" {
					why = fmt.Sprintf("%s held from %s across %s", recv, d.file.at(st.Pos()), w)
					return
				}
			}
			// Nested blocks take their own locks.
			ast.Inspect(st, func(n ast.Node) bool {
				if why != "" {
					return false
				}
				switch n := n.(type) {
				case *ast.FuncLit:
					walk(n.Body.List)
					return false
				case *ast.BlockStmt:
					if ast.Node(n) != ast.Node(st) {
						walk(n.List)
						return false
					}
				case *ast.CaseClause:
					walk(n.Body)
					return false
				case *ast.CommClause:
					walk(n.Body)
					return false
				case *ast.CallExpr:
					if w := lw.onceWait(d, n); w != "" {
						why = w
						return false
					}
				}
				return true
			})
		}
	}
	walk(d.decl.Body.List)
	return why
}

// onceWait says where call runs a function under a sync.Once's lock
// (once.Do(f), sync.OnceFunc(f), sync.OnceValue(f), sync.OnceValues(f))
// that waits, in any build, or "". The Once holds its mutex while f
// runs, and a second caller waits for it, not durably: a config loaded
// once on the first read that a bug makes wait for its source stops the
// bubble's clock as a lock held across a wait does (red team batch 21,
// lazyconf and lwwconf).
func (lw *lockWaits) onceWait(d *lockDecl, call *ast.CallExpr) string {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || len(call.Args) != 1 {
		return ""
	}
	switch sel.Sel.Name {
	case "Do":
	case "OnceFunc", "OnceValue", "OnceValues":
		if x, ok := sel.X.(*ast.Ident); !ok || lw.imports(d.file)[x.Name] != "sync" {
			return ""
		}
	default:
		return ""
	}
	what := exprText(call.Fun) + " at " + d.file.at(call.Pos())
	switch f := ast.Unparen(call.Args[0]).(type) {
	case *ast.FuncLit:
		if w := lw.waitIn(d, f.Body, 0); w != "" {
			return fmt.Sprintf("the sync.Once of %s holds its lock while its function waits (%s)", what, w)
		}
	case *ast.Ident, *ast.SelectorExpr:
		name := lastName(f)
		for _, fd := range lw.decls[name] {
			if w := lw.waitIn(fd, fd.decl.Body, 1); w != "" {
				return fmt.Sprintf("the sync.Once of %s holds its lock while %s waits (%s)", what, name, w)
			}
		}
	}
	return ""
}

// heldWait says where list, run while recv is held, waits before
// releasing it, or "". An Unlock of recv in the list ends the hold for
// the statements after it, and a Lock takes it again; a nested block is
// read the same way (the lock released in a branch before a wait there:
// `if d > 0 { mu.Unlock(); <-time.After(d); mu.Lock() }`), and the hold
// is taken to be back after it, as on the path that skips the branch.
// A select is read whole (its clauses wait with it).
func (lw *lockWaits) heldWait(d *lockDecl, list []ast.Stmt, recv string) string {
	held := true
	for _, st := range list {
		if r, ok := lockCall(st, "Unlock", "RUnlock"); ok && r == recv {
			held = false
			continue
		}
		if r, ok := lockCall(st, "Lock", "RLock"); ok && r == recv {
			held = true
			continue
		}
		if !held {
			continue
		}
		if w := lw.stmtWait(d, st, recv); w != "" {
			return w
		}
	}
	return ""
}

// stmtWait says where st, run while recv is held, waits before releasing
// it, or "": its blocks as heldWait reads them, the rest as waitIn does.
func (lw *lockWaits) stmtWait(d *lockDecl, st ast.Stmt, recv string) string {
	parts := func(nodes ...ast.Node) string {
		for _, n := range nodes {
			if n == nil {
				continue
			}
			var w string
			switch n := n.(type) {
			case ast.Stmt: // a block too
				w = lw.stmtWait(d, n, recv)
			default:
				w = lw.waitIn(d, n, 0)
			}
			if w != "" {
				return w
			}
		}
		return ""
	}
	switch st := st.(type) {
	case *ast.BlockStmt:
		return lw.heldWait(d, st.List, recv)
	case *ast.LabeledStmt:
		return lw.stmtWait(d, st.Stmt, recv)
	case *ast.IfStmt:
		return parts(opt(st.Init), optExpr(st.Cond), st.Body, opt(st.Else))
	case *ast.ForStmt:
		return parts(opt(st.Init), optExpr(st.Cond), opt(st.Post), st.Body)
	case *ast.RangeStmt:
		return parts(optExpr(st.X), st.Body)
	case *ast.SwitchStmt:
		if w := parts(opt(st.Init), optExpr(st.Tag)); w != "" {
			return w
		}
		return lw.clauses(d, st.Body, recv)
	case *ast.TypeSwitchStmt:
		if w := parts(opt(st.Init), opt(st.Assign)); w != "" {
			return w
		}
		return lw.clauses(d, st.Body, recv)
	}
	return lw.waitIn(d, st, 0)
}

// clauses reads a switch's case clauses: their expressions as waitIn
// does, their bodies as heldWait does.
func (lw *lockWaits) clauses(d *lockDecl, body *ast.BlockStmt, recv string) string {
	for _, c := range body.List {
		cc, ok := c.(*ast.CaseClause)
		if !ok {
			continue
		}
		for _, e := range cc.List {
			if w := lw.waitIn(d, e, 0); w != "" {
				return w
			}
		}
		if w := lw.heldWait(d, cc.Body, recv); w != "" {
			return w
		}
	}
	return ""
}

// opt and optExpr turn a nil statement or expression into a nil node,
// not an interface holding a nil pointer.
func opt(s ast.Stmt) ast.Node {
	if s == nil {
		return nil
	}
	return s
}

func optExpr(e ast.Expr) ast.Node {
	if e == nil {
		return nil
	}
	return e
}

// lockCall reports whether st is recv.Lock() (or a deferred one; a
// deferred Unlock holds to the end) for one of names, and its receiver.
func lockCall(st ast.Stmt, names ...string) (string, bool) {
	var call *ast.CallExpr
	switch st := st.(type) {
	case *ast.ExprStmt:
		call, _ = ast.Unparen(st.X).(*ast.CallExpr)
	default:
		return "", false
	}
	if call == nil || len(call.Args) != 0 {
		return "", false
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	for _, n := range names {
		if sel.Sel.Name == n {
			return exprText(sel.X), true
		}
	}
	return "", false
}

func exprText(e ast.Expr) string {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprText(e.X) + "." + e.Sel.Name
	case *ast.StarExpr:
		return "*" + exprText(e.X)
	}
	return "the lock"
}

// waitIn says where n waits (naming the file:line), or "": a sleep, a
// timer's or ticker's wait, time.After, a receive, a send, a select
// without a default, a Wait (not a sync.Cond's, which releases the
// lock), or a call of a function of the package that waits, or of a
// function value (a field of a function type, a parameter).
func (lw *lockWaits) waitIn(in *lockDecl, n ast.Node, depth int) string {
	lf := in.file
	var why string
	ast.Inspect(n, func(n ast.Node) bool {
		if why != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // runs later, or elsewhere
		case *ast.GoStmt:
			return false
		case *ast.DeferStmt:
			return false
		case *ast.SendStmt:
			why = "a send at " + lf.at(n.Pos())
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				why = "a receive at " + lf.at(n.Pos())
			}
		case *ast.SelectStmt:
			for _, cl := range n.Body.List {
				if cc, ok := cl.(*ast.CommClause); ok && cc.Comm == nil {
					// A default: the select does not wait; its clauses'
					// bodies are still read.
					for _, b := range n.Body.List {
						for _, s := range b.(*ast.CommClause).Body {
							if w := lw.waitIn(in, s, depth); w != "" && why == "" {
								why = w
							}
						}
					}
					return false
				}
			}
			why = "a select at " + lf.at(n.Pos())
		case *ast.CallExpr:
			why = lw.callWait(in, n, depth)
		}
		return why == ""
	})
	return why
}

func (lw *lockWaits) callWait(in *lockDecl, call *ast.CallExpr, depth int) string {
	lf := in.file
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.SelectorExpr:
		name := fun.Sel.Name
		if x, ok := fun.X.(*ast.Ident); ok && x.Name == "time" {
			switch name {
			case "Sleep", "After", "Tick":
				return "time." + name + " at " + lf.at(call.Pos())
			}
			return ""
		}
		if name == "Wait" && len(call.Args) == 0 && !lw.conds[lastName(fun.X)] && !strings.Contains(strings.ToLower(exprText(fun.X)), "cond") {
			return exprText(fun.X) + ".Wait at " + lf.at(call.Pos())
		}
		if lw.fields[name] && lw.decls[name] == nil {
			return "the function value " + exprText(fun) + " at " + lf.at(call.Pos()) + ", which may sleep"
		}
		// A method is the package's only on a value of the package's
		// type: time.Now().Add or s.ticker.Stop (a *time.Ticker field)
		// is another package's, whatever the package names its own.
		kind := lw.kindOf(in, fun.X)
		if kind == foreignKind {
			return ""
		}
		return lw.declWait(lf, lw.methods(name, kind), exprText(fun), call, depth)
	case *ast.Ident:
		if lw.decls[fun.Name] == nil {
			if isParamFunc(fun) {
				return "the function value " + fun.Name + " at " + lf.at(call.Pos()) + ", which may sleep"
			}
			return ""
		}
		var funcs []*lockDecl
		for _, d := range lw.decls[fun.Name] {
			if d.decl.Recv == nil {
				funcs = append(funcs, d)
			}
		}
		return lw.declWait(lf, funcs, fun.Name, call, depth)
	}
	return ""
}

// foreignKind is kindOf's answer for a value of another package's type.
const foreignKind = "\x00foreign"

// methods are the package's functions named name that a call on a value
// of kind (a type of the package's, or "" when the syntax does not tell)
// may run: the methods of that type, or, when it declares none of that
// name (one promoted from an embedded field) or the type is unknown,
// every one so named.
func (lw *lockWaits) methods(name, kind string) []*lockDecl {
	if kind == "" {
		return lw.decls[name]
	}
	var out []*lockDecl
	for _, d := range lw.decls[name] {
		if declRecv(d.decl) == kind {
			out = append(out, d)
		}
	}
	if out == nil {
		return lw.decls[name]
	}
	return out
}

// declRecv is the name of the type d is a method of, or "".
func declRecv(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return ""
	}
	return typeName(d.Recv.List[0].Type, nil)
}

// typeName is the package's type a type expression names (T, *T, T[P]),
// foreignKind for another package's (imports: the file's import names),
// or "".
func typeName(e ast.Expr, imports map[string]string) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return typeName(t.X, imports)
	case *ast.ParenExpr:
		return typeName(t.X, imports)
	case *ast.IndexExpr:
		return typeName(t.X, imports)
	case *ast.IndexListExpr:
		return typeName(t.X, imports)
	case *ast.Ident:
		return t.Name
	case *ast.SelectorExpr:
		if x, ok := t.X.(*ast.Ident); ok && imports[x.Name] != "" {
			return foreignKind
		}
	}
	return ""
}

// kindOf is, by syntax, the type of the value e in the function in: the
// package's type name, foreignKind for another package's (a call of
// another package's function, a receiver, parameter or field declared of
// its type, a method called on such a value), or "" when it does not
// tell.
func (lw *lockWaits) kindOf(in *lockDecl, e ast.Expr) string {
	imports := lw.imports(in.file)
	switch x := ast.Unparen(e).(type) {
	case *ast.StarExpr:
		return lw.kindOf(in, x.X)
	case *ast.Ident:
		if imports[x.Name] != "" {
			return foreignKind // pkg.F: another package's function
		}
		d := in.decl
		if d.Recv != nil {
			for _, f := range d.Recv.List {
				for _, id := range f.Names {
					if id.Name == x.Name {
						return typeName(f.Type, imports)
					}
				}
			}
		}
		for _, f := range d.Type.Params.List {
			for _, id := range f.Names {
				if id.Name == x.Name {
					return typeName(f.Type, imports)
				}
			}
		}
	case *ast.SelectorExpr:
		if k := lw.kindOf(in, x.X); k != "" && k != foreignKind {
			return lw.fieldKinds[k][x.Sel.Name]
		}
	case *ast.CallExpr:
		if sel, ok := ast.Unparen(x.Fun).(*ast.SelectorExpr); ok && lw.kindOf(in, sel.X) == foreignKind {
			return foreignKind // time.Now(), or a method of one: time.Now().UTC()
		}
	}
	return ""
}

// imports are lf's import names, read once.
func (lw *lockWaits) imports(lf *lockFile) map[string]string {
	if m, ok := lw.importsOf[lf]; ok {
		return m
	}
	m := match.ImportNames(lf.f)
	lw.importsOf[lf] = m
	return m
}

// isParamFunc is a syntactic guess: without types, an identifier called
// that is no function of the package is a parameter or local of a
// function type, or a builtin. Builtins do not wait.
func isParamFunc(id *ast.Ident) bool {
	switch id.Name {
	case "len", "cap", "append", "copy", "delete", "make", "new", "panic", "print", "println", "recover", "close", "clear", "min", "max", "complex", "real", "imag",
		"string", "int", "int64", "int32", "uint", "uint64", "uint32", "float64", "float32", "byte", "rune", "bool", "error", "any", "uintptr", "int8", "int16", "uint8", "uint16":
		return false
	}
	return id.Obj == nil || id.Obj.Kind == ast.Var
}

// declWait says where one of decls, functions of the package (in any
// build), waits, or "".
func (lw *lockWaits) declWait(lf *lockFile, decls []*lockDecl, text string, call *ast.CallExpr, depth int) string {
	if depth > 6 {
		return ""
	}
	for _, d := range decls {
		memo, ok := lw.memo[d.decl]
		if !ok {
			lw.memo[d.decl] = new(string) // a recursion waits for nothing more
			w := lw.waitIn(d, d.decl.Body, depth+1)
			lw.memo[d.decl] = &w
			memo = &w
		}
		if *memo != "" {
			return fmt.Sprintf("%s at %s, which waits (%s)", text, lf.at(call.Pos()), *memo)
		}
	}
	return ""
}

// isCond reports whether e, a type or a value, is a sync.Cond by its
// syntax: sync.Cond, *sync.Cond, sync.NewCond(...), &sync.Cond{...}.
func isCond(e ast.Expr) bool {
	switch x := ast.Unparen(e).(type) {
	case *ast.StarExpr:
		return isCond(x.X)
	case *ast.UnaryExpr:
		return x.Op == token.AND && isCond(x.X)
	case *ast.CompositeLit:
		return x.Type != nil && isCond(x.Type)
	case *ast.CallExpr:
		return isCond(x.Fun)
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == "sync" && (x.Sel.Name == "Cond" || x.Sel.Name == "NewCond")
	}
	return false
}

// lastName is the last name of a variable or field expression (c.free:
// free), or "".
func lastName(e ast.Expr) string {
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	}
	return ""
}

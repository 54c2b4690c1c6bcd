package bubble

import (
	"go/ast"
	"go/build"
	"go/token"
	"go/types"
	"path/filepath"
	"sort"
	"strings"

	"github.com/unflake/unflake/internal/modsrc"
)

// Two more hazards of a bubble's clock hide where the typed walk does not
// look: in a build of the package the analysis does not type (a file a
// build tag swaps in) and in the module's packages the code imports,
// read here from their syntax (internal/modsrc), every build:
//
//   - a reading of the clock made a number and used as entropy
//     (now.Nanosecond() & 0xfffff as a jitter, now.UnixNano() % n,
//     rand.NewSource(now.UnixNano()), a hash of it, a map key or an
//     index): a bubble's clock starts at 2000-01-01 00:00:00.000000000
//     and moves only by the waits, so the number is constant or aligned
//     there (its nanoseconds 0) where real time gives it entropy, and a
//     bug it scales (a jitter in milliseconds, not nanoseconds) fails the
//     original and vanishes in the bubble. The correct code passes either
//     way, so running it cannot tell: not fixed;
//   - a loop that spins on the real clock in a build the analysis does
//     not type (a bug's: hold the request until the bucket leaks): the
//     typed walk finds such loops in the build it reads (unproven: a
//     hang shows in a run), but running the correct build cannot show
//     the bug's, which hangs in the bubble where the original failed at
//     a check: not fixed.

// A modFile is a non-test file the code under test may run, by syntax.
type modFile struct {
	lf  *lockFile
	pkg string // its directory: the package it belongs to
	// built tells the file is in the build the analysis types (the
	// package's own) or would be in the default build (a module
	// package's, whose effect summaries read that build).
	built bool
}

// moduleCode reads, once, the package's non-test files and those of the
// module's packages it imports, every build.
func (a *Analysis) moduleCode() []modFile {
	if a.modCode != nil {
		return *a.modCode
	}
	var out []modFile
	typed := map[string]bool{}
	for _, f := range a.pass.AllFiles {
		typed[a.pass.Fset.File(f.Pos()).Name()] = true
	}
	m := modsrc.Reach(a.pass.Fset, a.pass.AllFiles)
	for i, p := range m.Packages {
		for _, f := range p.Files {
			if f.Syntax == nil || strings.HasSuffix(f.Path, "_test.go") {
				continue
			}
			built := typed[f.Path]
			if i > 0 {
				ok, err := build.Default.MatchFile(p.Dir, filepath.Base(f.Path))
				built = ok && err == nil
			}
			out = append(out, modFile{lf: &lockFile{name: f.Path, fset: m.Fset, f: f.Syntax}, pkg: p.Dir, built: built})
		}
	}
	if len(m.Packages) == 0 {
		// No directory (a driver's in-memory files): the package's own,
		// as codeFiles reads them.
		for _, lf := range a.codeFiles() {
			out = append(out, modFile{lf: lf, pkg: ".", built: typed[lf.name]})
		}
	}
	a.modCode = &out
	return out
}

// byPackage groups files by their package, in the order met.
func byPackage(files []modFile) [][]modFile {
	var out [][]modFile
	at := map[string]int{}
	for _, f := range files {
		i, ok := at[f.pkg]
		if !ok {
			i = len(out)
			at[f.pkg] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], f)
	}
	return out
}

// entropyHazard says where code the test may run, in any build or in a
// module package, uses a reading of the clock made a number as entropy,
// or "".
func (a *Analysis) entropyHazard() string {
	var hits []string
	for _, files := range byPackage(a.moduleCode()) {
		if at := entropyIn(files); at != "" {
			hits = append(hits, at)
		}
	}
	if len(hits) == 0 {
		return ""
	}
	sort.Strings(hits)
	return "the code under test, in some build or a package of the module it imports, uses a reading of the clock made a number as entropy (" + hits[0] + "): a synctest bubble's clock starts at 2000-01-01 00:00:00.000000000 and moves only by the waits, so the number is constant or aligned there (its nanoseconds 0, its seconds round) where real time gives it entropy, and a bug it scales (a jitter in milliseconds, not nanoseconds) that the original catches vanishes in the bubble; running the correct code cannot tell"
}

// timeInts are the methods of time.Time that make a reading a number.
var timeInts = map[string]bool{
	"Nanosecond": true, "Second": true, "Minute": true, "Hour": true, "Day": true, "YearDay": true,
	"Weekday": true, "Month": true, "Year": true,
	"Unix": true, "UnixNano": true, "UnixMilli": true, "UnixMicro": true,
}

// entropyIn names the first use of a reading made a number as entropy
// in the files of one package, "x at file:line", or "". A number is a
// reading's when it is x.M() for M in timeInts and x a time by syntax
// (timeNames), through conversions, or a variable set to one. It is used
// as entropy when masked, shifted, divided or taken a remainder of
// (coarsened's now.Unix()/60 aside, which coarseHazard reports), made a
// map key or an index, or handed to a call (a seed, a hash, a name);
// not when added, subtracted or compared (an instant, a difference of
// two readings: other hazards' matter), stored in an atomic, or turned
// back into a time (time.Unix).
func entropyIn(files []modFile) string {
	tn := &timeNames{values: map[string]bool{}, funcs: map[string]bool{}, containers: map[string]bool{}}
	for _, f := range files {
		tn.declared(f.lf.f, timeName(f.lf.f))
	}
	for range 2 {
		for _, f := range files {
			tn.assigned(f.lf.f, timeName(f.lf.f))
		}
	}
	nums := map[string]bool{}
	var isNum func(e ast.Expr, tm string) bool
	isNum = func(e ast.Expr, tm string) bool {
		switch e := ast.Unparen(e).(type) {
		case *ast.CallExpr:
			if sel, ok := ast.Unparen(e.Fun).(*ast.SelectorExpr); ok && timeInts[sel.Sel.Name] && len(e.Args) == 0 {
				return tn.isTime(sel.X, tm)
			}
			return numConversion(e, tm) && isNum(e.Args[0], tm)
		case *ast.Ident:
			return nums[e.Name]
		}
		return false
	}
	// ns := now.UnixNano(): the name holds the number.
	for range 2 {
		for _, f := range files {
			tm := timeName(f.lf.f)
			ast.Inspect(f.lf.f, func(n ast.Node) bool {
				if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == len(as.Rhs) {
					for i, r := range as.Rhs {
						if id, ok := as.Lhs[i].(*ast.Ident); ok && isNum(r, tm) {
							nums[id.Name] = true
						}
					}
				}
				return true
			})
		}
	}
	var hits []string
	for _, f := range files {
		tm := timeName(f.lf.f)
		if tm == "" {
			continue
		}
		matchStack(f.lf.f, func(n ast.Node, stack []ast.Node) {
			e, ok := n.(ast.Expr)
			if !ok || !isNum(e, tm) {
				return
			}
			if _, conv := stack[len(stack)-1].(*ast.CallExpr); conv && numConversion(stack[len(stack)-1].(*ast.CallExpr), tm) {
				return // the conversion is looked at instead
			}
			use := entropyUse(e, stack, tm, tn)
			switch use.(type) {
			case nil:
				return
			case *ast.IndexExpr, *ast.KeyValueExpr:
				if f.built {
					// A key in the build the analysis types is the
					// walk's (clockScan.key): two equal readings
					// collide on the correct code too, which a run
					// shows.
					return
				}
			}
			hits = append(hits, nodeString(use)+" at "+f.lf.at(use.Pos()))
		})
	}
	if len(hits) == 0 {
		return ""
	}
	sort.Strings(hits)
	return hits[0]
}

// entropyUse returns the expression that uses the number e (enclosed by
// stack) as entropy, or nil.
func entropyUse(e ast.Expr, stack []ast.Node, tm string, tn *timeNames) ast.Node {
	parent := stack[len(stack)-1]
	if p, ok := parent.(*ast.ParenExpr); ok && len(stack) > 1 {
		return entropyUse(p, stack[:len(stack)-1], tm, tn)
	}
	switch p := parent.(type) {
	case *ast.BinaryExpr:
		switch p.Op {
		case token.AND, token.OR, token.XOR, token.AND_NOT, token.SHL, token.SHR:
			return p
		case token.QUO, token.REM:
			if p.X == e && tn.unixOf(e, tm) {
				return nil // coarsened: coarseHazard's
			}
			return p
		}
	case *ast.AssignStmt:
		switch p.Tok {
		case token.AND_ASSIGN, token.OR_ASSIGN, token.XOR_ASSIGN, token.AND_NOT_ASSIGN, token.SHL_ASSIGN, token.SHR_ASSIGN, token.QUO_ASSIGN, token.REM_ASSIGN:
			return p
		}
	case *ast.IndexExpr:
		if p.Index == e {
			return p
		}
	case *ast.KeyValueExpr:
		if p.Key == e {
			return p
		}
	case *ast.CallExpr:
		if p.Fun == e || keepsInstant(p, tm) {
			return nil
		}
		return p
	}
	return nil
}

// keepsInstant reports whether call keeps, rebuilds or reports an
// instant rather than mixing it: time.Unix(sec, nsec) (a coarsening
// there is coarseHazard's), an atomic's Store, Swap or CompareAndSwap
// (last.Store(now.UnixNano())), append, min and max, and a print or a
// log line (log.Printf, t.Logf, logger.Info, fmt.Errorf), which no check
// reads back as a number (fmt.Sprint makes a name: not here).
func keepsInstant(call *ast.CallExpr, tm string) bool {
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		switch fun.Name {
		case "append", "min", "max":
			return true
		}
	case *ast.SelectorExpr:
		if isPkgSel(fun, tm, "Unix", "UnixMilli", "UnixMicro") {
			return true
		}
		name := fun.Sel.Name
		for _, p := range []string{"Store", "Swap", "CompareAndSwap", "Print", "Fprint", "Log", "Debug", "Info", "Warn", "Error"} {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
	}
	return false
}

// numConversion reports whether call converts one value to a number
// type by syntax: int64(x), uint32(x), float64(x), time.Duration(x).
func numConversion(call *ast.CallExpr, tm string) bool {
	if len(call.Args) != 1 {
		return false
	}
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		switch fun.Name {
		case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "uintptr", "float32", "float64", "byte", "rune":
			return true
		}
	case *ast.SelectorExpr:
		return isPkgSel(fun, tm, "Duration")
	}
	return false
}

// matchStack calls f for each node of root with a parent, and its
// enclosing nodes, outermost first.
func matchStack(root ast.Node, f func(n ast.Node, stack []ast.Node)) {
	var stack []ast.Node
	ast.Inspect(root, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		if len(stack) > 0 {
			f(n, stack)
		}
		stack = append(stack, n)
		return true
	})
}

// nodeString is an expression's text, or an assignment's.
func nodeString(n ast.Node) string {
	if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == 1 && len(as.Rhs) == 1 {
		return types.ExprString(as.Lhs[0]) + " " + as.Tok.String() + " " + types.ExprString(as.Rhs[0])
	}
	if e, ok := n.(ast.Expr); ok {
		return types.ExprString(e)
	}
	return "a statement"
}

// otherBuildSpin says where code the analysis does not type (a file the
// package's build leaves out, a module package's file the default build
// leaves out) spins on the real clock in a loop that never blocks, by
// syntax, or "". The typed build's loops are the walk's (spin) and the
// effect summaries' (a module package's default build).
func (a *Analysis) otherBuildSpin() string {
	var hits []string
	for _, files := range byPackage(a.moduleCode()) {
		sp := &syntaxSpins{decls: map[string][]*ast.FuncDecl{}}
		for _, f := range files {
			for _, d := range f.lf.f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					sp.decls[fd.Name.Name] = append(sp.decls[fd.Name.Name], fd)
				}
			}
		}
		for _, f := range files {
			if f.built {
				continue
			}
			tm := timeName(f.lf.f)
			if tm == "" {
				continue
			}
			for _, d := range f.lf.f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					if loop, ok := n.(*ast.ForStmt); ok && sp.spins(loop, tm) {
						hits = append(hits, f.lf.at(loop.For)+" in "+fd.Name.Name)
					}
					return true
				})
			}
		}
	}
	if len(hits) == 0 {
		return ""
	}
	sort.Strings(hits)
	return "code the analysis does not type (another build of the package, or of a package of the module it imports) spins on the real clock in a loop that never blocks (" + hits[0] + "): " + spinHangs + "; the test would hang in that build where the original fails at a check, and running the correct build cannot tell"
}

// syntaxSpins finds, by syntax, loops that spin on the clock
// (effects.SpinsOnClock's, without types): a condition that ends the
// loop reads the clock (time.Now, time.Since, time.Until, or a variable
// the loop sets from them) and nothing in it blocks: no channel
// operation, select without a default, time.Sleep, Wait, or call of a
// function of the package (by name, any build) that does.
type syntaxSpins struct {
	decls map[string][]*ast.FuncDecl
}

func (sp *syntaxSpins) spins(loop *ast.ForStmt, tm string) bool {
	vars := map[string]bool{}
	reads := func(e ast.Node) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.CallExpr:
				if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok && isPkgSel(sel, tm, "Now", "Since", "Until") {
					found = true
				}
			case *ast.Ident:
				found = found || vars[n.Name]
			}
			return !found
		})
		return found
	}
	for changed := true; changed; {
		changed = false
		ast.Inspect(loop, func(n ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == len(as.Rhs) {
				for i, l := range as.Lhs {
					if id, ok := l.(*ast.Ident); ok && !vars[id.Name] && reads(as.Rhs[i]) {
						vars[id.Name], changed = true, true
					}
				}
			}
			_, lit := n.(*ast.FuncLit)
			return !lit
		})
	}
	exit := loop.Cond != nil && reads(loop.Cond)
	ast.Inspect(loop.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit, *ast.GoStmt:
			return false
		case *ast.IfStmt:
			if !exit && syntaxLeaves(n.Body) && (reads(n.Cond) || n.Init != nil && reads(n.Init)) {
				exit = true
			}
		}
		return true
	})
	return exit && !sp.blocks(loop, tm, map[*ast.FuncDecl]bool{})
}

// blocks reports whether n may block durably, by syntax, itself or
// through a function of the package it calls (seen guards recursion).
func (sp *syntaxSpins) blocks(n ast.Node, tm string, seen map[*ast.FuncDecl]bool) bool {
	blocked := false
	ast.Inspect(n, func(n ast.Node) bool {
		if blocked {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit, *ast.GoStmt:
			return false
		case *ast.SendStmt:
			blocked = true
		case *ast.UnaryExpr:
			blocked = n.Op == token.ARROW
		case *ast.SelectStmt:
			if !hasDefaultCase(n) {
				blocked = true
			}
		case *ast.CallExpr:
			name := ""
			switch fun := ast.Unparen(n.Fun).(type) {
			case *ast.Ident:
				name = fun.Name
			case *ast.SelectorExpr:
				if isPkgSel(fun, tm, "Sleep") || fun.Sel.Name == "Wait" {
					blocked = true
					return false
				}
				name = fun.Sel.Name
			}
			for _, d := range sp.decls[name] {
				if seen[d] {
					continue
				}
				seen[d] = true
				if sp.blocks(d.Body, tm, seen) {
					blocked = true
				}
			}
		}
		return !blocked
	})
	return blocked
}

func hasDefaultCase(s *ast.SelectStmt) bool {
	for _, c := range s.Body.List {
		if cc, ok := c.(*ast.CommClause); ok && cc.Comm == nil {
			return true
		}
	}
	return false
}

// syntaxLeaves reports whether body may leave the loop it is in, by
// syntax: a return, a goto, a break not of an inner loop, switch or
// select, panic, or a call that ends the goroutine or the process
// (Fatal, FailNow, Exit, Goexit).
func syntaxLeaves(body *ast.BlockStmt) bool {
	found := false
	var visit func(n ast.Node, inner bool)
	visit = func(n ast.Node, inner bool) {
		ast.Inspect(n, func(m ast.Node) bool {
			if found {
				return false
			}
			switch m := m.(type) {
			case *ast.FuncLit:
				return false
			case *ast.ReturnStmt:
				found = true
			case *ast.BranchStmt:
				found = m.Tok == token.GOTO || m.Tok == token.BREAK && (!inner || m.Label != nil)
			case *ast.CallExpr:
				switch fun := ast.Unparen(m.Fun).(type) {
				case *ast.Ident:
					found = fun.Name == "panic"
				case *ast.SelectorExpr:
					switch fun.Sel.Name {
					case "Fatal", "Fatalf", "Fatalln", "FailNow", "Exit", "Goexit", "Panic", "Panicf", "Panicln":
						found = true
					}
				}
			case *ast.ForStmt, *ast.RangeStmt, *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.SelectStmt:
				if m != n && !inner {
					visit(m, true)
					return false
				}
			}
			return !found
		})
	}
	visit(body, false)
	return found
}

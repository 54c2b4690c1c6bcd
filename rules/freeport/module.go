package freeport

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/unflake/unflake/internal/match"
)

// The typed analysis sees one build of the package. The code that may
// reach the fixed port is wider: the files of the package's directory
// that the build leaves out (another build tag, another GOOS: each an
// implementation the tests run against) and the module's packages that
// the package's files (every build, tests included) import, all the way
// down: the code the test binary links. A port spelt there as a value (8000+125,
// "127.0.0.1:"+strconv.Itoa(defaultPort), net.JoinHostPort(host, "8125"))
// is no literal text, and a check of the bytes misses it; the fake on the
// fixed port then sees what that code sends, and on a port the system
// picks no longer does. So the rule reads those files from their syntax
// and evaluates their constant expressions (literals, arithmetic, the
// package's named constants, iota, constants of the module's packages,
// strconv.Itoa and FormatInt, fmt.Sprint and Sprintf with %d, %s and %v,
// net.JoinHostPort): a value equal to the port, or a string holding it as
// a number of its own, keeps the listener where it is. A file it cannot
// parse may hold anything: not fixed either.

// A synPkg is a package read from its syntax.
type synPkg struct {
	dir     string
	files   []*ast.File
	consts  map[string]*constDecl
	imports map[*ast.File]map[string]string // name -> import path
}

// A constDecl is a named constant: its expression (the last given in its
// block, for an implicit repetition), its iota and its file.
type constDecl struct {
	expr  ast.Expr
	iota  int64
	file  *ast.File
	value constant.Value
	state int // 0 not evaluated, 1 being evaluated, 2 done
}

// A modScan reads the module's Go files outside the typed build.
type modScan struct {
	fset    *token.FileSet
	root    string
	modPath string
	pkgs    map[string]*synPkg // by directory
	broken  string
}

// valueElsewhere says where code the typed analysis does not see holds
// port as a value (a file of another build, a package of the module), or
// a file it cannot read; or "".
func (c *checker) valueElsewhere(port string) string {
	if !isDigits(port) {
		return ""
	}
	if c.scan == nil {
		c.scan = c.newScan()
	}
	m := c.scan
	n, _ := strconv.ParseInt(port, 10, 64)
	if m.broken != "" {
		return fmt.Sprintf("the rule cannot read %s, code of the module that may reach port %s", m.broken, port)
	}
	for _, p := range m.order() {
		for _, f := range p.files {
			name := m.fset.File(f.Pos()).Name()
			if c.typed[name] {
				continue // the typed analysis read it (elsewhere)
			}
			if at := m.holds(p, f, port, n); at != "" {
				where := "a file of the package the build leaves out, an implementation the tests also run against"
				if p.dir != m.pkgDir(c) {
					rel, _ := filepath.Rel(m.root, p.dir)
					where = "the module's package " + filepath.ToSlash(rel) + ", which the code under test may use"
				}
				return fmt.Sprintf("port %s also appears as a value at %s (%s): code that may send to or listen on the fixed port, which the test's listener would no longer be on", port, at, where)
			}
		}
	}
	return ""
}

// newScan reads the package's directory and the module's packages.
func (c *checker) newScan() *modScan {
	m := &modScan{fset: token.NewFileSet(), pkgs: map[string]*synPkg{}}
	c.typed = map[string]bool{}
	dir := ""
	for _, f := range c.pass.AllFiles {
		name := c.pass.Fset.File(f.Pos()).Name()
		c.typed[name] = true
		dir = filepath.Dir(name)
	}
	if dir == "" {
		return m
	}
	m.root = dir
	for d := dir; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			m.root, m.modPath = d, modfile.ModulePath(data)
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	// The package's own directory, every file; the module's packages its
	// files import (the code the test binary links), all the way down,
	// their non-test files.
	queue := []*synPkg{m.read(dir, true)}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, f := range p.files {
			for _, path := range p.imports[f] {
				sub, ok := m.dirOf(path)
				if !ok || m.pkgs[sub] != nil || !m.ofModule(sub) {
					continue
				}
				if len(m.pkgs) >= maxScannedFiles {
					m.broken = "the module's packages past the first " + strconv.Itoa(maxScannedFiles)
					return m
				}
				queue = append(queue, m.read(sub, false))
			}
		}
	}
	return m
}

// ofModule reports whether dir holds a package of the module itself: not
// in testdata, vendor or a nested module.
func (m *modScan) ofModule(dir string) bool {
	rel, err := filepath.Rel(m.root, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return false
	}
	for _, elem := range strings.Split(filepath.ToSlash(rel), "/") {
		if elem == "testdata" || elem == "vendor" || strings.HasPrefix(elem, "_") || strings.HasPrefix(elem, ".") && elem != "." {
			return false
		}
	}
	for d := dir; d != m.root && strings.HasPrefix(d, m.root); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return false
		}
	}
	return true
}

// pkgDir returns the package's own directory.
func (m *modScan) pkgDir(c *checker) string {
	for name := range c.typed {
		return filepath.Dir(name)
	}
	return ""
}

// order returns the packages read, the package's own first.
func (m *modScan) order() []*synPkg {
	var out []*synPkg
	for _, p := range m.pkgs {
		out = append(out, p)
	}
	// Deterministic: by directory.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].dir < out[j-1].dir; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// read parses the Go files of dir (its tests too when tests is set).
func (m *modScan) read(dir string, tests bool) *synPkg {
	if p, ok := m.pkgs[dir]; ok {
		return p
	}
	p := &synPkg{dir: dir, consts: map[string]*constDecl{}, imports: map[*ast.File]map[string]string{}}
	m.pkgs[dir] = p
	entries, err := os.ReadDir(dir)
	if err != nil {
		return p
	}
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".go" || !tests && strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(m.fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			if m.broken == "" {
				m.broken = filepath.Join(filepath.Base(dir), e.Name())
			}
			continue
		}
		p.files = append(p.files, f)
		p.imports[f] = match.ImportNames(f)
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			var last []ast.Expr
			for i, sp := range gd.Specs {
				vs := sp.(*ast.ValueSpec)
				if len(vs.Values) > 0 {
					last = vs.Values
				}
				for k, name := range vs.Names {
					if k < len(last) {
						p.consts[name.Name] = &constDecl{expr: last[k], iota: int64(i), file: f}
					}
				}
			}
		}
	}
	return p
}

// holds returns where in file f of p a constant expression's value is
// port (an integer n, or a string holding it as a number of its own), or "".
func (m *modScan) holds(p *synPkg, f *ast.File, port string, n int64) string {
	at := ""
	ast.Inspect(f, func(node ast.Node) bool {
		if at != "" {
			return false
		}
		if _, ok := node.(*ast.ImportSpec); ok {
			return false
		}
		e, ok := node.(ast.Expr)
		if !ok {
			return true
		}
		v := m.eval(p, f, e, -1, 0)
		if v == nil {
			return true
		}
		switch v.Kind() {
		case constant.Int:
			if i, ok := constant.Int64Val(v); ok && i == n {
				at = m.where(e)
			}
		case constant.String:
			if hasPort(constant.StringVal(v), port) {
				at = m.where(e)
			}
		}
		return false
	})
	return at
}

// eval evaluates e in file f of p as a constant, or returns nil. iota is
// the value of iota in a constant declaration (-1 elsewhere).
func (m *modScan) eval(p *synPkg, f *ast.File, e ast.Expr, iota int64, depth int) constant.Value {
	if depth > 20 {
		return nil
	}
	switch x := e.(type) {
	case *ast.BasicLit:
		v := constant.MakeFromLiteral(x.Value, x.Kind, 0)
		if v.Kind() == constant.Unknown {
			return nil
		}
		return v
	case *ast.ParenExpr:
		return m.eval(p, f, x.X, iota, depth+1)
	case *ast.Ident:
		if x.Name == "iota" && iota >= 0 {
			return constant.MakeInt64(iota)
		}
		return m.constOf(p, x.Name, depth)
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		if !ok {
			return nil
		}
		dir, ok := m.dirOf(p.imports[f][id.Name])
		if !ok {
			return nil
		}
		return m.constOf(m.read(dir, false), x.Sel.Name, depth)
	case *ast.UnaryExpr:
		v := m.eval(p, f, x.X, iota, depth+1)
		if v == nil || x.Op == token.ARROW || x.Op == token.AND {
			return nil
		}
		return safe(func() constant.Value { return constant.UnaryOp(x.Op, v, 0) })
	case *ast.BinaryExpr:
		a, b := m.eval(p, f, x.X, iota, depth+1), m.eval(p, f, x.Y, iota, depth+1)
		if a == nil || b == nil {
			return nil
		}
		switch x.Op {
		case token.SHL, token.SHR:
			s, ok := constant.Uint64Val(b)
			if !ok || s > 64 {
				return nil
			}
			return safe(func() constant.Value { return constant.Shift(a, x.Op, uint(s)) })
		case token.EQL, token.NEQ, token.LSS, token.LEQ, token.GTR, token.GEQ, token.LAND, token.LOR:
			return nil
		case token.QUO:
			if a.Kind() == constant.Int && b.Kind() == constant.Int {
				return safe(func() constant.Value { return constant.BinaryOp(a, token.QUO_ASSIGN, b) })
			}
		}
		return safe(func() constant.Value { return constant.BinaryOp(a, x.Op, b) })
	case *ast.CallExpr:
		return m.call(p, f, x, iota, depth)
	}
	return nil
}

// call evaluates the calls that format a port: strconv.Itoa and
// FormatInt, fmt.Sprint and Sprintf, net.JoinHostPort; a conversion
// (int(x), uint16(x)) keeps its value.
func (m *modScan) call(p *synPkg, f *ast.File, x *ast.CallExpr, iota int64, depth int) constant.Value {
	args := make([]constant.Value, len(x.Args))
	for i, a := range x.Args {
		if args[i] = m.eval(p, f, a, iota, depth+1); args[i] == nil {
			return nil
		}
	}
	str := func(v constant.Value) string {
		if v.Kind() == constant.String {
			return constant.StringVal(v)
		}
		return v.ExactString()
	}
	switch fun := x.Fun.(type) {
	case *ast.Ident:
		switch fun.Name {
		case "int", "int32", "int64", "uint", "uint16", "uint32", "uint64":
			if len(args) == 1 {
				return args[0]
			}
		}
	case *ast.SelectorExpr:
		id, ok := fun.X.(*ast.Ident)
		if !ok {
			return nil
		}
		switch p.imports[f][id.Name] + "." + fun.Sel.Name {
		case "strconv.Itoa", "strconv.FormatInt", "strconv.FormatUint", "fmt.Sprint":
			if len(args) >= 1 && args[0].Kind() == constant.Int {
				return constant.MakeString(args[0].ExactString())
			}
			if fun.Sel.Name == "Sprint" {
				s := ""
				for _, a := range args {
					s += str(a)
				}
				return constant.MakeString(s)
			}
		case "net.JoinHostPort":
			if len(args) == 2 {
				return constant.MakeString(str(args[0]) + ":" + str(args[1]))
			}
		case "fmt.Sprintf":
			if len(args) == 0 || args[0].Kind() != constant.String {
				return nil
			}
			format, rest := constant.StringVal(args[0]), args[1:]
			var b strings.Builder
			for i := 0; i < len(format); i++ {
				if format[i] != '%' || i+1 == len(format) {
					b.WriteByte(format[i])
					continue
				}
				i++
				switch format[i] {
				case '%':
					b.WriteByte('%')
				case 'd', 's', 'v':
					if len(rest) == 0 {
						return nil
					}
					b.WriteString(str(rest[0]))
					rest = rest[1:]
				default:
					return nil
				}
			}
			return constant.MakeString(b.String())
		}
	}
	return nil
}

// constOf evaluates the named constant of p, once.
func (m *modScan) constOf(p *synPkg, name string, depth int) constant.Value {
	d := p.consts[name]
	if d == nil || d.state == 1 {
		return nil
	}
	if d.state == 0 {
		d.state = 1
		d.value = m.eval(p, d.file, d.expr, d.iota, depth+1)
		d.state = 2
	}
	return d.value
}

// dirOf returns the directory of a package of the module.
func (m *modScan) dirOf(path string) (string, bool) {
	if m.modPath == "" {
		return "", false
	}
	rel, ok := strings.CutPrefix(path, m.modPath)
	if !ok || rel != "" && rel[0] != '/' {
		return "", false
	}
	return filepath.Join(m.root, filepath.FromSlash(rel)), true
}

// where words e's place as file:line.
func (m *modScan) where(e ast.Expr) string {
	pos := m.fset.Position(e.Pos())
	return fmt.Sprintf("%s:%d", filepath.Base(pos.Filename), pos.Line)
}

// safe runs an operation of go/constant that panics on operands of
// mismatched kinds, returning nil then.
func safe(op func() constant.Value) (v constant.Value) {
	defer func() {
		if recover() != nil {
			v = nil
		}
	}()
	v = op()
	if v != nil && v.Kind() == constant.Unknown {
		return nil
	}
	return v
}

package freeport

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// The flow (flow.go) follows the address through the typed build's
// functions and fields, and allows only neutral uses. A file of the
// package that the build leaves out (another build tag, another GOOS) is
// another implementation of those functions, and the tests also run
// against it: whatever it computes from the address (an order, a minimum,
// a hash, a suffix) depends on the port's value, and a port the system
// picks (32768 and up) sorts, hashes and ends unlike the fixed one. So the
// functions and fields the flow reached are looked up in those files by
// name, and the address is followed there from its syntax through the
// same whitelist of neutral uses (otherBuildUse): anything else keeps the
// port fixed. A blacklist of the calls that read text cannot be complete
// (sort.Strings, slices.Min, a BinarySearch order the addresses as well).

// reached is what the flow of one use entered: the package's functions
// with the parameter the address landed in, and the fields it was stored
// in (true: a field holding addresses, a slice or a map; false: one).
type reached struct {
	params map[string][]int // function or method name -> parameter indexes
	fields map[string]bool
}

// textOps are the packages whose functions read a string's text.
var textOps = map[string]bool{"strings": true, "bytes": true, "strconv": true, "regexp": true, "unicode/utf8": true}

// otherBuildReads says where a file of the package that the typed build
// leaves out uses the address the flow carried into r otherwise than as
// an address (otherBuildUse), or "".
func (c *checker) otherBuildReads(r *reached) string {
	if r == nil || len(r.params) == 0 && len(r.fields) == 0 {
		return ""
	}
	if c.leftOut == nil {
		c.leftOutFset = token.NewFileSet()
		files, err := match.LeftOutFiles(c.leftOutFset, c.pass.Fset, c.pass.AllFiles)
		if err != nil {
			files = []match.LeftOutFile{{Path: "the package's directory", Err: err}}
		}
		c.leftOut = files
	}
	b := &buildFlow{c: c, fields: r.fields, seen: map[*ast.FuncDecl]map[int]bool{}}
	for _, f := range c.leftOut {
		if strings.HasSuffix(f.Path, "_test.go") {
			continue
		}
		if f.File == nil {
			return fmt.Sprintf("%s, a file of another build that does not parse (%v)", filepath.Base(f.Path), f.Err)
		}
		b.decls = append(b.decls, declsOf(f.File, c.leftOutFset)...)
	}
	if len(b.decls) == 0 {
		return ""
	}
	for _, f := range c.pass.Files {
		if !strings.HasSuffix(c.pass.Fset.Position(f.Pos()).Filename, "_test.go") {
			b.decls = append(b.decls, declsOf(f, c.pass.Fset)...)
		}
	}
	for _, d := range b.decls {
		if d.fset != c.leftOutFset {
			continue // the typed build's own uses are the flow's
		}
		if why := b.enter(d, r.params[d.fd.Name.Name], 0); why != "" {
			return why
		}
	}
	return ""
}

// A decl is a function of the package and the file it is in.
type decl struct {
	fd      *ast.FuncDecl
	fset    *token.FileSet
	imports map[string]string
}

func declsOf(f *ast.File, fset *token.FileSet) []decl {
	imports := match.ImportNames(f)
	var out []decl
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
			out = append(out, decl{fd, fset, imports})
		}
	}
	return out
}

// buildFlow follows the address through the syntax of the package's
// functions, from the builds the typed analysis leaves out.
type buildFlow struct {
	c      *checker
	fields map[string]bool
	decls  []decl
	seen   map[*ast.FuncDecl]map[int]bool
}

// maxBuildDepth bounds how many calls the address is followed through.
const maxBuildDepth = 6

// enter follows the address in the parameters from of d (and in the
// fields the flow reached, wherever d reads them); it returns the first
// use that is not neutral, or "".
func (b *buildFlow) enter(d decl, from []int, depth int) string {
	if b.seen[d.fd] == nil {
		b.seen[d.fd] = map[int]bool{}
	}
	if len(from) == 0 {
		from = []int{-1} // the fields alone
	}
	fresh := false
	tainted := map[string]bool{}
	for _, i := range from {
		if !b.seen[d.fd][i] {
			b.seen[d.fd][i], fresh = true, true
		}
		if i < 0 {
			continue
		}
		if id := paramAt(d.fd, i); id != nil && id.Name != "_" {
			tainted[id.Name] = holderType(paramType(d.fd, i))
		}
	}
	if !fresh {
		return ""
	}
	u := &useWalk{b: b, d: d, tainted: tainted, depth: depth, parent: map[ast.Node]ast.Node{}}
	return u.walk()
}

// useWalk follows the address through one function's body.
type useWalk struct {
	b       *buildFlow
	d       decl
	tainted map[string]bool // local name -> holds addresses (a slice), not one
	depth   int
	parent  map[ast.Node]ast.Node
}

func (u *useWalk) at(n ast.Node, what string) string {
	p := u.d.fset.Position(n.Pos())
	where := "a file the build leaves out (another build, whose code the tests also run)"
	if u.d.fset != u.b.c.leftOutFset {
		where = "a function such a build calls"
	}
	return fmt.Sprintf("%s at %s:%d, in %s", what, filepath.Base(p.Filename), p.Line, where)
}

// walk follows every read of a tainted local or field in the body, to a
// fixed point of the locals it taints.
func (u *useWalk) walk() string {
	match.WithStack(u.d.fd.Body, func(n ast.Node, stack []ast.Node) bool {
		if len(stack) > 0 {
			u.parent[n] = stack[len(stack)-1]
		}
		return true
	})
	for {
		before := len(u.tainted)
		var why string
		ast.Inspect(u.d.fd.Body, func(n ast.Node) bool {
			if why != "" {
				return false
			}
			var e ast.Expr
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if _, ok := u.b.fields[n.Sel.Name]; ok {
					e = n
				}
			case *ast.Ident:
				if _, ok := u.tainted[n.Name]; ok {
					if sel, ok := u.parent[n].(*ast.SelectorExpr); ok && sel.Sel == n {
						return true
					}
					if kv, ok := u.parent[n].(*ast.KeyValueExpr); ok && kv.Key == n {
						return true
					}
					e = n
				}
			}
			if e != nil {
				why = u.use(e)
				return false
			}
			return true
		})
		if why != "" || len(u.tainted) == before {
			return why
		}
	}
}

// holds reports whether e, a tainted expression, holds addresses (a
// slice, an array, a map) rather than being one.
func (u *useWalk) holds(e ast.Expr) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		return u.tainted[e.Name]
	case *ast.SelectorExpr:
		return u.b.fields[e.Sel.Name]
	case *ast.CompositeLit:
		switch e.Type.(type) {
		case *ast.ArrayType, *ast.MapType:
			return true
		}
	case *ast.CallExpr:
		if id, ok := e.Fun.(*ast.Ident); ok && id.Name == "append" {
			return true
		}
		if u.pkgFunc(e.Fun) == "slices.Clone" {
			return true
		}
	case *ast.SliceExpr:
		return u.holds(e.X)
	}
	return false
}

// taint marks the local l as carrying e.
func (u *useWalk) taint(l ast.Expr, e ast.Expr) string {
	switch l := ast.Unparen(l).(type) {
	case *ast.Ident:
		if l.Name != "_" {
			if _, ok := u.tainted[l.Name]; !ok {
				u.tainted[l.Name] = u.holds(e)
			}
		}
		return ""
	case *ast.SelectorExpr:
		if _, ok := u.b.fields[l.Sel.Name]; ok {
			return "" // a field the flow follows
		}
		return u.at(l, "the field "+types.ExprString(l)+", which the rule does not follow")
	}
	return u.at(l, types.ExprString(l))
}

// use follows e, a read of the address (or of what holds addresses),
// up its expression to a neutral use; it returns the first use that is
// not one, or "".
func (u *useWalk) use(e ast.Expr) string {
	var cur ast.Node = e
	for {
		p := u.parent[cur]
		switch p := p.(type) {
		case *ast.ParenExpr:
			cur = p
			continue
		case *ast.BinaryExpr:
			switch p.Op {
			case token.ADD:
				cur = p // "http://" + addr: the sum carries it
				continue
			case token.EQL, token.NEQ:
				other := p.X
				if other == cur {
					other = p.Y
				}
				if u.sameAddress(other) {
					return ""
				}
			}
			return u.at(p, "the expression "+types.ExprString(p))
		case *ast.CallExpr:
			if cur == p.Fun {
				return u.at(p, types.ExprString(p))
			}
			why, carries := u.call(p, cur.(ast.Expr))
			if why != "" || !carries {
				return why
			}
			cur = p
			continue
		case *ast.AssignStmt:
			if p.Tok != token.ASSIGN && p.Tok != token.DEFINE {
				return u.at(p, "an assignment")
			}
			for i, r := range p.Rhs {
				if r == cur && i < len(p.Lhs) && len(p.Lhs) == len(p.Rhs) {
					return u.taint(p.Lhs[i], r.(ast.Expr))
				}
			}
			for _, l := range p.Lhs {
				if l == cur {
					return "" // written, not read
				}
			}
			return u.at(p, "an assignment")
		case *ast.ValueSpec:
			for _, n := range p.Names {
				if n == cur {
					return "" // declared, not read
				}
			}
			for i, v := range p.Values {
				if v == cur && i < len(p.Names) && len(p.Names) == len(p.Values) {
					return u.taint(p.Names[i], v)
				}
			}
			return u.at(p, "a declaration")
		case *ast.CompositeLit:
			switch p.Type.(type) {
			case *ast.ArrayType, *ast.MapType:
				cur = p // a list of addresses
				continue
			}
			return u.at(p, "a struct literal")
		case *ast.KeyValueExpr:
			lit, _ := u.parent[p].(*ast.CompositeLit)
			if cur == p.Key || lit == nil {
				return u.at(p, "a map key")
			}
			switch lit.Type.(type) {
			case *ast.ArrayType, *ast.MapType:
				cur = lit
				continue
			}
			key, _ := p.Key.(*ast.Ident)
			if key == nil {
				return u.at(p, "a map key")
			}
			if _, ok := u.b.fields[key.Name]; ok {
				return "" // stored in a field the flow follows
			}
			switch t := types.ExprString(lit.Type); {
			case u.isPkgType(lit.Type, "net/http", "Server") && key.Name == "Addr":
				return "" // a server listens there
			case u.isPkgType(lit.Type, "net/url", "URL") && key.Name == "Host":
				cur = lit // a URL of a request: its uses are followed
				continue
			default:
				return u.at(p, "the field "+key.Name+" of "+t+", which the rule does not follow")
			}
		case *ast.UnaryExpr:
			if p.Op == token.AND {
				if _, ok := u.parent[p].(*ast.CompositeLit); ok {
					return u.at(p, types.ExprString(p))
				}
				cur = p // &url.URL{...}
				continue
			}
			return u.at(p, types.ExprString(p))
		case *ast.RangeStmt:
			if cur == p.Key || cur == p.Value {
				return "" // written, not read
			}
			if !u.holds(p.X) {
				return u.at(p, "a range over "+types.ExprString(p.X))
			}
			if p.Value == nil {
				return ""
			}
			if id, ok := p.Value.(*ast.Ident); ok {
				if _, ok := u.tainted[id.Name]; !ok && id.Name != "_" {
					u.tainted[id.Name] = false
				}
				return ""
			}
			return u.at(p, "a range statement")
		case *ast.IndexExpr:
			if cur == p.X && u.holds(p.X) {
				cur = p // an element: its position, not its value
				continue
			}
			if cur == p.Index {
				if u.b.lookupOnly(p.X) {
					return "" // a key looked up by equality, never listed
				}
				return u.at(p, "a key of "+types.ExprString(p.X)+", whose keys the package's code may list (a range over it, a call given it)")
			}
			return u.at(p, "the index expression "+types.ExprString(p))
		case *ast.SliceExpr:
			if cur == p.X && u.holds(p.X) {
				cur = p
				continue
			}
			return u.at(p, "the slice expression "+types.ExprString(p))
		case *ast.SelectorExpr:
			if cur == p.X && p.Sel.Name == "String" {
				if call, ok := u.parent[p].(*ast.CallExpr); ok && call.Fun == p && len(call.Args) == 0 {
					cur = call // u.String() of a URL that carries it
					continue
				}
			}
			return u.at(p, types.ExprString(p))
		case *ast.ExprStmt, *ast.Field:
			return "" // discarded; a parameter's name
		case nil:
			return u.at(cur, types.ExprString(e))
		default:
			return u.at(p, "a use of "+types.ExprString(e))
		}
	}
}

// lookupOnly reports whether m, a map indexed by the address, is only
// ever indexed (looked up, stored in), measured or deleted from in the
// package's code, every build: its keys never come out of it (a range,
// maps.Keys, a call that may list them), so the address is used as a key
// by equality alone, whatever the port. A cache keyed by the address is
// such a map; a set whose keys are later ranged or sorted is not.
func (b *buildFlow) lookupOnly(m ast.Expr) bool {
	name := ""
	switch m := ast.Unparen(m).(type) {
	case *ast.Ident:
		name = m.Name
	case *ast.SelectorExpr:
		name = m.Sel.Name
	default:
		return false
	}
	ok := true
	for _, d := range b.decls {
		parent := map[ast.Node]ast.Node{}
		match.WithStack(d.fd.Body, func(n ast.Node, stack []ast.Node) bool {
			if len(stack) > 0 {
				parent[n] = stack[len(stack)-1]
			}
			return true
		})
		ast.Inspect(d.fd.Body, func(n ast.Node) bool {
			if !ok {
				return false
			}
			var e ast.Expr
			switch n := n.(type) {
			case *ast.Ident:
				if sel, isSel := parent[n].(*ast.SelectorExpr); isSel && sel.Sel == n {
					return true // the selector is looked at
				}
				if n.Name == name {
					e = n
				}
			case *ast.SelectorExpr:
				if n.Sel.Name == name {
					e = n
				}
			}
			if e == nil {
				return true
			}
			switch p := parent[e].(type) {
			case *ast.IndexExpr:
				ok = p.X == e
			case *ast.CallExpr:
				id, isID := p.Fun.(*ast.Ident)
				ok = isID && (id.Name == "delete" || id.Name == "len") && len(p.Args) > 0 && p.Args[0] == e
			case *ast.AssignStmt:
				ok = isLhs(p, e) // made anew
			case *ast.ValueSpec:
				ok = true
			default:
				ok = false
			}
			return ok
		})
		if !ok {
			return false
		}
	}
	return true
}

// sameAddress reports whether e, compared with the address, is the
// address itself (a tainted value) or the empty string: equality with
// either does not depend on the port's value.
func (u *useWalk) sameAddress(e ast.Expr) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.BasicLit:
		return e.Value == `""` || e.Value == "``"
	case *ast.Ident:
		if e.Name == "nil" {
			return true
		}
		_, ok := u.tainted[e.Name]
		return ok
	case *ast.SelectorExpr:
		_, ok := u.b.fields[e.Sel.Name]
		return ok
	case *ast.IndexExpr:
		return u.holds(e.X)
	}
	return false
}

// call says whether the call p given the address as arg is a neutral use
// ("", false), carries it in its result ("", true), or is neither (why).
func (u *useWalk) call(p *ast.CallExpr, arg ast.Expr) (why string, carries bool) {
	at := func(what string) (string, bool) { return u.at(p, what), false }
	if id, ok := p.Fun.(*ast.Ident); ok {
		switch id.Name {
		case "append", "string":
			return "", true
		case "len", "cap":
			if u.holds(arg) {
				return "", false
			}
			return at(types.ExprString(p) + " (the length of its text)")
		case "print", "println":
			return "", false
		}
		return u.follow(p, id.Name, false, arg)
	}
	if name := u.pkgFunc(p.Fun); name != "" {
		if k, ok := sinkArg(name, false); ok {
			if argIndex(p, arg) == k {
				if why := u.b.c.routes().client; why != "" {
					return at(name + ", a request whose address reaches code under test by " + why)
				}
				return "", false // a dial, a listen, a request
			}
			return at(name + ", data the request carries (not the address it connects to), which the code it reaches may read as text")
		}
		switch {
		case name == "fmt.Sprintf" || name == "fmt.Sprint" || name == "fmt.Sprintln":
			if verbsPrint(p) {
				return "", true
			}
			return at(name + " with a format that does more than print it")
		case name == "fmt.Errorf" || name == "fmt.Print" || name == "fmt.Printf" || name == "fmt.Println" || name == "errors.New":
			if !verbsPrint(p) {
				return at(name + " with a format that does more than print it")
			}
			return u.message(p, name)
		case strings.HasPrefix(name, "fmt.Fprint") && len(p.Args) > 0 && u.stdStream(p.Args[0]):
			return u.message(p, name)
		case strings.HasPrefix(name, "log.") || strings.HasPrefix(name, "log/slog."):
			return u.message(p, name) // a log line
		case name == "slices.Clone":
			return "", true
		case name == "slices.Contains" || name == "slices.Index":
			if len(p.Args) == 2 && u.sameAddress(p.Args[0]) && u.sameAddress(p.Args[1]) {
				return "", false // equality with the same addresses
			}
		}
		return at(name)
	}
	sel, ok := p.Fun.(*ast.SelectorExpr)
	if !ok {
		return at(types.ExprString(p.Fun))
	}
	// A method: the package's own is followed; another package's is
	// neutral only as a dial, a listen or a request (a net.Dialer's, an
	// http.Client's).
	if why, carries := u.follow(p, sel.Sel.Name, true, arg); why != "unknown" {
		return why, carries
	}
	if u.stdClient(sel.X) && u.b.c.routes().client == "" {
		// The argument it connects to; another (a body, form values)
		// is data the peer reads (sinkArg).
		for _, path := range []string{"net", "net/http"} {
			if k, ok := sinkArg(path+"."+sel.Sel.Name, true); ok {
				if argIndex(p, arg) == k {
					return "", false
				}
				return at(types.ExprString(p.Fun) + ", data the request carries (not the address it connects to), which the code it reaches may read as text")
			}
		}
	}
	return at(types.ExprString(p.Fun))
}

// message says whether a message p (name: "log.Printf") given the
// address is neutral ("", false): its text goes where no code reads it
// (routes.go).
func (u *useWalk) message(p *ast.CallExpr, name string) (string, bool) {
	dot := strings.LastIndex(name, ".")
	if why, _ := u.b.c.neutralMessage(name[:dot], name[dot+1:]); why != "" {
		return u.at(p, name+", "+messageRoute(why)), false
	}
	return "", false
}

// stdClients are the standard library's types whose methods named for a
// dial, a listen or a request take the address as an address.
var stdClients = map[string]bool{
	"net/http.Client": true, "net.Dialer": true, "net.ListenConfig": true, "crypto/tls.Dialer": true,
}

// stdClient reports whether e is such a value, from its syntax:
// http.DefaultClient, or a local the body declares as one
// (c := &http.Client{...}, var d net.Dialer). A method of any other
// receiver (a cache's Get, a type of another package) may compute with
// the address.
func (u *useWalk) stdClient(e ast.Expr) bool {
	if u.pkgFunc(e) == "net/http.DefaultClient" {
		return true
	}
	id, ok := ast.Unparen(e).(*ast.Ident)
	if !ok {
		return false
	}
	isClient := func(e ast.Expr) bool {
		if un, ok := e.(*ast.UnaryExpr); ok && un.Op == token.AND {
			e = un.X
		}
		if lit, ok := e.(*ast.CompositeLit); ok {
			e = lit.Type
		}
		if e == nil {
			return false
		}
		return stdClients[u.pkgFunc(e)]
	}
	found, other := false, false
	ast.Inspect(u.d.fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if l, ok := l.(*ast.Ident); ok && l.Name == id.Name {
					if len(n.Lhs) == len(n.Rhs) && isClient(n.Rhs[i]) {
						found = true
					} else {
						other = true
					}
				}
			}
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if name.Name != id.Name {
					continue
				}
				switch {
				case i < len(n.Values) && isClient(n.Values[i]):
					found = true
				case len(n.Values) == 0 && n.Type != nil && isClient(n.Type):
					found = true
				default:
					other = true
				}
			}
		}
		return true
	})
	return found && !other
}

// follow follows the address into the package's functions (or methods)
// named name, at the parameter arg lands in; "unknown" when the package
// has none.
func (u *useWalk) follow(p *ast.CallExpr, name string, method bool, arg ast.Expr) (string, bool) {
	i := -1
	for k, a := range p.Args {
		if a == arg {
			i = k
		}
	}
	found := false
	for _, d := range u.b.decls {
		if d.fd.Name.Name != name || (d.fd.Recv != nil) != method {
			continue
		}
		found = true
		if i < 0 {
			continue
		}
		if u.depth >= maxBuildDepth {
			return u.at(p, types.ExprString(p.Fun)+", further than the rule follows"), false
		}
		if why := u.b.enter(d, []int{i}, u.depth+1); why != "" {
			return why, false
		}
	}
	switch {
	case !found && method:
		return "unknown", false
	case !found:
		return u.at(p, types.ExprString(p.Fun)+", which the rule cannot follow"), false
	case i < 0:
		return u.at(p, types.ExprString(p)), false
	}
	return "", false
}

// verbsPrint reports whether call's format (its first argument, when it
// is a literal) only prints its operands: %s, %v, %q and %d, without a
// width or a precision that would cut the text.
func verbsPrint(call *ast.CallExpr) bool {
	if len(call.Args) == 0 {
		return true
	}
	lit, ok := ast.Unparen(call.Args[0]).(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return true // Sprint, Println: no format
	}
	f, err := strconv.Unquote(lit.Value)
	if err != nil {
		return false
	}
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		for i < len(f) && strings.IndexByte("+#-", f[i]) >= 0 {
			i++
		}
		if i >= len(f) || strings.IndexByte("svqd%w", f[i]) < 0 {
			return false
		}
	}
	return true
}

// stdStream reports whether e is os.Stdout or os.Stderr, from its syntax.
func (u *useWalk) stdStream(e ast.Expr) bool {
	n := u.pkgFunc(e)
	return n == "os.Stdout" || n == "os.Stderr"
}

// pkgFunc returns "path.Name" when e selects Name of an imported package,
// or "".
func (u *useWalk) pkgFunc(e ast.Expr) string {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return ""
	}
	if _, local := u.tainted[x.Name]; local {
		return ""
	}
	path, ok := u.d.imports[x.Name]
	if !ok {
		return ""
	}
	return path + "." + sel.Sel.Name
}

// isPkgType reports whether t names path.name.
func (u *useWalk) isPkgType(t ast.Expr, path, name string) bool {
	return u.pkgFunc(t) == path+"."+name
}

// holderType reports whether t, a parameter's type, holds values (a
// slice, an array, a map, a variadic list).
func holderType(t ast.Expr) bool {
	switch t.(type) {
	case *ast.ArrayType, *ast.MapType, *ast.Ellipsis:
		return true
	}
	return false
}

// paramAt returns the i'th parameter's name of fd (the last for a
// variadic call past it), or nil.
func paramAt(fd *ast.FuncDecl, i int) *ast.Ident {
	var params []*ast.Ident
	for _, f := range fd.Type.Params.List {
		if len(f.Names) == 0 {
			params = append(params, nil)
		}
		params = append(params, f.Names...)
	}
	if len(params) == 0 {
		return nil
	}
	if i >= len(params) {
		i = len(params) - 1
	}
	return params[i]
}

// paramType returns the i'th parameter's type of fd, as paramAt.
func paramType(fd *ast.FuncDecl, i int) ast.Expr {
	var types []ast.Expr
	for _, f := range fd.Type.Params.List {
		n := len(f.Names)
		if n == 0 {
			n = 1
		}
		for k := 0; k < n; k++ {
			types = append(types, f.Type)
		}
	}
	if len(types) == 0 {
		return nil
	}
	if i >= len(types) {
		i = len(types) - 1
	}
	return types[i]
}

// enter records, for otherBuildReads, that the flow carried the address
// into parameter i of fn.
func (c *checker) enter(fn *types.Func, i int) {
	if c.reach == nil {
		return
	}
	if c.reach.params == nil {
		c.reach.params = map[string][]int{}
	}
	c.reach.params[fn.Name()] = append(c.reach.params[fn.Name()], i)
}

// storeIn records that the flow stored the address in field v.
func (c *checker) storeIn(v types.Object) {
	if c.reach == nil {
		return
	}
	if v, ok := v.(*types.Var); ok && v.IsField() {
		if c.reach.fields == nil {
			c.reach.fields = map[string]bool{}
		}
		switch v.Type().Underlying().(type) {
		case *types.Slice, *types.Array, *types.Map:
			c.reach.fields[v.Name()] = true
		default:
			c.reach.fields[v.Name()] = c.reach.fields[v.Name()] || false
		}
	}
}

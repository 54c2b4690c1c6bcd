package spawn

import (
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
	"strings"
)

// A child is given paths: an argument (its project, its output), an
// environment variable (HOME, a tool's own), a flag, a field of a config it
// loads. The rule sees the view the test gives a child (view.go), not what
// level of it a given path names: the project path root/work is one level
// below the child's root, HOME=root is the root itself. A climb above such
// a path (filepath.Dir(filepath.Dir(project)), filepath.Dir(home)) may land
// in the parent every t.TempDir of one test shares, where a cache or a
// session is every child's: one after another the next child reads what
// the earlier one left (a key that collides), run together none does, and
// a bug only a hit shows passes the rewrite. So every climb from a path
// that is not a constant is taken as reaching there: filepath.Dir or
// path.Dir, a ".." joined to it, filepath.Split, a cut at its last
// separator (strings.LastIndex of "/"); unless the rule sees the path go
// down by constant elements at least as far first
// (filepath.Dir(filepath.Join(dir, "sub", "f.txt")) is dir/sub). The
// climb is read from the syntax, in the typed children's code, the
// package's other builds and the module's packages alike.

// pathLevel is where a path expression stands: based on a value the rule
// cannot see (an argument, the environment), down by steps elements below
// it; or a constant (not based).
type pathLevel struct {
	based bool
	steps int
}

// climbReader finds climbs in the syntax of one function.
type climbReader struct {
	imports map[string]string // local name -> package path
	consts  map[string]bool   // the file's package-level string constants
	ownWd   bool              // the working directory (os.Getwd, filepath.Abs) is followed elsewhere
	scope   *climbScope       // the functions read with this one
	decl    *ast.FuncDecl     // the function read, or nil for a bare block
}

// A climbDecl is a function the climb check reads, with its file's
// imports and package-level constants.
type climbDecl struct {
	fd      *ast.FuncDecl
	imports map[string]string
	consts  map[string]bool
}

// A climbScope is the functions read together: a call of one of them is
// not a climb by itself (its body is read), and what makes an argument a
// path value in the caller makes the parameter one in the callee, and
// a result used as a path makes the callee's returns path values
// (func workspace(p string) string { return re.FindStringSubmatch(p)[1] },
// then filepath.Join(workspace(project), ".cache")), so a climb spelled
// in a helper is judged as if inline.
type climbScope struct {
	byName map[string][]*ast.FuncDecl        // functions by name, methods by "." + name
	params map[*ast.FuncDecl]map[string]bool // parameters given a path value by a caller
	rets   map[*ast.FuncDecl]bool            // functions whose result is used as a path
}

// declKey names fd in climbScope.byName.
func declKey(fd *ast.FuncDecl) string {
	if fd.Recv != nil {
		return "." + fd.Name.Name
	}
	return fd.Name.Name
}

// retName is the pseudo-name pathNames gives the result of a call of a
// function of the scope.
func retName(key string) string { return "ret:" + key }

// fileConsts returns the package-level constants of f.
func fileConsts(f *ast.File) map[string]bool {
	consts := map[string]bool{}
	if f == nil {
		return consts
	}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, s := range g.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					consts[n.Name] = true
				}
			}
		}
	}
	return consts
}

// climbIn returns the first climb above a path that is not a constant in
// root, syntax of a file importing imports (file, when known, gives its
// package-level constants and the functions read together); or nil.
func climbIn(root ast.Node, file *ast.File, imports map[string]string, ownWd bool) *placeAt {
	if file != nil && root == ast.Node(file) {
		var decls []climbDecl
		consts := fileConsts(file)
		for _, d := range file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				decls = append(decls, climbDecl{fd, imports, consts})
			}
		}
		return climbInDecls(decls, ownWd)
	}
	b, ok := root.(*ast.BlockStmt)
	if !ok {
		return nil
	}
	r := &climbReader{imports: imports, consts: fileConsts(file), ownWd: ownWd, scope: newClimbScope(nil)}
	return r.body(b)
}

func newClimbScope(decls []climbDecl) *climbScope {
	sc := &climbScope{byName: map[string][]*ast.FuncDecl{}, params: map[*ast.FuncDecl]map[string]bool{}, rets: map[*ast.FuncDecl]bool{}}
	for _, d := range decls {
		sc.byName[declKey(d.fd)] = append(sc.byName[declKey(d.fd)], d.fd)
	}
	return sc
}

// climbInDecls returns the first climb in decls, read together (one
// function's path values are its callees' parameters, its callers'
// results), or nil. Each function on its own: a local's level is what its
// last assignment in source order gave it.
func climbInDecls(decls []climbDecl, ownWd bool) *placeAt {
	sc := newClimbScope(decls)
	readers := make([]*climbReader, len(decls))
	for i, d := range decls {
		readers[i] = &climbReader{imports: d.imports, consts: d.consts, ownWd: ownWd, scope: sc, decl: d.fd}
	}
	// What a caller gives a callee as a path, and what a caller uses a
	// callee's result as, until nothing changes.
	for round := 0; round < 20; round++ {
		changed := false
		for _, r := range readers {
			if r.seed(r.pathNames(r.decl.Body)) {
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	for _, r := range readers {
		if at := r.body(r.decl.Body); at != nil {
			return at
		}
	}
	return nil
}

// own returns the functions of the scope call calls, or nil.
func (r *climbReader) own(call *ast.CallExpr) []*ast.FuncDecl {
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		return r.scope.byName[f.Name]
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok && r.imports[x.Name] != "" {
			return nil
		}
		return r.scope.byName["."+f.Sel.Name]
	}
	return nil
}

// paramNames returns fd's parameters' names in order ("" for one
// without a name).
func paramNames(fd *ast.FuncDecl) []string {
	var names []string
	for _, f := range fd.Type.Params.List {
		if len(f.Names) == 0 {
			names = append(names, "")
		}
		for _, id := range f.Names {
			names = append(names, id.Name)
		}
	}
	return names
}

// seed gives the callees of r's function, by paths (its path values), the
// parameters and receivers they are given a path value as, and itself
// its result's use: whether the function returns a path value, or its
// result is used as one. It reports whether anything changed.
func (r *climbReader) seed(paths map[string]bool) bool {
	changed := false
	mark := func(fd *ast.FuncDecl, name string) {
		if name == "" || name == "_" {
			return
		}
		if r.scope.params[fd] == nil {
			r.scope.params[fd] = map[string]bool{}
		}
		if !r.scope.params[fd][name] {
			r.scope.params[fd][name] = true
			changed = true
		}
	}
	// A parameter the body uses as a path is a path value in the caller's
	// argument too (save(m[1], b), save joining its dir).
	for _, name := range paramNames(r.decl) {
		if paths[name] {
			mark(r.decl, name)
		}
	}
	ast.Inspect(r.decl.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			for _, fd := range r.own(n) {
				if paths[retName(declKey(fd))] && !r.scope.rets[fd] {
					r.scope.rets[fd] = true
					changed = true
				}
				names := paramNames(fd)
				for i, a := range n.Args {
					if len(names) == 0 || !r.mentionsPath(a, paths) {
						continue
					}
					mark(fd, names[min(i, len(names)-1)])
				}
				if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok && fd.Recv != nil && r.mentionsPath(sel.X, paths) {
					for _, f := range fd.Recv.List {
						for _, id := range f.Names {
							mark(fd, id.Name)
						}
					}
				}
			}
		case *ast.ReturnStmt:
			if r.scope.rets[r.decl] {
				break
			}
			for _, e := range n.Results {
				if r.mentionsPath(e, paths) {
					r.scope.rets[r.decl] = true
					changed = true
				}
			}
		}
		return true
	})
	return changed
}

// body returns the first climb in b, or nil.
func (r *climbReader) body(b *ast.BlockStmt) *placeAt {
	locals := map[string]pathLevel{}
	paths := r.pathNames(b)
	elems := r.rangeElems(b, paths)
	var at *placeAt
	var level func(e ast.Expr) pathLevel
	note := ""
	climbed := func(e ast.Expr, l pathLevel) pathLevel {
		if at == nil && l.based && l.steps < 0 {
			at = &placeAt{"a climb above a path it is given (" + types.ExprString(e) + note + ": an argument, an environment variable, a flag or a field may name the child's root, and the directories t.TempDir gives one test share their parent)", e.Pos()}
		}
		return l
	}
	// cut reports a computation of a path from a path value that is not
	// a descent (pathCuts).
	cut := func(e ast.Expr) pathLevel {
		note = ", text computed from a path other than by going down, which may cut its last elements"
		defer func() { note = "" }()
		return climbed(e, pathLevel{true, -1})
	}
	isPath := func(e ast.Expr) bool {
		return level(e).based && r.mentionsPath(e, paths)
	}
	level = func(e ast.Expr) pathLevel {
		switch e := ast.Unparen(e).(type) {
		case *ast.BasicLit:
			return pathLevel{}
		case *ast.Ident:
			if l, ok := locals[e.Name]; ok {
				return l
			}
			if r.consts[e.Name] || e.Name == "nil" {
				return pathLevel{}
			}
		case *ast.BinaryExpr:
			if e.Op == token.ADD {
				x, y := level(e.X), level(e.Y)
				switch {
				case x.based:
					return climbed(e, pathLevel{true, x.steps + r.elems(e.Y)})
				case y.based:
					return y
				}
				return pathLevel{}
			}
		case *ast.CallExpr:
			fn := r.pkgFunc(e.Fun)
			switch fn {
			case "path/filepath.Dir", "path.Dir":
				if len(e.Args) == 1 {
					l := level(e.Args[0])
					if !l.based {
						return l
					}
					return climbed(e, pathLevel{true, l.steps - 1})
				}
			case "path/filepath.Join", "path.Join":
				l := pathLevel{}
				for _, a := range e.Args {
					switch la := level(a); {
					case la.based && !l.based:
						l = la
					case l.based:
						l.steps += r.elems(a)
					}
				}
				return climbed(e, l)
			case "path/filepath.Clean", "path.Clean", "path/filepath.ToSlash", "path/filepath.FromSlash", "path/filepath.EvalSymlinks":
				if len(e.Args) == 1 {
					return level(e.Args[0])
				}
			case "path/filepath.Abs":
				// Of a constant (relative) path: the working directory,
				// which ancestorUse follows in the typed code. Of a path
				// the child is given: that path, which may be absolute
				// (HOME, its project) and climbs like one.
				if len(e.Args) == 1 {
					if l := level(e.Args[0]); l.based || !r.ownWd {
						return l
					}
				}
				return pathLevel{}
			case "os.Getwd":
				if r.ownWd {
					return pathLevel{}
				}
			case "path/filepath.Split", "path.Split":
				if len(e.Args) == 1 {
					if l := level(e.Args[0]); l.based {
						return climbed(e, pathLevel{true, l.steps - 1})
					}
				}
			case "strings.LastIndex", "strings.LastIndexByte", "strings.LastIndexAny":
				if len(e.Args) == 2 && r.separator(e.Args[1]) && level(e.Args[0]).based {
					climbed(e, pathLevel{true, -1})
				}
			default:
				if r.mayCut(e, fn) {
					for _, a := range e.Args {
						if isPath(a) {
							return cut(e)
						}
					}
					if sel, ok := ast.Unparen(e.Fun).(*ast.SelectorExpr); ok && fn == "" && isPath(sel.X) {
						return cut(e) // a method of a path value
					}
				}
				if isAppend(e) {
					for _, a := range e.Args[min(1, len(e.Args)):] {
						if r.pieceOf(a, paths, elems) {
							return cut(e) // a path rebuilt byte by byte
						}
					}
				}
			}
		case *ast.SliceExpr:
			// p[:i]: a cut of a path value at a computed index (after a
			// strings.Index, a loop over its bytes) may end it at any
			// separator.
			if e.High != nil && isPath(e.X) {
				return cut(e)
			}
		}
		return pathLevel{based: true}
	}
	ast.Inspect(b, func(n ast.Node) bool {
		if at != nil {
			return false
		}
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, e := range n.Rhs {
				ast.Inspect(e, func(m ast.Node) bool {
					if e, ok := m.(ast.Expr); ok && at == nil {
						level(e)
					}
					return at == nil
				})
			}
			for i, l := range n.Lhs {
				id, ok := l.(*ast.Ident)
				if !ok || id.Name == "_" {
					continue
				}
				switch {
				case n.Tok != token.ASSIGN && n.Tok != token.DEFINE:
					delete(locals, id.Name) // p += "/..": not followed, a path the child computes
				case len(n.Rhs) == len(n.Lhs):
					locals[id.Name] = level(n.Rhs[i])
				case i == 0:
					locals[id.Name] = level(n.Rhs[0]) // p, err := filepath.Abs(q)
				default:
					delete(locals, id.Name)
				}
			}
			return false
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if i < len(n.Values) {
					locals[name.Name] = level(n.Values[i])
				} else {
					delete(locals, name.Name)
				}
			}
		case ast.Expr:
			level(n)
		}
		return true
	})
	return at
}

// elems counts the path elements a constant part adds (a ".." takes one
// away); a part that is not a constant adds none the rule can count.
func (r *climbReader) elems(e ast.Expr) int {
	lit, ok := ast.Unparen(e).(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return 0
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return 0
	}
	n := 0
	for _, el := range strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '\\' }) {
		switch el {
		case ".":
		case "..":
			n--
		default:
			n++
		}
	}
	return n
}

// separator reports whether e names a path separator: "/", '/', `\`,
// filepath.Separator, os.PathSeparator, or a string of one.
func (r *climbReader) separator(e ast.Expr) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.BasicLit:
		s, err := strconv.Unquote(e.Value)
		return err == nil && (s == "/" || s == `\` || s == `/\` || s == `\/`)
	case *ast.SelectorExpr:
		n := r.pkgFunc(e)
		return n == "path/filepath.Separator" || n == "os.PathSeparator"
	case *ast.CallExpr:
		return len(e.Args) == 1 && r.separator(e.Args[0])
	}
	return false
}

// pkgFunc returns "path.Name" for a selector of an imported package, or "".
func (r *climbReader) pkgFunc(e ast.Expr) string {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return ""
	}
	p, ok := r.imports[x.Name]
	if !ok {
		return ""
	}
	return p + "." + sel.Sel.Name
}

// A path the child computes from a path value by anything but a descent
// (filepath.Join with constant elements, p+"/"+name) may climb: a string
// function of a path cuts it wherever its text says, and
// strings.TrimSuffix(p, sep+filepath.Base(p)) is filepath.Dir(p) spelled
// another way; so is TrimRight with a cutset, a Split or a Cut at the
// separator and a join of the first parts, a slice up to an index, a
// regexp's submatch, a template. The rule cannot enumerate the spellings,
// so it whitelists (mayCut): a path value given to anything but what
// keeps its level (Clean, Abs, ToSlash, a change of case), names one
// element of it (Base, Ext), returns no path (a test, an index, a count),
// acts at it or reports it is taken as a climb. A path value is one the
// function uses as a path (pathNames).

// levelKeeping are the functions of strings, bytes, path and
// path/filepath that return no path above their argument: a test, an
// index or a count, one element of it, or the same path in another form;
// those climb.go follows itself (Dir, Join, Split, ...) are decided there.
var levelKeeping = funcSet(
	[]string{"strings", "bytes"}, []string{"Contains", "ContainsAny", "ContainsRune", "ContainsFunc", "HasPrefix", "HasSuffix",
		"Index", "IndexAny", "IndexByte", "IndexFunc", "IndexRune", "LastIndex", "LastIndexAny", "LastIndexByte", "LastIndexFunc",
		"Count", "Compare", "Equal", "EqualFold", "ToLower", "ToUpper", "ToTitle", "TrimSpace", "Clone", "NewReader", "NewBuffer", "NewBufferString", "NewReplacer"},
	[]string{"path", "path/filepath"}, []string{"Base", "Ext", "IsAbs", "IsLocal", "Match", "Clean", "ToSlash", "FromSlash", "EvalSymlinks", "Abs",
		"Walk", "WalkDir", "Glob", "Join", "Dir", "Split"})

// funcSet is the set of "pkg.Name" for each name of a list and each
// package of the list before it (pairs of lists: packages, names).
func funcSet(lists ...[]string) map[string]bool {
	out := map[string]bool{}
	for i := 0; i+1 < len(lists); i += 2 {
		for _, pkg := range lists[i] {
			for _, name := range lists[i+1] {
				out[pkg+"."+name] = true
			}
		}
	}
	return out
}

// The whitelist: a path value given to anything but an operation known
// to keep it (or measured above: Dir, Join, Split, a slice) counts as a
// possible climb, so that the spellings the rule cannot enumerate (a
// regexp's submatch, a template, a method of another package, a function
// value) are judged as strings.TrimSuffix is. A function read with the
// caller (climbScope) is not a climb by itself: its body is read, with
// the path values it is given.

// pathKeeping are the functions of other packages given a path value
// that return no text above it: they act at the path or read it (os,
// io/ioutil, io/fs), report it (fmt's printing to the standard streams,
// an error, whose text is judged again where it is read), test, order or
// count it, or digest it (a hash and its hex form, which no climb can
// read back).
var pathKeeping = funcSet(
	[]string{"fmt"}, []string{"Print", "Printf", "Println", "Errorf"},
	[]string{"errors"}, []string{"New", "Is", "As", "Join"},
	[]string{"strconv"}, []string{"Atoi", "ParseInt", "ParseUint", "ParseFloat", "ParseBool"},
	[]string{"regexp"}, []string{"MatchString", "Match"},
	[]string{"crypto/sha256"}, []string{"Sum256", "Sum224"},
	[]string{"crypto/sha1"}, []string{"Sum"},
	[]string{"crypto/md5"}, []string{"Sum"},
	[]string{"crypto/sha512"}, []string{"Sum512", "Sum384"},
	[]string{"hash/crc32"}, []string{"ChecksumIEEE", "Checksum"},
	[]string{"encoding/hex"}, []string{"EncodeToString"})

// keepingPackages are the packages all of whose functions keep a path
// value they are given (pathKeeping): they act at it, read it or order
// what holds it.
var keepingPackages = map[string]bool{"os": true, "io/ioutil": true, "io/fs": true, "sort": true, "slices": true}

// reportMethods are the methods that report what they are given (a
// test's log), and return no text.
var reportMethods = map[string]bool{"Log": true, "Logf": true, "Error": true, "Errorf": true, "Fatal": true, "Fatalf": true, "Skip": true, "Skipf": true, "Helper": true}

// keptBuiltins are the builtins and conversions that keep a path value
// they are given whole: its length, the same text in another type (what
// is computed from that is judged again), a slice holding it, one of its
// characters (a test of a separator); append is judged by pieceOf, which
// counts a character appended as a path rebuilt.
var keptBuiltins = map[string]bool{"len": true, "cap": true, "string": true, "append": true, "delete": true, "panic": true, "print": true, "println": true, "int": true, "int64": true, "uint": true, "uint64": true, "bool": true,
	"byte": true, "rune": true, "uint8": true, "int32": true}

// mayCut reports whether call, of fn ("pkg.Name" for a function of an
// imported package, else ""), may return text above a path value it is
// given: anything but the operations known to keep it.
func (r *climbReader) mayCut(call *ast.CallExpr, fn string) bool {
	if fn != "" {
		pkg := fn[:strings.LastIndex(fn, ".")]
		switch {
		case levelKeeping[fn], pathKeeping[fn], keepingPackages[pkg]:
			return false
		case fn == "fmt.Fprint" || fn == "fmt.Fprintf" || fn == "fmt.Fprintln":
			// To the standard streams: what the test reads, not the
			// child. To a writer of the code: text it may cut.
			if len(call.Args) > 0 {
				w := r.pkgFunc(call.Args[0])
				return w != "os.Stdout" && w != "os.Stderr"
			}
		}
		return true
	}
	if _, ok := ast.Unparen(call.Fun).(*ast.Ident); ok && r.own(call) != nil {
		// Read with the caller, its parameters seeded. A method is
		// matched by its name alone, which a value of another package's
		// type may share (an Execute of the package beside a template's):
		// it is read with its caller too, and still counts below.
		return false
	}
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		return !keptBuiltins[f.Name] // byte(c), rune(c), copy, a function value, a named type
	case *ast.ArrayType:
		return false // []byte(p), []rune(p): the same text
	case *ast.SelectorExpr:
		// os.Stdout.WriteString(p): what the test reads, not the child.
		std := r.pkgFunc(f.X)
		return !reportMethods[f.Sel.Name] && std != "os.Stdout" && std != "os.Stderr"
	}
	return true
}

// isAppend reports whether call is the builtin append.
func isAppend(call *ast.CallExpr) bool {
	id, ok := ast.Unparen(call.Fun).(*ast.Ident)
	return ok && id.Name == "append"
}

// pieceOf reports whether e, appended to a slice, is a piece of a path
// value rather than a whole one: a byte of it (p[i]), a conversion of one
// (byte(c)), or an element of a range over one (for _, c := range p); a
// loop that appends them rebuilds the path as far as it likes.
func (r *climbReader) pieceOf(e ast.Expr, paths, elems map[string]bool) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.IndexExpr:
		return r.mentionsPath(e.X, paths) && r.pkgFunc(e.X) != "os.Args"
	case *ast.Ident:
		return elems[e.Name]
	case *ast.CallExpr:
		return len(e.Args) == 1 && r.pieceOf(e.Args[0], paths, elems)
	}
	return false
}

// rangeElems returns the value variables of b's range loops over a path
// value: a path's bytes or runes, or the paths of a list.
func (r *climbReader) rangeElems(b *ast.BlockStmt, paths map[string]bool) map[string]bool {
	elems := map[string]bool{}
	ast.Inspect(b, func(n ast.Node) bool {
		if rs, ok := n.(*ast.RangeStmt); ok && r.mentionsPath(rs.X, paths) {
			if id, ok := rs.Value.(*ast.Ident); ok {
				elems[id.Name] = true
			}
		}
		return true
	})
	return elems
}

// pathPackages are the packages whose functions take a path: an
// identifier in their arguments is a path value, and so is one their
// result is assigned to.
var pathPackages = map[string]bool{"os": true, "io/ioutil": true, "path": true, "path/filepath": true}

// pathNames returns the names b uses as paths: those given to a function
// of pathPackages or set from one's result, and, along assignments (and
// ranges) either way, the names a path is computed from and those
// computed from a path (parts := strings.Split(site, "/"), then
// filepath.Join(strings.Join(parts[:n-2], "/"), ".cache")).
func (r *climbReader) pathNames(b *ast.BlockStmt) map[string]bool {
	paths := map[string]bool{}
	type link struct{ lhs, rhs []string }
	var links []link
	if r.decl != nil {
		for name := range r.scope.params[r.decl] {
			paths[name] = true
		}
		if r.scope.rets[r.decl] {
			paths[retName(declKey(r.decl))] = true
		}
	}
	for key, fds := range r.scope.byName {
		for _, fd := range fds {
			if r.scope.rets[fd] {
				paths[retName(key)] = true
			}
		}
	}
	ast.Inspect(b, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ReturnStmt:
			if r.decl != nil {
				l := link{lhs: []string{retName(declKey(r.decl))}}
				for _, e := range n.Results {
					l.rhs = append(l.rhs, r.names(e)...)
				}
				links = append(links, l)
			}
		case *ast.CallExpr:
			for _, fd := range r.own(n) {
				names := paramNames(fd)
				for i, a := range n.Args {
					if len(names) > 0 && r.scope.params[fd][names[min(i, len(names)-1)]] {
						for _, id := range r.names(a) {
							paths[id] = true
						}
					}
				}
			}
			// A value cut or searched at a separator is a path
			// (strings.LastIndexFunc(site, isSep), strings.Split(p, "/")).
			for _, a := range n.Args {
				if r.mentionsSeparator(a) {
					for _, b := range n.Args {
						for _, id := range r.names(b) {
							paths[id] = true
						}
					}
					break
				}
			}
			if fn := r.pkgFunc(n.Fun); fn != "" {
				if i := strings.LastIndex(fn, "."); i >= 0 && pathPackages[fn[:i]] {
					args := n.Args
					if k := pathArgs(fn); k < len(args) {
						args = args[:k] // os.WriteFile's data is no path
					}
					for _, a := range args {
						for _, id := range r.names(a) {
							paths[id] = true
						}
					}
				}
			}
		case *ast.AssignStmt:
			l := link{}
			for _, e := range n.Lhs {
				l.lhs = append(l.lhs, r.names(e)...)
			}
			for _, e := range n.Rhs {
				l.rhs = append(l.rhs, r.names(e)...)
				if r.pathResult(e) {
					for _, id := range l.lhs {
						paths[id] = true
					}
				}
			}
			links = append(links, l)
		case *ast.RangeStmt:
			l := link{rhs: r.names(n.X)}
			for _, e := range []ast.Expr{n.Key, n.Value} {
				if e != nil {
					l.lhs = append(l.lhs, r.names(e)...)
				}
			}
			links = append(links, l)
		case *ast.ValueSpec:
			l := link{}
			for _, id := range n.Names {
				l.lhs = append(l.lhs, id.Name)
			}
			for _, e := range n.Values {
				l.rhs = append(l.rhs, r.names(e)...)
			}
			links = append(links, l)
		}
		return true
	})
	for changed := true; changed; {
		changed = false
		for _, l := range links {
			any := func(ids []string) bool {
				for _, id := range ids {
					if paths[id] {
						return true
					}
				}
				return false
			}
			for _, side := range [][2][]string{{l.lhs, l.rhs}, {l.rhs, l.lhs}} {
				if any(side[0]) {
					for _, id := range side[1] {
						if !paths[id] {
							paths[id] = true
							changed = true
						}
					}
				}
			}
		}
	}
	return paths
}

// names returns the identifiers e computes its value from, leaving out
// the arguments of calls whose result is no path of them (an element, a
// test, an index, len).
func (r *climbReader) names(e ast.Expr) []string {
	var out []string
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if r.noPathOf(n) || r.readsPath(n) {
				return false
			}
			if fds := r.own(n); fds != nil {
				// A function read with this one: its result is linked to
				// its arguments through its body (climbScope), not here.
				for _, fd := range fds {
					out = append(out, retName(declKey(fd)))
				}
				return false
			}
			ast.Inspect(n.Fun, func(m ast.Node) bool { // a method's receiver
				if sel, ok := m.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && r.imports[x.Name] == "" {
						out = append(out, x.Name)
					}
					return false
				}
				return true
			})
			args := n.Args
			if fn := r.pkgFunc(n.Fun); pathReturning(fn) && pathArgs(fn) < len(args) {
				args = args[:pathArgs(fn)] // filepath.Join's base, not its names
			}
			for _, a := range args {
				out = append(out, r.names(a)...)
			}
			return false
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && r.imports[x.Name] != "" {
				return false // a package's name, not a value
			}
		case *ast.Ident:
			if n.Name != "_" && n.Name != "nil" && n.Name != "true" && n.Name != "false" {
				out = append(out, n.Name)
			}
		}
		return true
	})
	return out
}

// pathResult reports whether e calls a function that returns a path
// (pathReturning), or reads os.Args.
func (r *climbReader) pathResult(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if found {
			return false
		}
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if fn := r.pkgFunc(sel); fn == "os.Args" {
				found = true
			}
		}
		if call, ok := n.(*ast.CallExpr); ok {
			if r.noPathOf(call) || r.readsPath(call) {
				return false
			}
			if fds := r.own(call); fds != nil {
				for _, fd := range fds {
					found = found || r.scope.rets[fd]
				}
				return false
			}
			if fn := r.pkgFunc(call.Fun); pathReturning(fn) {
				found = true
			}
		}
		return !found
	})
	return found
}

// mentionsPath reports whether e is computed from a path value: one of
// paths, or a path a call of pathPackages returns.
func (r *climbReader) mentionsPath(e ast.Expr, paths map[string]bool) bool {
	for _, id := range r.names(e) {
		if paths[id] {
			return true
		}
	}
	return r.pathResult(e)
}

// pathLevelled are the functions of levelKeeping whose result is a path
// of their arguments (the same, or one climb.go measures).
var pathLevelled = funcSet(
	[]string{"path", "path/filepath"}, []string{"Clean", "ToSlash", "FromSlash", "EvalSymlinks", "Abs", "Join", "Dir", "Split"},
	[]string{"strings", "bytes"}, []string{"ToLower", "ToUpper", "ToTitle", "TrimSpace", "Clone"})

// noPathOf reports whether call returns no path computed from its
// arguments: an element of one (Base, Ext), a test, an index or a
// count, len or cap.
func (r *climbReader) noPathOf(call *ast.CallExpr) bool {
	if fn := r.pkgFunc(call.Fun); levelKeeping[fn] && !pathLevelled[fn] {
		return true
	}
	id, ok := call.Fun.(*ast.Ident)
	return ok && (id.Name == "len" || id.Name == "cap")
}

// pathArgs returns how many leading arguments of fn, a function of
// pathPackages, are paths: all of path and path/filepath's but Join's
// (its first), the first of
// os and io/ioutil's (the file; not the data, the mode or a name), the
// first two of those that take two paths.
func pathArgs(fn string) int {
	switch {
	case strings.HasSuffix(fn, ".Join"):
		// The base; the elements joined to it are names, a descent
		// (what a name computed from other text may do, elems counts
		// as nothing).
		return 1
	case strings.HasPrefix(fn, "path"):
		return 1 << 10
	case fn == "os.Rename" || fn == "os.Symlink" || fn == "os.Link":
		return 2
	}
	return 1
}

// pathReturning reports whether fn, "pkg.Name", returns a path: a
// function of path or path/filepath but those that return no path of
// their arguments (an element, a test), or one of os and io/ioutil that
// names a directory (os.Getwd, os.UserHomeDir, os.MkdirTemp), reads the
// environment or a link.
func pathReturning(fn string) bool {
	pkg, name := fn, ""
	if i := strings.LastIndex(fn, "."); i >= 0 {
		pkg, name = fn[:i], fn[i+1:]
	}
	switch pkg {
	case "path", "path/filepath":
		return !levelKeeping[fn] || pathLevelled[fn]
	case "os", "io/ioutil":
		switch name {
		case "Getwd", "Getenv", "LookupEnv", "ExpandEnv", "Expand", "Environ", "UserHomeDir", "UserCacheDir", "UserConfigDir",
			"Executable", "TempDir", "MkdirTemp", "Readlink":
			return true
		}
	}
	return false
}

// readsPath reports whether call is a function of pathPackages that takes
// a path and returns what it reads (os.ReadFile, os.Stat), not a path.
func (r *climbReader) readsPath(call *ast.CallExpr) bool {
	fn := r.pkgFunc(call.Fun)
	i := strings.LastIndex(fn, ".")
	return i >= 0 && pathPackages[fn[:i]] && !pathReturning(fn)
}

// mentionsSeparator reports whether e names a path separator: a literal
// with "/" or `\` in it, filepath.Separator, os.PathSeparator,
// os.IsPathSeparator.
func (r *climbReader) mentionsSeparator(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			// "/work", `\`: text with a separator in it.
			if n.Kind == token.STRING || n.Kind == token.CHAR {
				if v, err := strconv.Unquote(n.Value); err == nil && strings.ContainsAny(v, `/\`) {
					found = true
				}
			}
		case *ast.SelectorExpr:
			switch r.pkgFunc(n) {
			case "path/filepath.Separator", "os.PathSeparator", "os.IsPathSeparator":
				found = true
			}
		}
		return !found
	})
	return found
}

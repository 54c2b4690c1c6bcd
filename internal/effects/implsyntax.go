package effects

import (
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"os"
	"strconv"
)

// Export data holds a package's exported types and what its exported
// API and inlinable bodies reach, not every unexported type: an
// unexported implementation of an exported interface (prometheus's
// wrappingRegisterer) may be missing from it. indexPackage reads the
// package's syntax too, for the names of the types and the methods
// declared on them, and adds the types export data left out, matched by
// method name only (their signatures are not type-checked here).

// indexPackage indexes the named types of the listed package path:
// those its export data holds (every one, when the load type-checked it
// from source), or, with syntax, those export data left out.
func (l *Loader) indexPackage(path string, syntax bool) typeIndex {
	l.mu.Lock()
	ls := l.listed[path]
	var typed *types.Package
	if ls != nil && ls.typed != nil {
		typed = ls.typed.Types
	}
	l.mu.Unlock()
	if ls == nil {
		return nil
	}
	if typed != nil {
		// Type-checked from source: every type is there.
		if syntax {
			return nil
		}
		return indexTypes(scopeTypes(typed))
	}
	pkg, err := (&exportImporter{l: l}).Import(path)
	if err != nil {
		if syntax {
			return nil
		}
		return typeIndex{unknownMethods: {{}}}
	}
	if !syntax {
		return indexTypes(scopeTypes(pkg))
	}
	idx := typeIndex{}
	l.addSyntaxTypes(ls, pkg, idx)
	return idx
}

// addSyntaxTypes adds to idx the types the package ls lists declares at
// package level that its export data pkg left out.
func (l *Loader) addSyntaxTypes(ls *listing, pkg *types.Package, idx typeIndex) {
	fset := token.NewFileSet()
	type decl struct {
		spec    *ast.TypeSpec
		imports map[string]string // the file's import names -> package paths
	}
	decls := map[string]decl{}
	methods := map[string][]string{} // receiver type name -> methods declared
	for _, name := range ls.files {
		src, err := os.ReadFile(name)
		if err != nil {
			idx[unknownMethods] = append(idx[unknownMethods], &implType{})
			return
		}
		f, err := parser.ParseFile(fset, name, withoutBodies(fset, src), parser.SkipObjectResolution)
		if err != nil {
			idx[unknownMethods] = append(idx[unknownMethods], &implType{})
			return
		}
		var imports map[string]string
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					if ts, ok := sp.(*ast.TypeSpec); ok && ts.Name.Name != "_" && pkg.Scope().Lookup(ts.Name.Name) == nil {
						if imports == nil {
							imports = fileImports(f, ls)
						}
						decls[ts.Name.Name] = decl{ts, imports}
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) == 1 {
					if base := recvBase(d.Recv.List[0].Type); base != "" {
						methods[base] = append(methods[base], d.Name.Name)
					}
				}
			}
		}
	}
	fake := types.NewPackage(pkg.Path(), pkg.Name())
	// methodsOf lists the methods of the type named name, declared or
	// promoted, as functions whose Key names the code that runs; ok is
	// false when an embedded field's methods cannot be listed.
	var methodsOf func(name string, seen map[string]bool) (map[string]*types.Func, bool)
	methodsOf = func(name string, seen map[string]bool) (map[string]*types.Func, bool) {
		out := map[string]*types.Func{}
		if obj := pkg.Scope().Lookup(name); obj != nil {
			return methodSet(obj.Type()), true
		}
		d, ok := decls[name]
		if !ok || seen[name] {
			return out, ok
		}
		seen[name] = true
		ok = true
		switch t := d.spec.Type.(type) {
		case *ast.InterfaceType:
			return nil, true // not an implementation
		case *ast.StructType:
			for _, f := range t.Fields.List {
				if len(f.Names) > 0 {
					continue
				}
				promoted, known := l.embedded(f.Type, d.imports, func(n string) (map[string]*types.Func, bool) { return methodsOf(n, seen) })
				ok = ok && known
				for m, fn := range promoted {
					out[m] = fn
				}
			}
		case *ast.Ident, *ast.SelectorExpr:
			// type T U: U's methods are not T's, unless U is an
			// interface (then T is one too).
		}
		for _, m := range methods[name] {
			out[m] = fakeMethod(fake, name, m)
		}
		return out, ok
	}
	for name := range decls {
		ms, ok := methodsOf(name, map[string]bool{})
		if !ok {
			idx[unknownMethods] = append(idx[unknownMethods], &implType{})
			continue
		}
		if len(ms) == 0 {
			continue
		}
		it := &implType{generic: true, methods: ms}
		for m := range ms {
			idx[m] = append(idx[m], it)
		}
	}
}

// embedded returns the methods an embedded field of type e promotes: of
// a type of the package (local), or of another package's exported type
// read from export data. known is false when they cannot be listed.
func (l *Loader) embedded(e ast.Expr, imports map[string]string, local func(string) (map[string]*types.Func, bool)) (map[string]*types.Func, bool) {
	switch t := e.(type) {
	case *ast.StarExpr:
		return l.embedded(t.X, imports, local)
	case *ast.IndexExpr:
		return l.embedded(t.X, imports, local)
	case *ast.IndexListExpr:
		return l.embedded(t.X, imports, local)
	case *ast.Ident:
		if obj := types.Universe.Lookup(t.Name); obj != nil {
			return methodSet(obj.Type()), true // error, any, comparable
		}
		return local(t.Name)
	case *ast.SelectorExpr:
		x, ok := t.X.(*ast.Ident)
		if !ok {
			return nil, false
		}
		pkg := l.importNamed(imports, x.Name)
		if pkg == nil {
			return nil, false
		}
		obj := pkg.Scope().Lookup(t.Sel.Name)
		if obj == nil {
			return nil, false
		}
		return methodSet(obj.Type()), true
	}
	return nil, false
}

// methodSet returns the pointer method set of t by name, nil for a
// method promoted from an interface (or of an interface).
func methodSet(t types.Type) map[string]*types.Func {
	out := map[string]*types.Func{}
	if !types.IsInterface(t) {
		t = types.NewPointer(t)
	}
	ms := types.NewMethodSet(t)
	for i := range ms.Len() {
		fn, _ := ms.At(i).Obj().(*types.Func)
		if fn != nil {
			if r := fn.Type().(*types.Signature).Recv(); r != nil && types.IsInterface(r.Type()) {
				fn = nil
			}
		}
		out[ms.At(i).Obj().Name()] = fn
	}
	return out
}

// fileImports maps the paths of the packages f imports to the names it
// gives them ("" for the package's own name).
func fileImports(f *ast.File, ls *listing) map[string]string {
	out := map[string]string{}
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		if q, ok := ls.imports[p]; ok {
			p = q
		}
		out[p] = ""
		if imp.Name != nil {
			out[p] = imp.Name.Name
		}
	}
	return out
}

// importNamed returns the package a file's imports know as name, read
// from export data, or nil.
func (l *Loader) importNamed(imports map[string]string, name string) *types.Package {
	for path, as := range imports {
		if as != name && as != "" {
			continue
		}
		pkg, err := (&exportImporter{l: l}).Import(path)
		if err == nil && (as == name || pkg.Name() == name) {
			return pkg
		}
	}
	return nil
}

// recvBase returns the name of the base type of a method's receiver
// type expression (T, *T, T[K], *T[K]).
func recvBase(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// fakeMethod returns a function standing for the method name of the type
// recv of pkg, which export data left out: its Key is the method's, so
// summaries find its code.
func fakeMethod(pkg *types.Package, recv, name string) *types.Func {
	tn := types.NewTypeName(token.NoPos, pkg, recv, nil)
	named := types.NewNamed(tn, types.NewStruct(nil, nil), nil)
	sig := types.NewSignatureType(types.NewVar(token.NoPos, pkg, "", named), nil, nil, nil, nil, false)
	return types.NewFunc(token.NoPos, pkg, name, sig)
}

// withoutBodies returns src with the bodies of its functions blanked:
// the index needs declarations only, and parsing them alone costs a
// fraction of parsing the whole file (scanning is cheap).
func withoutBodies(fset *token.FileSet, src []byte) []byte {
	out := append([]byte(nil), src...)
	file := fset.AddFile("", -1, len(src))
	var sc scanner.Scanner
	sc.Init(file, src, nil, 0)
	next := func() (token.Pos, token.Token) {
		pos, tok, _ := sc.Scan()
		return pos, tok
	}
	// skip consumes tokens up to the brace closing the one just read
	// and returns its offset, or -1 at the end of the file.
	skip := func() int {
		depth := 1
		for {
			pos, tok := next()
			switch tok {
			case token.EOF:
				return -1
			case token.LBRACE:
				depth++
			case token.RBRACE:
				depth--
				if depth == 0 {
					return file.Offset(pos)
				}
			}
		}
	}
	depth := 0 // braces, brackets and parentheses outside function bodies
	inFunc := false
	prev := token.ILLEGAL
	for {
		pos, tok := next()
		switch tok {
		case token.EOF:
			return out
		case token.FUNC:
			if depth == 0 {
				inFunc = true
			}
		case token.LPAREN, token.LBRACK:
			depth++
		case token.RPAREN, token.RBRACK:
			depth--
		case token.LBRACE:
			if inFunc && depth == 0 && prev != token.INTERFACE && prev != token.STRUCT {
				start := file.Offset(pos) + 1
				end := skip()
				if end < 0 {
					return src
				}
				for i := start; i < end; i++ {
					if out[i] != '\n' {
						out[i] = ' '
					}
				}
				inFunc = false
			} else {
				depth++
			}
		case token.RBRACE:
			depth--
		case token.SEMICOLON:
			if depth == 0 {
				inFunc = false // a declaration without a body
			}
		}
		prev = tok
	}
}

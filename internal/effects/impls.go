package effects

import (
	"go/token"
	"go/types"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Calls through an interface of the module (or of a dependency outside
// the standard library) are followed when the interface has few
// implementations among the packages of the run: each implementation's
// method is summarised and the summaries are joined, so the call has the
// effects of the worst of them. The standard library's interfaces keep
// their table rule (pureInterfaces; the rest stay unknown): io.Writer or
// net.Conn have implementations everywhere.
//
// Implementations are found in a per-run index of named types by method
// name, built a package at a time and only for the packages that may
// declare one: the interface's own package and the packages that import
// it, directly or not (a method's signature names the interface's
// package's types, or the type is declared beside it). Types are read
// from export data, or from the syntax of the package under analysis,
// which holds its test files' types too.

// MaxImpls bounds the implementations a call through an interface is
// followed into; an interface with more stays unknown.
const MaxImpls = 4

// An Implementer finds the concrete methods a call through an interface
// may run. Loader and the Source Local returns implement it.
type Implementer interface {
	// Implementations returns the methods that a call of m, a method of
	// an interface, may run: at most MaxImpls, sorted by Key. When it
	// cannot tell it returns nil and says why (completing "... through
	// an interface, which ..."), or "" when the interface is not one it
	// follows (the standard library's).
	Implementations(m *types.Func) ([]*types.Func, string)
}

// Implementations returns what src's Implementations does, or nil and ""
// when src does not find implementations.
func Implementations(src Source, m *types.Func) ([]*types.Func, string) {
	if im, ok := src.(Implementer); ok {
		return im.Implementations(m)
	}
	return nil, ""
}

// An ifaceQuery is what matching asks of an interface: its methods'
// names and signatures, printed with full package paths so that types of
// different type-checks of the same package compare equal.
type ifaceQuery struct {
	pkg     string // the package declaring the method called
	name    string // the method called
	methods map[string]string
	// scope is a package every implementation's package is or imports,
	// directly or not.
	scope string
	// closed is set when every method is unexported and of pkg: only
	// pkg's code implements them.
	closed bool
}

// newIfaceQuery returns the query for m, a method of an interface, or nil
// with a reason when calls of m are not followed ("" for the standard
// library's interfaces).
func newIfaceQuery(m *types.Func, std func(string) (bool, bool)) (*ifaceQuery, string) {
	if m == nil || m.Pkg() == nil {
		return nil, ""
	}
	recv := m.Type().(*types.Signature).Recv()
	if recv == nil {
		return nil, ""
	}
	if inTable(m.Pkg().Path(), std) {
		return nil, ""
	}
	if n, ok := types.Unalias(recv.Type()).(*types.Named); ok && n.TypeParams().Len() > 0 {
		return nil, "is generic"
	}
	it, ok := recv.Type().Underlying().(*types.Interface)
	if !ok || it.NumMethods() == 0 {
		return nil, ""
	}
	if !it.IsMethodSet() {
		return nil, "is a constraint"
	}
	q := &ifaceQuery{pkg: m.Pkg().Path(), name: m.Name(), methods: make(map[string]string, it.NumMethods()), closed: true}
	named := map[string]bool{} // non-standard packages the signatures name types of
	for i := range it.NumMethods() {
		f := it.Method(i)
		q.methods[f.Name()] = sigString(f)
		if token.IsExported(f.Name()) {
			q.closed = false
		} else if q.scope == "" {
			// Only a type of f's package declares f, and a type
			// elsewhere has it only by embedding one: it imports the
			// package.
			q.scope = f.Pkg().Path()
		}
		// The universe's error has a method without a package (Error):
		// an interface that embeds error is not closed.
		if f.Pkg() == nil || f.Pkg().Path() != q.pkg {
			q.closed = false
		}
		namedPkgs(f.Type(), named, map[types.Type]bool{})
	}
	if q.scope == "" {
		// A type with a method whose signature names a type of a
		// package imports that package: the one named first in
		// the package's own types' order decides.
		for p := range named {
			if !inTable(p, std) && (q.scope == "" || p < q.scope) {
				q.scope = p
			}
		}
		if q.scope == "" {
			return nil, "may be implemented in any package"
		}
	}
	return q, ""
}

// namedPkgs adds to pkgs the packages of the named types t mentions.
func namedPkgs(t types.Type, pkgs map[string]bool, seen map[types.Type]bool) {
	if seen[t] {
		return
	}
	seen[t] = true
	switch t := types.Unalias(t).(type) {
	case *types.Named:
		if t.Obj().Pkg() != nil {
			pkgs[t.Obj().Pkg().Path()] = true
		}
		if args := t.TypeArgs(); args != nil {
			for i := range args.Len() {
				namedPkgs(args.At(i), pkgs, seen)
			}
		}
	case *types.Pointer:
		namedPkgs(t.Elem(), pkgs, seen)
	case *types.Slice:
		namedPkgs(t.Elem(), pkgs, seen)
	case *types.Array:
		namedPkgs(t.Elem(), pkgs, seen)
	case *types.Chan:
		namedPkgs(t.Elem(), pkgs, seen)
	case *types.Map:
		namedPkgs(t.Key(), pkgs, seen)
		namedPkgs(t.Elem(), pkgs, seen)
	case *types.Signature:
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for i := range tup.Len() {
				namedPkgs(tup.At(i).Type(), pkgs, seen)
			}
		}
	case *types.Struct:
		for i := range t.NumFields() {
			namedPkgs(t.Field(i).Type(), pkgs, seen)
		}
	case *types.Interface:
		for i := range t.NumMethods() {
			namedPkgs(t.Method(i).Type(), pkgs, seen)
		}
	}
}

// sigString prints fn's signature with package paths and without the
// receiver or parameter names: the same for every type-check of the
// packages it names, and for an interface's method and its
// implementations.
func sigString(fn *types.Func) string {
	sig := fn.Type().(*types.Signature)
	qual := func(p *types.Package) string { return p.Path() }
	var b strings.Builder
	tuple := func(t *types.Tuple, variadic bool) {
		b.WriteByte('(')
		for i := range t.Len() {
			if i > 0 {
				b.WriteByte(',')
			}
			if variadic && i == t.Len()-1 {
				b.WriteString("...")
			}
			b.WriteString(types.TypeString(t.At(i).Type(), qual))
		}
		b.WriteByte(')')
	}
	tuple(sig.Params(), sig.Variadic())
	tuple(sig.Results(), false)
	return b.String()
}

// An implType is a named type that may implement interfaces: its pointer
// method set (which holds the value's), by name.
type implType struct {
	generic bool // matched by method names only: its signatures name its type parameters
	// methods holds the methods, nil for one promoted from an embedded
	// interface (which code runs depends on the value).
	methods map[string]*types.Func
}

// A typeIndex holds one package's named types with methods, by method
// name; under unknownMethods, the types whose method sets it cannot
// list.
type typeIndex map[string][]*implType

const unknownMethods = ""

// indexTypes indexes the named types whose TypeNames names yields.
func indexTypes(names []*types.TypeName) typeIndex {
	idx := typeIndex{}
	for _, tn := range names {
		if tn.IsAlias() {
			continue
		}
		n, ok := tn.Type().(*types.Named)
		if !ok || types.IsInterface(n) {
			continue
		}
		ms := types.NewMethodSet(types.NewPointer(n))
		if ms.Len() == 0 {
			continue
		}
		it := &implType{generic: n.TypeParams().Len() > 0, methods: make(map[string]*types.Func, ms.Len())}
		for i := range ms.Len() {
			fn, _ := ms.At(i).Obj().(*types.Func)
			if fn == nil {
				continue
			}
			if r := fn.Type().(*types.Signature).Recv(); r != nil && types.IsInterface(r.Type()) {
				fn = nil
			}
			it.methods[ms.At(i).Obj().Name()] = fn
		}
		for name := range it.methods {
			idx[name] = append(idx[name], it)
		}
	}
	return idx
}

// scopeTypes returns the package-level type names of pkg.
func scopeTypes(pkg *types.Package) []*types.TypeName {
	var out []*types.TypeName
	for _, name := range pkg.Scope().Names() {
		if tn, ok := pkg.Scope().Lookup(name).(*types.TypeName); ok {
			out = append(out, tn)
		}
	}
	return out
}

// match adds to found the methods of the types in idx that implement q,
// by Key. It reports false when one implements it with a method promoted
// from an embedded interface.
func (q *ifaceQuery) match(idx typeIndex, found map[string]*types.Func) bool {
	if len(idx[unknownMethods]) > 0 {
		return false // a type whose methods the index cannot list may implement q
	}
	for _, it := range idx[q.name] {
		if !q.implementedBy(it) {
			continue
		}
		fn := it.methods[q.name]
		if fn == nil {
			return false
		}
		if _, dup := found[Key(fn)]; !dup {
			found[Key(fn)] = fn
		}
	}
	return true
}

func (q *ifaceQuery) implementedBy(it *implType) bool {
	for name, sig := range q.methods {
		fn, ok := it.methods[name]
		if !ok {
			return false
		}
		// A promoted interface method counts as matching: it may run
		// anything, which match reports.
		if fn != nil && !it.generic && sigString(fn) != sig {
			return false
		}
		if !token.IsExported(name) && fn != nil && fn.Pkg() != nil && fn.Pkg().Path() != q.pkg {
			return false // another package's unexported method of the same name
		}
	}
	return true
}

// choose returns the methods found, sorted by Key, or nil with a reason.
func (q *ifaceQuery) choose(found map[string]*types.Func, ok bool) ([]*types.Func, string) {
	switch {
	case !ok:
		return nil, "has an implementation that embeds an interface"
	case len(found) == 0:
		return nil, "has no implementation the analysis can see"
	case len(found) > MaxImpls:
		return nil, "has more than " + strconv.Itoa(MaxImpls) + " implementations"
	}
	out := make([]*types.Func, 0, len(found))
	for _, fn := range found {
		out = append(out, fn)
	}
	sort.Slice(out, func(i, j int) bool { return Key(out[i]) < Key(out[j]) })
	return out, ""
}

// An implResult is what Implementations returned.
type implResult struct {
	impls []*types.Func
	why   string
}

// An implIndex is the Loader's index: the named types of the listed
// packages, read from export data a package at a time, on first need.
type implIndex struct {
	mu        sync.Mutex
	pkgs      map[string]typeIndex       // by package path: the types export data holds
	syntax    map[string]typeIndex       // by package path: the types export data left out
	results   map[string]implResult      // by Key of the interface's method
	importers map[string]map[string]bool // by package path: the listed packages importing it, directly or not
	direct    map[string][]string        // by package path: the listed packages importing it directly
	deps      map[string]map[string]bool // by package path: the listed packages it imports, directly or not
	listed    int                        // len(Loader.listed) when importers was computed
}

// Implementations finds the implementations of m's interface among the
// listed packages.
func (l *Loader) Implementations(m *types.Func) ([]*types.Func, string) {
	key := Key(m)
	ix := &l.impls
	ix.mu.Lock()
	r, done := ix.results[key]
	ix.mu.Unlock()
	if done {
		return r.impls, r.why
	}
	q, why := newIfaceQuery(m, l.isStd)
	if q == nil {
		r = implResult{nil, why}
	} else {
		found := map[string]*types.Func{}
		r.impls, r.why = q.choose(found, l.matchListed(q, found, ""))
	}
	ix.mu.Lock()
	if ix.results == nil {
		ix.results = map[string]implResult{}
	}
	ix.results[key] = r
	ix.mu.Unlock()
	return r.impls, r.why
}

// implementationsFrom returns the Implementations function for the
// summariser of the listed package from. It follows an interface only
// when every implementation is in from or in a package it imports: a
// summariser asks for summaries of its package's dependencies only, so
// that the packages the Loader holds locked while summarising form no
// cycle (and an implementation elsewhere, in a package importing from,
// may be what a value from outside brings).
func (l *Loader) implementationsFrom(from string) func(*types.Func) ([]*types.Func, string) {
	return func(m *types.Func) ([]*types.Func, string) {
		// Summaries go deep into dependencies: only interfaces no
		// other package implements are followed there, which costs
		// one package's index.
		if q, _ := newIfaceQuery(m, l.isStd); q == nil || !q.closed {
			return nil, ""
		}
		impls, why := l.Implementations(m)
		for _, fn := range impls {
			if p := fn.Pkg().Path(); p != from && !l.dependsOn(from, p) {
				return nil, "has an implementation in a package that imports it"
			}
		}
		return impls, why
	}
}

// dependsOn reports whether the listed package from imports to, directly
// or not.
func (l *Loader) dependsOn(from, to string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ix := &l.impls
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.deps == nil {
		ix.deps = map[string]map[string]bool{}
	}
	set := ix.deps[from]
	if set == nil {
		set = map[string]bool{}
		work := []string{from}
		for len(work) > 0 {
			p := work[len(work)-1]
			work = work[:len(work)-1]
			ls := l.listed[p]
			if ls == nil {
				continue
			}
			for _, q := range ls.imports {
				if !set[q] {
					set[q] = true
					work = append(work, q)
				}
			}
		}
		ix.deps[from] = set
	}
	return set[to]
}

// matchListed matches q against the types of the listed packages that may
// implement it, except the package skip (which the caller indexes
// itself).
func (l *Loader) matchListed(q *ifaceQuery, found map[string]*types.Func, skip string) bool {
	paths := []string{q.pkg}
	if !q.closed {
		paths = l.implScope(q.scope)
	}
	// Export data first, then the types it left out, read from syntax:
	// most interfaces followed nowhere have too many implementations
	// among the exported types already, and the rest costs a parse.
	for _, syntax := range []bool{false, true} {
		for _, path := range paths {
			if path == skip {
				continue
			}
			if !q.match(l.typeIndex(path, syntax), found) {
				return false
			}
			if len(found) > MaxImpls {
				return true
			}
		}
	}
	return true
}

// implScope returns, sorted, the listed packages that may declare a type
// implementing an interface of the package path: it and the packages
// that import it, directly or not.
func (l *Loader) implScope(path string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ix := &l.impls
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.importers == nil || ix.listed != len(l.listed) {
		// The reverse import graph, made again when Add listed more.
		direct := map[string][]string{}
		for p, ls := range l.listed {
			for _, imp := range ls.imports {
				direct[imp] = append(direct[imp], p)
			}
		}
		ix.importers = map[string]map[string]bool{}
		ix.deps = nil
		ix.listed = len(l.listed)
		ix.direct = direct
	}
	set := ix.importers[path]
	if set == nil {
		set = map[string]bool{path: true}
		work := []string{path}
		for len(work) > 0 {
			p := work[len(work)-1]
			work = work[:len(work)-1]
			for _, q := range ix.direct[p] {
				if !set[q] {
					set[q] = true
					work = append(work, q)
				}
			}
		}
		ix.importers[path] = set
	}
	out := make([]string, 0, len(set))
	for p := range set {
		if l.listed[p] != nil {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// typeIndex returns the index of the listed package path's named types
// read from its export data (or its types, when the load checked it
// from source), or, with syntax, of those export data left out, read
// from its files.
func (l *Loader) typeIndex(path string, syntax bool) typeIndex {
	ix := &l.impls
	cache := &ix.pkgs
	if syntax {
		cache = &ix.syntax
	}
	ix.mu.Lock()
	if idx, ok := (*cache)[path]; ok {
		ix.mu.Unlock()
		return idx
	}
	ix.mu.Unlock()
	var idx typeIndex
	if !inTable(path, l.isStd) {
		idx = l.indexPackage(path, syntax)
	}
	ix.mu.Lock()
	if *cache == nil {
		*cache = map[string]typeIndex{}
	}
	(*cache)[path] = idx
	ix.mu.Unlock()
	return idx
}

// Implementations finds the implementations of m's interface in the
// package under analysis (its syntax: test files and types declared in
// functions too) and, through other, in the rest of the run.
func (l *local) Implementations(m *types.Func) ([]*types.Func, string) {
	key := Key(m)
	if r, ok := l.results[key]; ok {
		return r.impls, r.why
	}
	impls, why := l.implementations(m)
	if l.results == nil {
		l.results = map[string]implResult{}
	}
	l.results[key] = implResult{impls, why}
	return impls, why
}

func (l *local) implementations(m *types.Func) ([]*types.Func, string) {
	ld, _ := l.other.(*Loader)
	var std func(string) (bool, bool)
	if ld != nil {
		std = ld.isStd
	}
	q, why := newIfaceQuery(m, std)
	if q == nil {
		return nil, why
	}
	if l.own == nil {
		var names []*types.TypeName
		for id, obj := range l.info.Defs {
			if tn, ok := obj.(*types.TypeName); ok && id.Name != "_" {
				names = append(names, tn)
			}
		}
		sort.Slice(names, func(i, j int) bool { return names[i].Pos() < names[j].Pos() })
		l.own = indexTypes(names)
	}
	found := map[string]*types.Func{}
	ok := q.match(l.own, found)
	if ld != nil {
		ok = ld.matchListed(q, found, l.pkg.Path()) && ok
	} else if q.pkg != l.pkg.Path() || !q.closed {
		// Without a run's index only the package's own types are known:
		// enough for an interface whose methods no other package can
		// implement.
		return nil, ""
	}
	return q.choose(found, ok)
}

package effects

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/tools/go/gcexportdata"
	"golang.org/x/tools/go/packages"

	"github.com/unflake/unflake/internal/crash"
)

// A Loader is the Source of unflake's own driver, which loads the
// packages under test with syntax and their dependencies as types only
// (export data). A cold run must not pay for code that no candidate test
// reaches, so the Loader summarises lazily: only when a rule asks for a
// function of another package does it parse and type-check that package
// from source (once per run), and it summarises only the functions
// asked for and what they call, recursively into further packages.
//
// The functions a rule holds are export-data objects; the Loader's are
// from its own type-check. They are matched by Key (package path,
// receiver type name, name).
//
// A Loader is safe for concurrent use. It keeps at most MaxLoaded
// packages' syntax and types at once; summaries, which are small, are
// kept for the run.
type Loader struct {
	// MaxLoaded bounds the packages held parsed and type-checked at once
	// (0: 16). A package let go is loaded again if asked for again.
	MaxLoaded int

	mu     sync.Mutex
	listed map[string]*listing // by package path

	// imported holds the dependencies read from export data, shared by
	// every package the Loader type-checks: all come from one go list
	// run, so they agree, and each is read once.
	importMu sync.Mutex
	imported map[string]*types.Package
	fset     *token.FileSet
	pkgs     map[string]*lazyPkg // loaded (or loading) by package path
	sums     map[string]*Summary // by Key; nil for unknown
	tick     int                 // for least-recently-used eviction
	stats    Stats
	loadNs   atomic.Int64
	impls    implIndex // named types by method, for calls through interfaces
}

// Stats counts what a Loader did in a run.
type Stats struct {
	Asked  int // distinct functions asked for by the rules (Of)
	Known  int // ... of which the summary is known
	Loaded int // packages parsed and type-checked (again after eviction)
	// LoadTime is the time spent parsing and type-checking.
	LoadTime time.Duration
}

// A listing is what the go command listed of a package: enough to load
// it from source later.
type listing struct {
	path      string
	test      bool // a test variant ("q [p.test]")
	std       bool // of the standard library (no module)
	files     []string
	export    string            // export data file
	imports   map[string]string // import path as written -> package path
	goVersion string
	// typed is the package as go/packages already parsed and
	// type-checked it from source (a root of the load), while its load
	// is held: summarising it needs no second type-check.
	typed *packages.Package
}

type lazyPkg struct {
	once sync.Once
	mu   sync.Mutex // guards s
	s    *summariser
	err  error
	busy int // users, guarded by Loader.mu
	used int // Loader.tick at last use, guarded by Loader.mu
}

// NewLoader returns an empty Loader; Add tells it about packages.
func NewLoader() *Loader {
	return &Loader{listed: map[string]*listing{}, pkgs: map[string]*lazyPkg{}, sums: map[string]*Summary{},
		imported: map[string]*types.Package{}, fset: token.NewFileSet()}
}

// Add records pkgs and everything they import, as loaded by go/packages
// with (at least) NeedName, NeedFiles or NeedCompiledGoFiles,
// NeedImports, NeedExportFile and NeedModule. It keeps file names and
// paths and, until the next Add, the syntax and types of the packages
// that pkgs type-checked from source, which it summarises instead of
// loading them again.
func (l *Loader) Add(pkgs []*packages.Package) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ls := range l.listed {
		ls.typed = nil // the previous load's: the caller lets it go
	}
	// Only the roots are checked in full: a dependency go/packages loads
	// from source (it imports a root) has its function bodies ignored.
	roots := make(map[*packages.Package]bool, len(pkgs))
	for _, p := range pkgs {
		roots[p] = true
	}
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		if p.PkgPath == "" || strings.HasSuffix(p.ID, ".test") {
			return
		}
		test := p.ID != p.PkgPath
		files := p.CompiledGoFiles
		if len(files) == 0 {
			files = p.GoFiles
		}
		var typed *packages.Package
		if !test && roots[p] && p.Types != nil && p.TypesInfo != nil && !p.IllTyped && len(p.Errors) == 0 && len(p.Syntax) == len(files) {
			typed = p
		}
		if old := l.listed[p.PkgPath]; old != nil && (!old.test || test) {
			if !old.test && typed != nil && slices.Equal(old.files, files) {
				old.typed = typed
			}
			return
		}
		ls := &listing{path: p.PkgPath, test: test, files: files, export: p.ExportFile, typed: typed,
			imports: make(map[string]string, len(p.Imports))}
		for path, q := range p.Imports {
			ls.imports[path] = q.PkgPath
		}
		ls.std = p.Module == nil
		if p.Module != nil && p.Module.GoVersion != "" {
			ls.goVersion = "go" + p.Module.GoVersion
		}
		l.listed[p.PkgPath] = ls
	})
}

// isStd reports whether the listed package path belongs to the standard
// library (it has no module), and whether the Loader knows.
func (l *Loader) isStd(path string) (std, known bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ls := l.listed[path]; ls != nil {
		return ls.std, true
	}
	return false, false
}

// Stats returns what the Loader has done so far.
func (l *Loader) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.LoadTime = time.Duration(l.loadNs.Load())
	return s
}

// Of returns fn's summary, or nil when unknown.
func (l *Loader) Of(fn *types.Func) *Summary {
	if fn == nil || fn.Pkg() == nil {
		return nil
	}
	fn = fn.Origin()
	if recv := fn.Type().(*types.Signature).Recv(); recv != nil && types.IsInterface(recv.Type()) {
		return nil
	}
	if inTable(fn.Pkg().Path(), l.isStd) {
		return stdSummary(fn)
	}
	key := Key(fn)
	l.mu.Lock()
	sum, done := l.sums[key]
	if !done {
		l.stats.Asked++
	}
	l.mu.Unlock()
	if done {
		return sum
	}
	sum = l.of(fn)
	l.mu.Lock()
	if sum != nil {
		l.stats.Known++
	}
	l.mu.Unlock()
	return sum
}

// of summarises fn, a function of a package outside the table, loading
// its package if need be.
func (l *Loader) of(fn *types.Func) *Summary {
	if inTable(fn.Pkg().Path(), l.isStd) {
		return stdSummary(fn)
	}
	key := Key(fn)
	path := fn.Pkg().Path()
	l.mu.Lock()
	if sum, ok := l.sums[key]; ok {
		l.mu.Unlock()
		return sum
	}
	ls := l.listed[path]
	if ls == nil {
		l.mu.Unlock()
		return nil
	}
	lp := l.pkgs[path]
	if lp == nil {
		lp = &lazyPkg{}
		l.pkgs[path] = lp
	}
	lp.busy++
	l.tick++
	lp.used = l.tick
	l.mu.Unlock()

	var sum *Summary
	defer func() {
		// A panic (a bug of the summariser) is the asking rule's to
		// report: it goes on up, with the package left consistent and
		// unlocked, and fn's summary unknown from now on.
		v := recover()
		l.mu.Lock()
		l.sums[key] = sum
		lp.busy--
		l.evict()
		l.mu.Unlock()
		if v != nil {
			panic(crash.Recovered(v))
		}
	}()
	lp.once.Do(func() {
		start := time.Now()
		defer func() {
			if v := recover(); v != nil {
				p := crash.Recovered(v)
				lp.s, lp.err = nil, p
				panic(p)
			}
		}()
		lp.s, lp.err = l.load(ls)
		l.loadNs.Add(int64(time.Since(start)))
		l.mu.Lock()
		l.stats.Loaded++
		l.mu.Unlock()
	})
	sum = lp.summary(key)
	return sum
}

// summary returns the summary of the package's function with the given
// Key, or nil. Packages import no cycle, so holding lp's lock while the
// summariser asks for another package's functions cannot deadlock. A
// panic leaves the summariser half way through its work: the package's
// summaries are unknown from then on.
func (lp *lazyPkg) summary(key string) *Summary {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.err != nil {
		return nil // broken by an earlier panic
	}
	defer func() {
		if v := recover(); v != nil {
			p := crash.Recovered(v)
			lp.s, lp.err = nil, p
			panic(p)
		}
	}()
	if obj := lookupKey(lp.s.pkg, key); obj != nil {
		return lp.s.summary(obj)
	}
	return nil
}

// evict lets go of the least recently used idle packages beyond
// MaxLoaded, keeping the summaries they computed. l.mu is held.
func (l *Loader) evict() {
	max := l.MaxLoaded
	if max <= 0 {
		max = 16
	}
	for len(l.pkgs) > max {
		var oldest string
		for path, lp := range l.pkgs {
			if lp.busy == 0 && (oldest == "" || lp.used < l.pkgs[oldest].used) {
				oldest = path
			}
		}
		if oldest == "" {
			return
		}
		lp := l.pkgs[oldest]
		delete(l.pkgs, oldest)
		if lp.s != nil {
			for fn, sum := range lp.s.sums {
				l.sums[Key(fn)] = sum
			}
		}
	}
}

// load parses and type-checks the package ls lists, importing its
// dependencies from their export data.
func (l *Loader) load(ls *listing) (*summariser, error) {
	l.mu.Lock()
	p := ls.typed
	l.mu.Unlock()
	if p != nil {
		s := newSummariser(p.Types, p.TypesInfo, p.Syntax, l.of)
		s.fset = p.Fset
		s.impls = l.implementationsFrom(ls.path)
		return s, nil
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range ls.files {
		// Compiled files that cgo wrote live in the build cache,
		// without a .go suffix. Comments hold //go:linkname.
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	imp := &exportImporter{l: l, from: ls}
	conf := types.Config{
		Importer:  imp,
		GoVersion: ls.goVersion,
		// The package compiled; what this check gets wrong (a
		// missing export file) only makes summaries less precise.
		Error: func(error) {},
	}
	info := &types.Info{
		Types:      map[ast.Expr]types.TypeAndValue{},
		Defs:       map[*ast.Ident]types.Object{},
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
	pkg, _ := conf.Check(ls.path, fset, files, info)
	if pkg == nil {
		return nil, fmt.Errorf("%s: type-check failed", ls.path)
	}
	s := newSummariser(pkg, info, files, l.of)
	s.fset = fset
	s.impls = l.implementationsFrom(ls.path)
	return s, nil
}

// exportImporter imports the dependencies of one package from the export
// data the go command wrote for them, into the Loader's shared map.
type exportImporter struct {
	l    *Loader
	from *listing
}

func (i *exportImporter) Import(path string) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	if i.from != nil {
		if p, ok := i.from.imports[path]; ok {
			path = p
		}
	}
	l := i.l
	l.importMu.Lock()
	defer l.importMu.Unlock()
	if p := l.imported[path]; p != nil && p.Complete() {
		return p, nil
	}
	l.mu.Lock()
	ls := l.listed[path]
	l.mu.Unlock()
	if ls == nil || ls.export == "" {
		return nil, fmt.Errorf("no export data for %s", path)
	}
	f, err := os.Open(ls.export)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := gcexportdata.NewReader(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", ls.export, err)
	}
	return gcexportdata.Read(r, l.fset, l.imported, path)
}

// lookupKey returns the function or method of pkg with the given Key.
func lookupKey(pkg *types.Package, key string) *types.Func {
	rest, ok := strings.CutPrefix(key, pkg.Path()+".")
	if !ok {
		return nil
	}
	recv, name, isMethod := strings.Cut(rest, ".")
	if !isMethod {
		fn, _ := pkg.Scope().Lookup(rest).(*types.Func)
		return fn
	}
	tn, _ := pkg.Scope().Lookup(recv).(*types.TypeName)
	if tn == nil {
		return nil
	}
	n, _ := tn.Type().(*types.Named)
	if n == nil {
		return nil
	}
	for i := 0; i < n.NumMethods(); i++ {
		if m := n.Method(i); m.Name() == name {
			return m
		}
	}
	return nil
}

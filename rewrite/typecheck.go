package rewrite

import (
	"fmt"
	"go/ast"
	"go/types"
	"os"
	"strings"
	"sync"

	"golang.org/x/tools/go/gcexportdata"
	"golang.org/x/tools/go/packages"
)

// checker type-checks a package again after its test files were rewritten.
// It imports from the types the loader already built, so the rewritten
// package lives in the same universe of types as everything else; an
// import the rewrite added and the package did not have is read from the
// go command's export data, seeded with the same packages.
type checker struct {
	pkg    *packages.Package
	env    []string                  // the go command's environment (Config.Env)
	mods   *modules                  // requirements added to the package's module
	byPath map[string]*types.Package // import path as written → package
	seen   map[string]*types.Package // package path → package, for export data
	mu     sync.Mutex
}

func newChecker(p *packages.Package, env []string, mods *modules) *checker {
	c := &checker{pkg: p, env: env, mods: mods, byPath: map[string]*types.Package{}, seen: map[string]*types.Package{}}
	for path, imp := range p.Imports {
		if imp.Types != nil {
			c.byPath[path] = imp.Types
			c.addSeen(imp.Types)
		}
	}
	return c
}

func (c *checker) addSeen(tp *types.Package) {
	if _, ok := c.seen[tp.Path()]; ok {
		return
	}
	c.seen[tp.Path()] = tp
	for _, dep := range tp.Imports() {
		c.addSeen(dep)
	}
}

// Import implements types.Importer.
func (c *checker) Import(path string) (*types.Package, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if tp, ok := c.byPath[path]; ok {
		return tp, nil
	}
	if tp, ok := c.seen[path]; ok && tp.Complete() {
		c.byPath[path] = tp
		return tp, nil
	}
	tp, err := c.importExportData(path)
	if err != nil {
		return nil, err
	}
	c.byPath[path] = tp
	return tp, nil
}

// exportDataMu serialises reading export data: the reader may complete
// package objects that several jobs share.
var exportDataMu sync.Mutex

// importExportData reads the export data of a package the original
// package did not import.
func (c *checker) importExportData(path string) (*types.Package, error) {
	exportDataMu.Lock()
	defer exportDataMu.Unlock()
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedExportFile, Dir: c.pkg.Dir, Env: c.env}
	// A package of a module a fix added to the temporary go.mod is found
	// through that copy; the module stays locked while the go command
	// reads it.
	if m := c.mods.get(c.pkg); m != nil {
		modfile, unlock := m.Modfile()
		defer unlock()
		if modfile != "" {
			cfg.BuildFlags = []string{"-modfile=" + modfile}
			cfg.Env = c.mods.Env()
		}
	}
	pkgs, err := packages.Load(cfg, path)
	if err != nil {
		return nil, err
	}
	if len(pkgs) != 1 || pkgs[0].ExportFile == "" {
		return nil, fmt.Errorf("could not import %s", path)
	}
	f, err := os.Open(pkgs[0].ExportFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := gcexportdata.NewReader(f)
	if err != nil {
		return nil, err
	}
	return gcexportdata.Read(r, c.pkg.Fset, c.seen, pkgs[0].PkgPath)
}

// check type-checks syntax as the package, returning the first errors.
func (c *checker) check(syntax []*ast.File) (*types.Package, *types.Info, error) {
	info := &types.Info{
		Types:        map[ast.Expr]types.TypeAndValue{},
		Defs:         map[*ast.Ident]types.Object{},
		Uses:         map[*ast.Ident]types.Object{},
		Implicits:    map[ast.Node]types.Object{},
		Instances:    map[*ast.Ident]types.Instance{},
		Scopes:       map[ast.Node]*types.Scope{},
		Selections:   map[*ast.SelectorExpr]*types.Selection{},
		FileVersions: map[*ast.File]string{},
	}
	var errs []string
	conf := &types.Config{
		Importer: c,
		Sizes:    c.pkg.TypesSizes,
		Error: func(err error) {
			if len(errs) < 3 {
				errs = append(errs, err.Error())
			}
		},
	}
	if m := c.pkg.Module; m != nil && m.GoVersion != "" {
		conf.GoVersion = "go" + m.GoVersion
	}
	tp, _ := conf.Check(c.pkg.PkgPath, c.pkg.Fset, syntax, info)
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return tp, info, nil
}

package analyzers

import (
	"go/ast"
	"go/types"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/packages"
)

// packageOf describes the package of pass as the engine takes it (a
// go/packages value holding what the driver already parsed and
// type-checked), or returns nil when the package has no test file: no
// rule looks at anything else.
func packageOf(pass *analysis.Pass) (*packages.Package, error) {
	var names []string
	tests := false
	for _, f := range pass.Files {
		name := pass.Fset.File(f.FileStart).Name()
		names = append(names, name)
		tests = tests || strings.HasSuffix(name, "_test.go")
	}
	if !tests {
		return nil, nil
	}
	path := pass.Pkg.Path()
	p := &packages.Package{
		ID:              path,
		Name:            pass.Pkg.Name(),
		PkgPath:         path,
		Dir:             filepath.Dir(names[0]),
		GoFiles:         names,
		CompiledGoFiles: names,
		Syntax:          pass.Files,
		Fset:            pass.Fset,
		Types:           pass.Pkg,
		TypesInfo:       pass.TypesInfo,
		TypesSizes:      pass.TypesSizes,
		Imports:         importsOf(pass.Files, pass.TypesInfo),
		Module:          moduleOf(pass),
	}
	if strings.HasSuffix(p.Name, "_test") {
		// An external test package: its findings belong to the package
		// under test, as go/packages says with ForTest.
		p.ForTest = strings.TrimSuffix(path, "_test")
	}
	return p, nil
}

// importsOf maps each import path the files spell to the package it
// names.
func importsOf(files []*ast.File, info *types.Info) map[string]*packages.Package {
	m := map[string]*packages.Package{}
	for _, f := range files {
		for _, spec := range f.Imports {
			path, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				continue
			}
			pn := info.PkgNameOf(spec)
			if pn == nil || m[path] != nil {
				continue
			}
			tp := pn.Imported()
			m[path] = &packages.Package{ID: tp.Path(), Name: tp.Name(), PkgPath: tp.Path(), Types: tp}
		}
	}
	return m
}

// moduleOf describes the module of the package of pass. The go command
// before Go 1.27 tells a vet tool only the module's path, version and go
// version: a module without a version is a main module (the go command
// vets only its packages' tests), and its go.mod is the nearest one above
// the package. A driver that names no module (golangci-lint, nogo) gets a
// main module of the package's go version, with the nearest go.mod above
// the package if there is one (so that a fix may add a requirement, as in
// unflake check).
func moduleOf(pass *analysis.Pass) *packages.Module {
	m := &packages.Module{Main: true}
	if pm := pass.Module; pm != nil {
		m.Path, m.Version, m.GoMod, m.Dir = pm.Path, pm.Version, pm.GoMod, pm.Dir
		m.Main = pm.Main || pm.Version == ""
		m.GoVersion = pm.GoVersion
	}
	if m.GoVersion == "" {
		m.GoVersion = pass.Pkg.GoVersion()
	}
	m.GoVersion = strings.TrimPrefix(m.GoVersion, "go") // as go.mod says it
	if m.GoMod == "" && m.Main && len(pass.Files) > 0 {
		dir := filepath.Dir(pass.Fset.File(pass.Files[0].FileStart).Name())
		for {
			if fi, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && fi.Mode().IsRegular() {
				m.GoMod, m.Dir = filepath.Join(dir, "go.mod"), dir
				break
			}
			up := filepath.Dir(dir)
			if up == dir {
				break
			}
			dir = up
		}
	}
	return m
}

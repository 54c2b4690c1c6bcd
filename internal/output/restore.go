package output

import (
	"bytes"
	"go/format"
	"go/types"

	"github.com/dave/dst"
	"github.com/dave/dst/decorator"
	"github.com/dave/dst/decorator/resolver/guess"
)

// Restore prints a decorated file of the package pkgPath and gofmts it.
// Imports are managed from imports (the package's own imports; a package
// not among them is named by the last element of its path), not with dst's
// slow default resolver.
func Restore(pkgPath string, imports []*types.Package, f *dst.File) ([]byte, error) {
	names := importNames{}
	for _, imp := range imports {
		names[imp.Path()] = imp.Name()
	}
	r := decorator.NewRestorerWithImports(pkgPath, names)
	var buf bytes.Buffer
	if err := r.Fprint(&buf, f); err != nil {
		return nil, err
	}
	return format.Source(buf.Bytes())
}

// importNames resolves package names from the package's imports, falling
// back to the last path element for packages a fix newly imports.
type importNames map[string]string

func (m importNames) ResolvePackage(path string) (string, error) {
	if n, ok := m[path]; ok {
		return n, nil
	}
	return guess.New().ResolvePackage(path)
}

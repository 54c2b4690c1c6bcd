package effects

import (
	"go/ast"
	"go/types"
)

// Local returns the Source for a package under analysis whose syntax the
// driver holds: the package's own functions are summarised from files
// (lazily, as asked), everything else comes from other, or from the
// standard library's table when other does not know. Like a pass, the
// result is used by one goroutine at a time.
func Local(pkg *types.Package, info *types.Info, files []*ast.File, other Source) Source {
	return &local{pkg: pkg, info: info, files: files, other: other}
}

type local struct {
	pkg     *types.Package
	info    *types.Info
	files   []*ast.File
	other   Source
	s       *summariser           // made on first use
	own     typeIndex             // the package's named types, made on first use (Implementations)
	results map[string]implResult // Implementations' answers, by Key of the method
}

func (l *local) Of(fn *types.Func) *Summary {
	if fn == nil || fn.Pkg() == nil {
		return nil
	}
	if fn.Origin().Pkg() != l.pkg {
		return l.outside(fn)
	}
	if l.s == nil {
		l.s = newSummariser(l.pkg, l.info, l.files, l.outside)
		l.s.impls = l.Implementations
	}
	return l.s.summary(fn)
}

func (l *local) outside(fn *types.Func) *Summary {
	if s := l.other.Of(fn); s != nil {
		return s
	}
	if inTable(fn.Pkg().Path(), nil) {
		return stdSummary(fn)
	}
	return nil
}

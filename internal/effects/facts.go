package effects

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// A summaryFact carries a function's summary from the package that
// declares it to the packages that import it.
type summaryFact struct{ Summary }

func (*summaryFact) AFact() {}

func (f *summaryFact) String() string {
	if f.Pure() {
		return "pure"
	}
	s := ""
	for _, e := range f.Effects {
		if s != "" {
			s += "; "
		}
		s += string(e.Kind) + ": " + e.Why()
	}
	if f.Opaque != "" {
		if s != "" {
			s += "; "
		}
		s += "opaque: " + f.Opaque
	}
	return s
}

// run summarises every function the package declares and exports the
// summaries as facts. The standard library is left to the table.
func run(pass *analysis.Pass) (any, error) {
	if inTable(pass.Pkg.Path()) {
		return factSource{pass: pass}, nil
	}
	s := newSummariser(pass.Pkg, pass.TypesInfo, pass.Files, func(fn *types.Func) *Summary {
		var f summaryFact
		if pass.ImportObjectFact(fn, &f) {
			return &f.Summary
		}
		return nil
	})
	for _, f := range pass.Files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			fn, ok := pass.TypesInfo.Defs[fd.Name].(*types.Func)
			if !ok {
				continue
			}
			if sum := s.summary(fn); sum != nil {
				pass.ExportObjectFact(fn, &summaryFact{*sum})
			}
		}
	}
	return factSource{pass: pass, s: s}, nil
}

// factSource is the Analyzer's result: summaries of the package's own
// functions from its summariser, of the standard library from the table,
// and of other packages from their facts.
type factSource struct {
	pass *analysis.Pass
	s    *summariser
}

func (f factSource) Of(fn *types.Func) *Summary {
	if fn == nil || fn.Pkg() == nil {
		return nil
	}
	fn = fn.Origin()
	if recv := fn.Type().(*types.Signature).Recv(); recv != nil && types.IsInterface(recv.Type()) {
		return nil
	}
	switch {
	case inTable(fn.Pkg().Path()):
		return stdSummary(fn)
	case fn.Pkg() == f.pass.Pkg:
		if f.s == nil {
			return nil
		}
		return f.s.summary(fn)
	}
	var fact summaryFact
	if f.pass.ImportObjectFact(fn, &fact) {
		return &fact.Summary
	}
	return nil
}

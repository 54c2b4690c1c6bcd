package effects

import (
	"fmt"
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// A summaryFact carries a function's summary from the package that
// declares it to the packages that import it.
type summaryFact struct{ Summary }

func (*summaryFact) AFact() {}

func (f *summaryFact) String() string {
	if f.Pure() && f.Spin == nil && f.Clock == nil && f.RealClock == nil && f.Files == nil && !f.Blocks && !f.RunsBubble && len(f.Bubbles) == 0 {
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
	if f.Spin != nil {
		if s != "" {
			s += "; "
		}
		s += string(Spins) + ": " + f.Spin.Why()
	}
	if f.Clock != nil {
		if s != "" {
			s += "; "
		}
		s += string(ReadsClock) + ": " + f.Clock.Why()
	}
	if f.RealClock != nil {
		if s != "" {
			s += "; "
		}
		s += string(ReadsRealClock) + ": " + f.RealClock.Why()
	}
	if f.Files != nil {
		if s != "" {
			s += "; "
		}
		s += string(WritesFiles) + ": " + f.Files.Why()
	}
	if f.Blocks {
		if s != "" {
			s += "; "
		}
		s += "blocks"
	}
	if f.RunsBubble {
		if s != "" {
			s += "; "
		}
		s += "runs a bubble"
	}
	if len(f.Bubbles) > 0 {
		if s != "" {
			s += "; "
		}
		s += fmt.Sprintf("bubbles: %v", f.Bubbles)
	}
	return s
}

// run summarises every function the package declares and exports the
// summaries as facts. The standard library is left to the table.
func run(pass *analysis.Pass) (any, error) {
	facts := &Facts{pass: pass}
	if inTable(pass.Pkg.Path(), func(string) (bool, bool) {
		// A module says the package is not the standard library's,
		// whatever its path.
		return false, pass.Module != nil && pass.Module.Path != ""
	}) {
		return facts, nil
	}
	facts.s = newSummariser(pass.Pkg, pass.TypesInfo, pass.Files, facts.other)
	facts.s.fset = pass.Fset
	s := facts.s
	for _, f := range pass.Files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			fn, ok := pass.TypesInfo.Defs[fd.Name].(*types.Func)
			if !ok || !fn.Exported() {
				// Another package can only name an exported
				// function or method; the summaries of exported ones
				// include what the unexported ones do.
				continue
			}
			if sum := s.summary(fn); sum != nil {
				pass.ExportObjectFact(fn, &summaryFact{*sum})
			}
		}
	}
	return facts, nil
}

// Facts is the Analyzer's result, a Source: summaries of the package's
// own functions from its syntax, of the standard library from the table,
// and of other packages from their facts. Like a pass, it is used by one
// goroutine at a time.
type Facts struct {
	pass *analysis.Pass
	s    *summariser
}

func (f *Facts) Of(fn *types.Func) *Summary {
	if fn == nil || fn.Pkg() == nil {
		return nil
	}
	fn = fn.Origin()
	if recv := fn.Type().(*types.Signature).Recv(); recv != nil && types.IsInterface(recv.Type()) {
		return nil
	}
	if fn.Pkg() == f.pass.Pkg {
		if f.s == nil {
			return nil
		}
		return f.s.summary(fn)
	}
	return f.other(fn)
}

// other returns the summary of fn, a function of another package: from
// its fact, or else from the table.
func (f *Facts) other(fn *types.Func) *Summary {
	var fact summaryFact
	if f.pass.ImportObjectFact(fn, &fact) {
		return &fact.Summary
	}
	if inTable(fn.Pkg().Path(), nil) {
		return stdSummary(fn)
	}
	return nil
}

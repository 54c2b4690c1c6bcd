package seal

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/types"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/unflake/unflake/internal/match"
)

// envFuncs are the functions that read one variable, named by their first
// argument.
var envFuncs = map[string]bool{
	"os.Getenv":      true,
	"os.LookupEnv":   true,
	"syscall.Getenv": true,
}

// funcKey names a function or method across packages and loads:
// "os.Getenv", "(*example.com/m/config.Loader).Get".
func funcKey(fn *types.Func) string { return fn.Origin().FullName() }

// readers maps a function that reads the variable named by one of its
// parameters to that parameter's index: the env functions, and module
// wrappers that pass a parameter straight to a reader.
type readers map[string]int

func (r readers) index(info *types.Info, call *ast.CallExpr) (*types.Func, int, bool) {
	fn := match.Callee(info, call)
	if fn == nil {
		return nil, 0, false
	}
	if envFuncs[funcKey(fn)] {
		return fn, 0, true
	}
	i, ok := r[funcKey(fn)]
	return fn, i, ok
}

// passThrough reports whether arg is the parameter the enclosing wrapper
// passes through, that is, the wrapper's own read.
func (r readers) passThrough(info *types.Info, fd *ast.FuncDecl, arg ast.Expr) bool {
	if fd == nil {
		return false
	}
	obj, _ := info.Defs[fd.Name].(*types.Func)
	if obj == nil {
		return false
	}
	i, ok := r[funcKey(obj)]
	return ok && paramIndex(info, fd, arg) == i
}

// paramIndex returns the index of the parameter of fd that arg names, or -1.
func paramIndex(info *types.Info, fd *ast.FuncDecl, arg ast.Expr) int {
	id, ok := ast.Unparen(arg).(*ast.Ident)
	if !ok {
		return -1
	}
	v := info.Uses[id]
	if v == nil {
		return -1
	}
	sig := info.Defs[fd.Name].(*types.Func).Type().(*types.Signature)
	for i := range sig.Params().Len() {
		if sig.Params().At(i) == v {
			return i
		}
	}
	return -1
}

// findWrappers adds to r every function of pkgs that passes one of its
// parameters straight to a reader, until no more are found (a wrapper of
// a wrapper is a wrapper).
func findWrappers(pkgs []*packages.Package, r readers) {
	for changed := true; changed; {
		changed = false
		for _, p := range pkgs {
			for _, f := range p.Syntax {
				for _, d := range f.Decls {
					fd, ok := d.(*ast.FuncDecl)
					if !ok || fd.Body == nil {
						continue
					}
					obj, _ := p.TypesInfo.Defs[fd.Name].(*types.Func)
					if obj == nil {
						continue
					}
					if _, done := r[funcKey(obj)]; done {
						continue
					}
					ast.Inspect(fd.Body, func(n ast.Node) bool {
						call, ok := n.(*ast.CallExpr)
						if !ok {
							return true
						}
						if _, i, ok := r.index(p.TypesInfo, call); ok && i < len(call.Args) {
							if pi := paramIndex(p.TypesInfo, fd, call.Args[i]); pi >= 0 {
								r[funcKey(obj)] = pi
								changed = true
								return false
							}
						}
						return true
					})
				}
			}
		}
	}
}

// findReads returns the variables each package's code reads by a constant
// name, and the reads it cannot name.
func findReads(pkgs []*packages.Package) (map[string]map[string]bool, []Unseen) {
	r := readers{}
	findWrappers(pkgs, r)
	reads := map[string]map[string]bool{}
	var unseen []Unseen
	for _, p := range pkgs {
		info := p.TypesInfo
		set := map[string]bool{}
		reads[p.PkgPath] = set
		report := func(n ast.Node, format string, args ...any) {
			unseen = append(unseen, Unseen{Pos: p.Fset.Position(n.Pos()), Why: fmt.Sprintf(format, args...)})
		}
		for _, f := range p.Syntax {
			var fd *ast.FuncDecl // the enclosing declaration
			called := map[ast.Expr]bool{}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncDecl:
					fd = n
				case *ast.CallExpr:
					called[ast.Unparen(n.Fun)] = true
					if fn, i, ok := r.index(info, n); ok {
						if i >= len(n.Args) {
							return true
						}
						arg := n.Args[i]
						if tv := info.Types[arg]; tv.Value != nil && tv.Value.Kind() == constant.String {
							set[constant.StringVal(tv.Value)] = true
						} else if !r.passThrough(info, fd, arg) {
							report(arg, "%s called with a name that is not a constant", name(fn))
						}
						return true
					}
					fn := match.Callee(info, n)
					if fn == nil || fn.Pkg() == nil {
						return true
					}
					switch key := funcKey(fn); {
					case key == "os.Environ" || key == "syscall.Environ":
						report(n, "%s reads the whole environment", name(fn))
					case key == "os.ExpandEnv":
						report(n, "os.ExpandEnv reads the variables its argument names")
					case key == "os.Expand" && len(n.Args) == 2 && isReader(info, n.Args[1]):
						called[ast.Unparen(n.Args[1])] = true
						report(n, "os.Expand with %s reads the variables its argument names", name(match.FuncOf(info, n.Args[1])))
					default:
						if why := library(fn); why != "" {
							report(n, "%s", why)
						}
					}
				case *ast.Ident, *ast.SelectorExpr:
					e := n.(ast.Expr)
					if called[e] {
						return false
					}
					if fn := match.FuncOf(info, e); fn != nil && envFuncs[funcKey(fn)] {
						report(e, "%s used as a function value", name(fn))
						return false
					}
				}
				return true
			})
		}
	}
	sort.SliceStable(unseen, func(i, j int) bool {
		a, b := unseen[i].Pos, unseen[j].Pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return reads, unseen
}

func isReader(info *types.Info, e ast.Expr) bool {
	fn := match.FuncOf(info, e)
	return fn != nil && envFuncs[funcKey(fn)]
}

// name is how a message names fn: "os.Getenv", "config.Env".
func name(fn *types.Func) string {
	if fn.Pkg() == nil {
		return fn.Name()
	}
	if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil {
		t := sig.Recv().Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		if n, ok := t.(*types.Named); ok {
			return fn.Pkg().Name() + "." + n.Obj().Name() + "." + fn.Name()
		}
	}
	return fn.Pkg().Name() + "." + fn.Name()
}

// library recognises calls into libraries that bind the environment by
// prefix or by struct tags, and says why the seal cannot see them.
func library(fn *types.Func) string {
	path := fn.Pkg().Path()
	last := path[strings.LastIndex(path, "/")+1:]
	switch {
	case last == "envconfig":
		return fmt.Sprintf("%s binds variables named by a prefix and struct fields", name(fn))
	case strings.Contains(path, "caarlos0/env") && strings.HasPrefix(fn.Name(), "Parse"):
		return fmt.Sprintf("%s binds variables named by struct tags", name(fn))
	case strings.HasSuffix(path, "spf13/viper"):
		switch fn.Name() {
		case "AutomaticEnv", "BindEnv", "SetEnvPrefix", "AllowEmptyEnv":
			return fmt.Sprintf("%s reads variables named at run time", name(fn))
		}
	}
	return ""
}

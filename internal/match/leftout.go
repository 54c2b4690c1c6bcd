package match

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A LeftOutFile is a Go file of a package's directory that the typed
// build leaves out: another build (a tag, an OS), or the external test
// package. File is nil when it does not parse, with Err saying why.
type LeftOutFile struct {
	Path string
	File *ast.File
	Err  error
}

// LeftOutFiles parses, into fset, the Go files of the directory of the
// typed build's files that the build leaves out, in directory order. It
// returns nil, nil for a package with no directory of its own (a
// driver's made-up files, which are not all on disk), and the error of
// a directory it cannot read.
func LeftOutFiles(fset *token.FileSet, built *token.FileSet, files []*ast.File) ([]LeftOutFile, error) {
	if len(files) == 0 {
		return nil, nil
	}
	typed := map[string]bool{}
	for _, f := range files {
		typed[built.File(f.Pos()).Name()] = true
	}
	dir := filepath.Dir(built.File(files[0].Pos()).Name())
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	onDisk := map[string]bool{}
	for _, e := range entries {
		onDisk[filepath.Join(dir, e.Name())] = true
	}
	for name := range typed {
		if !onDisk[name] {
			return nil, nil
		}
	}
	var out []LeftOutFile
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if e.IsDir() || filepath.Ext(path) != ".go" || typed[path] {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			f = nil
		}
		out = append(out, LeftOutFile{Path: path, File: f, Err: err})
	}
	return out, nil
}

// ImportNames maps the name each import of f is known by in the file
// (its explicit name, or the last element of its path) to its path.
func ImportNames(f *ast.File) map[string]string {
	names := map[string]string{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := path[strings.LastIndexByte(path, '/')+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = path
	}
	return names
}

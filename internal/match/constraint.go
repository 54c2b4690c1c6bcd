package match

import (
	"fmt"
	"go/build"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

// BuildConstraint says why not every build of its package compiles the
// Go file at path, or returns "": a //go:build (or // +build) line, a
// GOOS or GOARCH suffix of its name (_linux.go, _arm64_test.go), or cgo
// (import "C"), which a build with CGO_ENABLED=0 leaves out. The typed
// analysis reads one build; a file of another (go test -race, another
// GOOS, a tag) may declare the same names differently, or not at all.
// A file that cannot be read or parsed is reported too.
func BuildConstraint(path string) string {
	base := filepath.Base(path)
	if !inEveryOSArch(base) {
		return fmt.Sprintf("its name ends in %s, which selects an operating system or architecture", osArchSuffix(base))
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly|parser.ParseComments)
	if err != nil {
		return fmt.Sprintf("it does not parse (%v)", err)
	}
	for _, g := range f.Comments {
		if g.Pos() >= f.Package {
			break // constraints are read only above the package clause
		}
		for _, c := range g.List {
			if constraint.IsGoBuild(c.Text) || constraint.IsPlusBuild(c.Text) {
				return strings.TrimSpace(c.Text)
			}
		}
	}
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "C" {
			return `it uses cgo (import "C"), which a build with CGO_ENABLED=0 leaves out`
		}
	}
	return ""
}

// inEveryOSArch reports whether the go command selects the file named
// name for every GOOS and GOARCH. go/build's list of known systems is
// not exported, so the name is matched under two targets that differ in
// both: a suffix naming any system or architecture fails one of them.
func inEveryOSArch(name string) bool {
	for _, t := range [][2]string{{"linux", "amd64"}, {"windows", "arm64"}} {
		ctx := build.Context{
			GOOS: t[0], GOARCH: t[1], Compiler: "gc", CgoEnabled: true,
			// Only the name is judged here: the file is read as an
			// empty package clause.
			OpenFile: func(string) (io.ReadCloser, error) {
				return io.NopCloser(strings.NewReader("package p\n")), nil
			},
		}
		if ok, err := ctx.MatchFile(".", name); err != nil || !ok {
			return false
		}
	}
	return true
}

// osArchSuffix returns the GOOS or GOARCH suffix of name, which
// inEveryOSArch rejects: "_linux", "_arm64" or "_linux_arm64".
func osArchSuffix(name string) string {
	stem := strings.TrimSuffix(strings.TrimSuffix(name, ".go"), "_test")
	parts := strings.Split(stem, "_")
	suffix := "_" + parts[len(parts)-1]
	if len(parts) > 2 && !inEveryOSArch(strings.Join(parts[:len(parts)-1], "_")+".go") {
		suffix = "_" + strings.Join(parts[len(parts)-2:], "_")
	}
	return suffix
}

package readiness

import (
	"fmt"
	"go/ast"
	"go/token"
	"strings"
)

// The unseen clock. The init and age hazards read the child's code from
// its syntax and look for the time reads they list. Code whose syntax
// they do not hold may read the clock as well, and a read they cannot see
// must not count as "reads no time": the monotonic clock pulled from the
// runtime with //go:linkname (nanotime, as monotime packages do), a
// function written in assembly (a vDSO call), a C function (cgo), a raw
// system call (syscall.Syscall of SYS_CLOCK_GETTIME), a variable of
// another package linked by name (the runtime's start time), a plugin.
// The sleep set how old the child is when the signal comes; such a read
// acts on that age as time.Now does. So the walkers count them as time
// reads, naming what they cannot see into and its line. Conservative:
// most such code reads no time, and the site is then not fixed.

// timeReadAt says how x.name, a function of the standard library (or
// of C), path its import path, used at line (where: "", or ", in Stop")
// reads a time the system or the runtime keeps (sure), or runs code the
// rule cannot read, which may (not sure); or "". It is the one
// definition of a time read the age and init walkers share; the time
// package's functions that start a timer are the init hazard's own
// (timeStarts).
func timeReadAt(x, path, name, line, where string) (what string, sure bool) {
	switch {
	case clockFuncs[path][name]:
		return fmt.Sprintf("%s.%s at %s%s", x, name, line, where), true
	case path == "C" || unseenFuncs[path][name]:
		return fmt.Sprintf("%s.%s at %s%s, which runs code the rule cannot read", x, name, line, where), false
	}
	return "", false
}

// unseenFuncs are the standard functions that run code the rule cannot
// read: a system call given by its number, a plugin's code.
var unseenFuncs = map[string]map[string]bool{
	"syscall":               {"Syscall": true, "Syscall6": true, "Syscall9": true, "RawSyscall": true, "RawSyscall6": true, "SyscallN": true},
	"golang.org/x/sys/unix": {"Syscall": true, "Syscall6": true, "RawSyscall": true, "RawSyscall6": true, "SyscallNoError": true, "RawSyscallNoError": true},
	"plugin":                {"Open": true},
}

// unseenNames returns, by name (a method as ".M", as syntaxPkg.funcs
// keys them), the package's functions declared without a body (written
// in assembly, or pulled from another package by //go:linkname) and its
// variables a //go:linkname directive links to another package's
// symbol, each with what it is, for the reasons.
func unseenNames(files []*ast.File) map[string]string {
	links := map[string]string{}
	for _, f := range files {
		for _, g := range f.Comments {
			for _, c := range g.List {
				if rest, ok := strings.CutPrefix(c.Text, "//go:linkname "); ok {
					if fs := strings.Fields(rest); len(fs) == 2 {
						links[fs[0]] = fs[1]
					}
				}
			}
		}
	}
	out := map[string]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Body != nil {
					continue
				}
				key := d.Name.Name
				if d.Recv != nil {
					key = "." + key
				}
				if to := links[d.Name.Name]; to != "" {
					out[key] = "a function without a Go body, linked by //go:linkname to " + to
				} else {
					out[key] = "a function without a Go body (assembly)"
				}
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, sp := range d.Specs {
					for _, id := range sp.(*ast.ValueSpec).Names {
						if to := links[id.Name]; to != "" {
							out[id.Name] = "a variable linked by //go:linkname to " + to
						}
					}
				}
			}
		}
	}
	return out
}

// unseenAt says how the use of key (a name of the package, a method as
// ".M") at line, where ("", or ", in Stop") says where it runs, may read
// the time without the rule seeing it, or "".
func (p *syntaxPkg) unseenAt(key, line, where string) string {
	what := p.unseen[key]
	if what == "" {
		return ""
	}
	return fmt.Sprintf("%s at %s%s, %s, which the rule cannot read", strings.TrimPrefix(key, "."), line, where, what)
}

package leak

import (
	"fmt"
	"go/ast"
	"go/types"
	"path/filepath"
	"sort"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/internal/modsrc"
	"github.com/unflake/unflake/rule/effect"
)

// A file the test opened is a standard value, but closing it is not
// harmless when the code under test holds a file lock. POSIX record locks
// (fcntl F_SETLK, F_SETLKW) belong to the process and the file: closing
// ANY descriptor of the file drops every one the process holds on it, so
// a t.Cleanup(f.Close) of the test's own read handle on app.lock ends the
// lock the code under test took on another descriptor, and a second
// instance starts where the original saw it refused (correct code fails).
// flock and LockFileEx locks belong to the open file, but a library may
// take either (gofrs/flock, bbolt, leveldb and sqlite pick per system),
// and which file the test's handle names the analysis cannot tell. So a
// file is not ended when any code the tests may run takes a file lock:
// every build of the package and of the module's packages it reaches
// (read from their syntax), a dependency known to lock files, or a callee
// whose effect summary makes a lock's system call. Running the tests
// shows the break only when the later check happens to look, so the
// site is not fixed.

// lockFuncs are the names, in the system call packages, of the calls and
// constants that take a file lock.
var lockFuncs = map[string]bool{
	"Flock": true, "FcntlFlock": true, "LockFileEx": true, "LockFile": true,
	"F_SETLK": true, "F_SETLKW": true, "F_SETLK64": true, "F_SETLKW64": true,
	"F_OFD_SETLK": true, "F_OFD_SETLKW": true, "SYS_FLOCK": true, "LOCK_EX": true, "LOCK_SH": true,
}

// pipeFuncs are the names, in the system call packages, of the calls
// that make a named pipe (a FIFO): the close of one end is an event the
// other end's holder sees, like a lock's release.
var pipeFuncs = map[string]bool{"Mkfifo": true, "Mkfifoat": true, "Mknod": true, "Mknodat": true}

// syscallPkgs are the packages whose lockFuncs take a file lock.
var syscallPkgs = map[string]bool{"syscall": true, "golang.org/x/sys/unix": true, "golang.org/x/sys/windows": true}

// lockPkgs are dependencies known to take file locks: lock libraries and
// stores that lock their files (a prefix matches its subpackages).
var lockPkgs = []string{
	"github.com/gofrs/flock", "github.com/theckman/go-flock", "github.com/juju/fslock",
	"github.com/nightlyone/lockfile", "github.com/rogpeppe/go-internal/lockedfile",
	"github.com/alexflint/go-filemutex", "github.com/danjacques/gofslock",
	"go.etcd.io/bbolt", "github.com/boltdb/bolt", "github.com/syndtr/goleveldb",
	"github.com/dgraph-io/badger", "github.com/cockroachdb/pebble",
	"github.com/mattn/go-sqlite3", "modernc.org/sqlite", "github.com/glebarez/go-sqlite",
}

// fileLockChecked is the Checked entry of a fix that closes a file.
const fileLockChecked = "no code the tests may run takes a file lock (fcntl, flock, LockFileEx; every build of the package and of the module's packages it reaches, its dependencies, the callees' summaries), which closing any descriptor of the locked file could drop"

// fileLocked says why closing s, a file, may drop a lock of the code under
// test; or "".
func (c *checker) fileLocked(s *site) string {
	if !match.IsNamed(s.v.Type(), "os", "File") {
		return ""
	}
	at := c.lockTaken()
	if at == "" {
		return ""
	}
	return fmt.Sprintf("%s is a file, and the code under test takes a file lock (%s): closing any descriptor of a file drops the process's POSIX record locks on it (fcntl F_SETLK), so a cleanup that closes the test's own handle may end the lock the code holds on another one, and a check that it is held fails on correct code; close it by hand where the test no longer needs the lock, or open it where the lock is not taken", s.v.Name(), at)
}

// lockTaken returns where code the tests may run takes a file lock, or
// "" (once per package).
func (c *checker) lockTaken() string {
	if c.locks != nil {
		return *c.locks
	}
	at := c.findLock()
	c.locks = &at
	return at
}

func (c *checker) findLock() string {
	m := c.moduleSrc()
	for _, p := range m.Packages {
		for _, f := range p.Files {
			if f.Syntax == nil {
				return fmt.Sprintf("%s may, as it does not parse: %v", m.Rel(f.Path), f.Err)
			}
			if at := lockIn(m, f); at != "" {
				return at
			}
		}
	}
	if m.Broken != "" {
		return "the rule cannot read " + m.Broken + ", which may"
	}
	// Dependencies: a lock library among the imports, all the way down.
	seen := map[*types.Package]bool{}
	var walk func(p *types.Package) string
	walk = func(p *types.Package) string {
		if seen[p] {
			return ""
		}
		seen[p] = true
		for _, l := range lockPkgs {
			if p.Path() == l || strings.HasPrefix(p.Path(), l+"/") {
				return "through " + p.Path() + ", which locks files"
			}
		}
		for _, q := range p.Imports() {
			if at := walk(q); at != "" {
				return at
			}
		}
		return ""
	}
	if at := walk(c.pass.Pkg); at != "" {
		return at
	}
	// Callees of other modules: a summary's system call that locks.
	var names []string
	for id, obj := range c.info.Uses {
		fn, ok := obj.(*types.Func)
		if !ok || fn.Pkg() == nil || fn.Pkg() == c.pass.Pkg || match.IsStd(fn.Pkg().Path()) {
			continue
		}
		if sum := c.pass.Effects.Of(fn); sum != nil {
			for _, e := range sum.Effects {
				if e.Kind == effect.Syscall && locksVia(e.Via) {
					names = append(names, fmt.Sprintf("%s, at %s", e.Why(), c.pass.Fset.Position(id.Pos())))
				}
			}
		}
	}
	if len(names) > 0 {
		sort.Strings(names)
		return "through " + names[0]
	}
	return ""
}

// locksVia reports whether a call chain ends in a lock's system call.
func locksVia(via []string) bool {
	if len(via) == 0 {
		return false
	}
	last := via[len(via)-1]
	return lockFuncs[last[strings.LastIndexByte(last, '.')+1:]]
}

// lockIn returns where f names a lock call or constant of a system call
// package, or "".
func lockIn(m *modsrc.Module, f *modsrc.File) string {
	for _, imp := range f.Syntax.Imports {
		if imp.Path.Value == `"C"` {
			// C code may lock (lockf, flock, fcntl) where no Go
			// name shows it (red team batch 28, lockfread).
			return "cgo at " + m.Where(imp.Pos()) + ", whose C code may lock a file (lockf, flock, fcntl)"
		}
	}
	at := ""
	ast.Inspect(f.Syntax, func(n ast.Node) bool {
		if at != "" {
			return false
		}
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && syscallPkgs[f.Imports[x.Name]] && lockFuncs[sel.Sel.Name] {
			at = fmt.Sprintf("%s.%s at %s", filepath.Base(f.Imports[x.Name]), sel.Sel.Name, m.Where(sel.Pos()))
		}
		if x, ok := sel.X.(*ast.Ident); ok && syscallPkgs[f.Imports[x.Name]] && pipeFuncs[sel.Sel.Name] {
			// A named pipe's other end sees the close of this one: a
			// writer's next write fails once the last reader is gone.
			at = fmt.Sprintf("%s.%s at %s, which makes a named pipe whose other end sees the close", filepath.Base(f.Imports[x.Name]), sel.Sel.Name, m.Where(sel.Pos()))
		}
		return true
	})
	return at
}

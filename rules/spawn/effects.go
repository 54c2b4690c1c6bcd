package spawn

import (
	"fmt"
	"go/ast"
	"go/types"
	"slices"
	"strings"

	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// Independence is shown, not inferred from the absence of a shared
// literal: a pid file named filepath.Join(wd, base(os.Args[0])+hash)
// holds no string two children have in common, yet both children build
// the same path and race for it (O_EXCL). When the child is the test
// binary its code is readable (the tests -test.run selects, TestMain,
// init and the package functions they call), so any write to the file
// system, network listen or dial, or environment write there is taken as
// shared between the children. Telling a path derived from a per-child
// argument apart from a shared one is not attempted: such children stay
// one after another.

// fsWrites are the os functions that write, create or remove a file or
// directory.
var fsWrites = []string{"Create", "OpenFile", "WriteFile", "Mkdir", "MkdirAll", "MkdirTemp", "CreateTemp", "Remove", "RemoveAll", "Rename", "Symlink", "Link", "Chmod", "Chtimes", "Truncate", "Lchown", "Chown"}

// netCalls are the functions that listen on or dial an address.
var netCalls = map[string][]string{
	"net":               {"Listen", "ListenTCP", "ListenUDP", "ListenUnix", "ListenUnixgram", "ListenPacket", "ListenIP", "ListenMulticastUDP", "Dial", "DialTimeout", "DialTCP", "DialUDP", "DialUnix", "DialIP"},
	"net/http":          {"Get", "Post", "Head", "PostForm", "ListenAndServe", "ListenAndServeTLS", "Serve"},
	"net/http/httptest": {"NewServer", "NewTLSServer", "NewUnstartedServer"},
}

// childEffect says where the code a test-binary child runs writes a file,
// listens or dials, or writes the environment, or "".
func (c *checker) childEffect(u *unit) string {
	const flake = "running them together may flake where a few runs pass"
	var why string
	for _, fd := range c.childCode(u) {
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || why != "" {
				return why == ""
			}
			switch {
			case match.IsPkgFunc(c.info, call, "os", fsWrites...):
				why = fmt.Sprintf("the children's code writes the file system (os.%s at %s) at a path the rule cannot show differs per child: two children may race for it (a pid file, a lock, a cache), and %s", match.Callee(c.info, call).Name(), c.line(call), flake)
			case match.IsPkgFunc(c.info, call, "os", "Setenv", "Unsetenv", "Clearenv"):
				why = fmt.Sprintf("the children's code writes the environment (os.%s at %s), which may name what they share, and %s", match.Callee(c.info, call).Name(), c.line(call), flake)
			case match.IsPkgFunc(c.info, call, "io/ioutil", "WriteFile", "TempFile", "TempDir"):
				why = fmt.Sprintf("the children's code writes the file system (ioutil.%s at %s) at a path the rule cannot show differs per child: two children may race for it (a pid file, a lock, a cache), and %s", match.Callee(c.info, call).Name(), c.line(call), flake)
			case c.isNetCall(call):
				why = fmt.Sprintf("the children's code listens or dials (%s at %s): they may reach the same server or bind the same address, which sees them in the order they come, and %s", match.Callee(c.info, call).Name(), c.line(call), flake)
			case c.buildWriteCall(call) != "":
				why = fmt.Sprintf("the children's code %s (%s at %s), which may keep state at a place the rule cannot show is the child's own: two children may race for it (a pid file, a lock, a cache), and %s", c.buildWriteCall(call), match.PkgFuncName(match.Callee(c.info, call)), c.line(call), flake)
			default:
				why = c.lockCall(call)
			}
			return why == ""
		})
		if why != "" {
			return why
		}
	}
	return ""
}

// buildWriteCall says what call does when it is one of the standard
// library's functions the builds the analysis does not type are judged
// by (buildWrites: a program run, a copy of a tree, a root opened for
// writing, a syslog), beyond the os writes and the net calls above, or "":
// the typed code and the other builds are held to one list.
func (c *checker) buildWriteCall(call *ast.CallExpr) string {
	fn := match.Callee(c.info, call)
	if fn == nil || fn.Pkg() == nil {
		return ""
	}
	if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil {
		return "" // a method: what made its receiver is judged
	}
	path, name := fn.Pkg().Path(), fn.Name()
	if slices.Contains(buildWrites[path], name) {
		return buildWriteWhat(path, name)
	}
	return ""
}

func (c *checker) isNetCall(call *ast.CallExpr) bool {
	for pkg, names := range netCalls {
		if match.IsPkgFunc(c.info, call, pkg, names...) {
			return true
		}
	}
	return match.IsMethod(c.info, call, "net/http", "Do", "Get", "Post", "Head", "PostForm") ||
		match.IsMethod(c.info, call, "net", "Dial", "DialContext", "Listen", "ListenPacket")
}

// lockCall says where call takes a lock or an exclusive hold that other
// processes see, or makes a system call that may: a non-blocking flock on
// a file every child opens (the program's own executable, as flock -n
// "$0" does; a path in a shared directory), an fcntl lock, a lock file of
// a library, or code of another package that does so. Children that take
// it cannot overlap: run together, one exits "already running" now and
// then, which a few runs miss.
func (c *checker) lockCall(call *ast.CallExpr) string {
	const overlap = "so the children cannot overlap: run together, one may find it held (\"already running\") now and then, where a few runs pass"
	fn := match.Callee(c.info, call)
	if fn == nil || fn.Pkg() == nil {
		return ""
	}
	fn = fn.Origin()
	path, name := fn.Pkg().Path(), fn.Name()
	if what := sysCallWhat(effects.Key(fn), name); what != "" {
		return fmt.Sprintf("the children's code %s (%s at %s) that other processes see, on a file or path the rule cannot show differs per child, %s", what, match.PkgFuncName(fn), c.line(call), overlap)
	}
	if match.IsStd(path) || fn.Pkg() == c.pass.Pkg {
		return "" // the package's own functions are childCode's
	}
	if isLockName(name) || isLockName(lastElem(path)) {
		return fmt.Sprintf("the children's code calls %s (%s), a lock or pid file that other processes see, %s", match.PkgFuncName(fn), c.line(call), overlap)
	}
	if s := c.pass.Effects.Of(fn); s != nil {
		for _, e := range s.Effects {
			switch e.Kind {
			case effect.Syscall, effect.Network, effect.Process, effect.WritesEnv, effect.WritesWd:
				return fmt.Sprintf("the children's code calls %s (%s), a lock, a listener or a state other processes see, %s", e.Why(), c.line(call), overlap)
			}
		}
	}
	return ""
}

// sysCallWhat judges a call of a system call package, syscall or
// golang.org/x/sys/...: key names the function ("syscall.Syscall",
// "golang.org/x/sys/unix.Flock", "syscall.Errno.Error") and name is its
// last element. It says "takes a lock" or "makes a system call" for one
// other processes may see (a lock, a System V message queue or shared
// memory, a signal, a file), and "" for a call that only reads or acts on
// what the process owns, or for any other package. It is the one
// judgement of system calls: the typed children's code (lockCall) and
// the syntax of the builds the analysis does not type and of the module's
// packages (sharedPlaceIn) are held to it, so a raw
// syscall.Syscall(SYS_MSGGET, ...) in a buggy build counts as it would in
// the typed one.
func sysCallWhat(key, name string) string {
	path := key
	if i := strings.LastIndex(key, "."); i >= 0 {
		path = key[:i]
	}
	if i := strings.LastIndex(path, "."); i > strings.LastIndex(path, "/") {
		path = path[:i] // a method: "syscall.Errno.Error"
	}
	if path != "syscall" && !strings.HasPrefix(path, "golang.org/x/sys/") {
		return ""
	}
	if effects.StdReadKey(key) || sysReads[name] {
		return ""
	}
	if isLockName(name) {
		return "takes a lock"
	}
	return "makes a system call"
}

// sysReads are system calls that only read or act on what the process
// owns (its own descriptors' metadata, the clock).
var sysReads = map[string]bool{
	"Stat": true, "Lstat": true, "Fstat": true, "Getrusage": true, "Gettimeofday": true,
	"Getrlimit": true, "Uname": true, "Read": true, "Pread": true, "Close": true,
	"Getdents": true, "ReadDirent": true, "Readlink": true, "ClockGettime": true,
	"Nanosleep": true, "Getpgid": true, "Getpgrp": true, "Gettid": true,
	"Signal": true, "Errno": true, "Error": true, "Timeout": true, "Temporary": true, "Is": true,
	"StringBytePtr": true, "BytePtrFromString": true, "ByteSliceFromString": true,
	"NsecToTimespec": true, "NsecToTimeval": true, "TimespecToNsec": true, "TimevalToNsec": true,
	"Nano": true, "Unix": true, "Sec": true, "Usec": true, "Nsec": true,
}

// isLockName reports whether a function or package name says it locks,
// word by word (Flock, FcntlFlock, LockFileEx, TryLock; the packages
// flock, lockfile, fslock, lockedfile, pidfile), not Clock nor Block.
func isLockName(name string) bool {
	for _, w := range words(name) {
		switch strings.ToLower(w) {
		case "lock", "locks", "locked", "locker", "unlock", "trylock", "flock", "lockf",
			"lockfile", "lockedfile", "fslock", "filelock", "flocker", "pidfile":
			return true
		}
	}
	return false
}

// words splits a Go name at its case changes and a path element at its
// dashes and dots: "FcntlFlock" is Fcntl, Flock; "RLock" is R, Lock.
func words(name string) []string {
	var out []string
	start := 0
	rs := []rune(name)
	for i := 1; i < len(rs); i++ {
		lowerBefore := rs[i-1] >= 'a' && rs[i-1] <= 'z' || rs[i-1] >= '0' && rs[i-1] <= '9'
		upper := rs[i] >= 'A' && rs[i] <= 'Z'
		acronymEnd := upper && rs[i-1] >= 'A' && rs[i-1] <= 'Z' && i+1 < len(rs) && rs[i+1] >= 'a' && rs[i+1] <= 'z'
		sep := rs[i] == '-' || rs[i] == '.' || rs[i] == '_'
		switch {
		case sep:
			out = append(out, string(rs[start:i]))
			start = i + 1
		case upper && lowerBefore || acronymEnd:
			out = append(out, string(rs[start:i]))
			start = i
		}
	}
	return append(out, string(rs[start:]))
}

// lastElem is the last element of an import path.
func lastElem(path string) string {
	return path[strings.LastIndex(path, "/")+1:]
}

// childUnseen says where the code a test-binary child runs calls a
// function of another package (the package under test of an external
// test package, a library), or "". Its system calls, listens and dials
// show in its effect summary (lockCall), but not the files it creates: an
// O_EXCL lock file, a mkdir lock, a cache. The fix is at most unproven.
func (c *checker) childUnseen(u *unit) string {
	var why string
	for _, fd := range c.childCode(u) {
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || why != "" {
				return why == ""
			}
			fn := match.Callee(c.info, call)
			if fn == nil || fn.Pkg() == nil || fn.Pkg() == c.pass.Pkg {
				return true
			}
			path := fn.Pkg().Path()
			if match.IsStd(path) || strings.HasPrefix(path, "golang.org/x/sys/") || match.IsAssertion(path, fn.Name()) {
				return true
			}
			why = fmt.Sprintf("the children's code calls %s (%s) of another package, whose file writes the analysis cannot see (a lock file, a pid file, a cache)", match.PkgFuncName(fn), c.line(call))
			return false
		})
		if why != "" {
			return why
		}
	}
	return ""
}

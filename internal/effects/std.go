package effects

import (
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// The standard library is not summarised from source: a table lists the
// functions and methods with an effect, and everything else in it counts
// as pure. golang.org/x/sys, a thin layer over system calls, is in the
// table too, so it is never loaded.

// A stdEffect is the effect of calling one standard library function.
type stdEffect struct {
	kind  Kind
	what  string
	loops bool   // the call does not return by itself (it serves)
	ends  string // for GoroutineEnds: the method of the result that ends it
	typ   string // ... and the result's type
	// blocks: the call blocks durably, as a synctest bubble counts it.
	blocks bool
}

const (
	network   = "uses the real network"
	process   = "runs or signals a process"
	syscalls  = "makes system calls"
	timer     = "starts a timer of the real clock"
	sleeps    = "sleeps on the real clock"
	writesEnv = "writes the process environment"
	writesWd  = "changes the working directory"
	signals   = "handles process signals"
)

// stdFuncs holds the standard library functions with an effect, by
// "import/path.Name" or "import/path.Type.Method".
var stdFuncs = map[string]stdEffect{
	"os.Setenv":             {kind: WritesEnv, what: writesEnv},
	"os.Unsetenv":           {kind: WritesEnv, what: writesEnv},
	"os.Clearenv":           {kind: WritesEnv, what: writesEnv},
	"os.Chdir":              {kind: WritesWd, what: writesWd},
	"os.File.Chdir":         {kind: WritesWd, what: writesWd},
	"os.StartProcess":       {kind: Process, what: process},
	"os.Process.Kill":       {kind: Process, what: process},
	"os.Process.Signal":     {kind: Process, what: process},
	"os.Process.Wait":       {kind: Process, what: process},
	"testing.common.Setenv": {kind: WritesEnv, what: writesEnv},
	"testing.T.Setenv":      {kind: WritesEnv, what: writesEnv},
	"testing.common.Chdir":  {kind: WritesWd, what: writesWd},
	"testing.T.Chdir":       {kind: WritesWd, what: writesWd},
	"syscall.Setenv":        {kind: WritesEnv, what: writesEnv},
	"syscall.Unsetenv":      {kind: WritesEnv, what: writesEnv},
	"syscall.Clearenv":      {kind: WritesEnv, what: writesEnv},
	"syscall.Chdir":         {kind: WritesWd, what: writesWd},
	"syscall.Fchdir":        {kind: WritesWd, what: writesWd},
	"syscall.Errno.Error":   {},

	"os/exec.Cmd.Run":            {kind: Process, what: process},
	"os/exec.Cmd.Start":          {kind: Process, what: process},
	"os/exec.Cmd.Output":         {kind: Process, what: process},
	"os/exec.Cmd.CombinedOutput": {kind: Process, what: process},
	"os/exec.Cmd.Wait":           {kind: Process, what: process},

	"time.Sleep":                   {kind: Timer, what: sleeps, blocks: true},
	"sync.WaitGroup.Wait":          {blocks: true},
	"sync.Cond.Wait":               {blocks: true},
	"time.After":                   {kind: Timer, what: timer},
	"time.Tick":                    {kind: Timer, what: "starts a ticker of the real clock that never stops"},
	"time.NewTimer":                {kind: Timer, what: timer},
	"time.NewTicker":               {kind: Timer, what: timer},
	"time.AfterFunc":               {kind: Timer, what: timer},
	"time.Timer.Reset":             {kind: Timer, what: timer},
	"time.Ticker.Reset":            {kind: Timer, what: timer},
	"context.WithTimeout":          {kind: Timer, what: timer},
	"context.WithDeadline":         {kind: Timer, what: timer},
	"context.WithTimeoutCause":     {kind: Timer, what: timer},
	"context.WithDeadlineCause":    {kind: Timer, what: timer},
	"log.SetOutput":                {kind: WritesGlobal, what: "writes the standard logger's settings"},
	"log.SetFlags":                 {kind: WritesGlobal, what: "writes the standard logger's settings"},
	"log.SetPrefix":                {kind: WritesGlobal, what: "writes the standard logger's settings"},
	"log/slog.SetDefault":          {kind: WritesGlobal, what: "writes the default logger"},
	"log/slog.SetLogLoggerLevel":   {kind: WritesGlobal, what: "writes the default logger"},
	"flag.Parse":                   {kind: WritesGlobal, what: "writes flag.CommandLine"},
	"flag.Set":                     {kind: WritesGlobal, what: "writes flag.CommandLine"},
	"math/rand.Seed":               {kind: WritesGlobal, what: "writes the global random source"},
	"runtime.GOMAXPROCS":           {kind: WritesGlobal, what: "writes the process's GOMAXPROCS"},
	"runtime/debug.SetGCPercent":   {kind: WritesGlobal, what: "writes the process's garbage collector settings"},
	"runtime/debug.SetMemoryLimit": {kind: WritesGlobal, what: "writes the process's garbage collector settings"},
	"runtime/debug.SetMaxThreads":  {kind: WritesGlobal, what: "writes the process's settings"},
	"expvar.Publish":               {kind: WritesGlobal, what: "publishes an expvar variable"},
	"net/http.Handle":              {kind: WritesGlobal, what: "registers on http.DefaultServeMux"},
	"net/http.HandleFunc":          {kind: WritesGlobal, what: "registers on http.DefaultServeMux"},
	"net/rpc.Register":             {kind: WritesGlobal, what: "registers on rpc.DefaultServer"},
	"net/rpc.RegisterName":         {kind: WritesGlobal, what: "registers on rpc.DefaultServer"},
	"net/rpc.HandleHTTP":           {kind: WritesGlobal, what: "registers on http.DefaultServeMux"},

	"net/http.ListenAndServe":           {kind: Network, what: network, loops: true},
	"net/http.ListenAndServeTLS":        {kind: Network, what: network, loops: true},
	"net/http.Serve":                    {loops: true}, // on a listener made elsewhere
	"net/http.ServeTLS":                 {loops: true}, // on a listener made elsewhere
	"net/http.Server.ListenAndServe":    {kind: Network, what: network, loops: true},
	"net/http.Server.ListenAndServeTLS": {kind: Network, what: network, loops: true},
	"net/http.Server.Serve":             {loops: true}, // on a listener made elsewhere
	"net/http.Server.ServeTLS":          {loops: true}, // on a listener made elsewhere
	"net/http.Get":                      {kind: Network, what: network},
	"net/http.Head":                     {kind: Network, what: network},
	"net/http.Post":                     {kind: Network, what: network},
	"net/http.PostForm":                 {kind: Network, what: network},
	"net/http.Client.Do":                {kind: Network, what: network},
	"net/http.Client.Get":               {kind: Network, what: network},
	"net/http.Client.Head":              {kind: Network, what: network},
	"net/http.Client.Post":              {kind: Network, what: network},
	"net/http.Client.PostForm":          {kind: Network, what: network},
	"net/http.Transport.RoundTrip":      {kind: Network, what: network},
	"net/http/httptest.NewServer": {kind: Network, what: "starts a real server on the loopback network, whose goroutines its Close ends",
		ends: "Close", typ: "net/http/httptest.Server"},
	"net/http/httptest.NewTLSServer": {kind: Network, what: "starts a real server on the loopback network, whose goroutines its Close ends",
		ends: "Close", typ: "net/http/httptest.Server"},
	"net/http/httptest.Server.Start":    {kind: Network, what: network},
	"net/http/httptest.Server.StartTLS": {kind: Network, what: network},
	"net/rpc.Dial":                      {kind: Network, what: network},
	"net/rpc.DialHTTP":                  {kind: Network, what: network},
	"net/rpc.DialHTTPPath":              {kind: Network, what: network},
	"net/rpc.Server.Accept":             {loops: true}, // on a listener made elsewhere
	"net/rpc.Accept":                    {loops: true}, // on a listener made elsewhere
	"net/smtp.Dial":                     {kind: Network, what: network},
	"net/smtp.SendMail":                 {kind: Network, what: network},
	"net/textproto.Dial":                {kind: Network, what: network},
	"crypto/tls.Dial":                   {kind: Network, what: network},
	"crypto/tls.DialWithDialer":         {kind: Network, what: network},
	"crypto/tls.Listen":                 {kind: Network, what: network},
	"crypto/tls.Dialer.Dial":            {kind: Network, what: network},
	"crypto/tls.Dialer.DialContext":     {kind: Network, what: network},
}

// stdFileWrites are the functions of the standard library that write the
// file system: create, write, rename or remove a file or directory, or
// change its metadata. os.OpenFile counts whatever its flags (they are
// not read), and so do an *os.File's writes, whoever opened it. They go
// to Summary.Files, not to Effects.
var stdFileWrites = map[string]bool{
	"os.Create": true, "os.CreateTemp": true, "os.OpenFile": true, "os.WriteFile": true,
	"os.Mkdir": true, "os.MkdirAll": true, "os.MkdirTemp": true, "os.Remove": true, "os.RemoveAll": true,
	"os.Rename": true, "os.Symlink": true, "os.Link": true, "os.Chmod": true, "os.Chown": true,
	"os.Lchown": true, "os.Chtimes": true, "os.Truncate": true, "os.CopyFS": true,
	"os.File.Write": true, "os.File.WriteString": true, "os.File.WriteAt": true, "os.File.ReadFrom": true,
	"os.File.Truncate": true, "os.File.Chmod": true, "os.File.Chown": true,
	"os.Root.Create": true, "os.Root.OpenFile": true, "os.Root.WriteFile": true, "os.Root.Mkdir": true,
	"os.Root.MkdirAll": true, "os.Root.Remove": true, "os.Root.RemoveAll": true, "os.Root.Rename": true,
	"os.Root.Symlink": true, "os.Root.Link": true, "os.Root.Chmod": true, "os.Root.Chown": true,
	"os.Root.Lchown": true, "os.Root.Chtimes": true,
	"io/ioutil.WriteFile": true, "io/ioutil.TempFile": true, "io/ioutil.TempDir": true,
}

// stdReads are the functions of the standard library that only read the
// process's state: its environment, working directory and ids, the
// files' contents and metadata, the runtime's counters. They have no
// effect (syscall's too, which are otherwise system calls), and a poll
// may repeat them: reading again changes nothing and waits on nothing.
// The clock (time.Now) is not among them: a poll on it never settles,
// and in a synctest bubble it is virtual.
var stdReads = map[string]bool{
	"os.Getenv": true, "os.LookupEnv": true, "os.Environ": true, "os.ExpandEnv": true, "os.Expand": true,
	"os.Getwd": true, "os.Hostname": true, "os.Executable": true, "os.TempDir": true,
	"os.UserHomeDir": true, "os.UserCacheDir": true, "os.UserConfigDir": true,
	"os.Getpid": true, "os.Getppid": true, "os.Getuid": true, "os.Geteuid": true,
	"os.Getgid": true, "os.Getegid": true, "os.Getgroups": true, "os.Getpagesize": true,
	"os.Stat": true, "os.Lstat": true, "os.ReadFile": true, "os.ReadDir": true, "os.Readlink": true,
	"os.SameFile": true, "os.IsExist": true, "os.IsNotExist": true, "os.IsPermission": true, "os.IsTimeout": true,
	"io/fs.Stat": true, "io/fs.ReadFile": true, "io/fs.ReadDir": true, "io/fs.ValidPath": true,
	"path/filepath.Abs": true, "path/filepath.EvalSymlinks": true, "path/filepath.Glob": true,
	"syscall.Getenv": true, "syscall.Environ": true, "syscall.Getwd": true,
	"syscall.Getpid": true, "syscall.Getppid": true, "syscall.Getuid": true, "syscall.Geteuid": true,
	"syscall.Getgid": true, "syscall.Getegid": true, "syscall.Getpagesize": true,
	"runtime.NumGoroutine": true, "runtime.NumCPU": true, "runtime.NumCgoCall": true,
	"runtime.GOROOT": true, "runtime.Version": true,
}

// StdRead reports whether fn, a function of the standard library, only
// reads the process's state (os.Getenv, os.LookupEnv, os.Getwd, os.Stat,
// runtime.NumGoroutine, ...): its summary is pure, and a poll may repeat
// it. Functions that only compute from their arguments (strings,
// strconv) are pure too, but are not listed here.
func StdRead(fn *types.Func) bool {
	if fn == nil || fn.Pkg() == nil || !inTable(fn.Pkg().Path(), nil) {
		return false
	}
	return stdReads[Key(fn)]
}

// StdReadKey is StdRead for the function Key names
// ("syscall.Getpid"), for callers that read syntax and have no
// *types.Func: the builds of a package the analysis does not type.
func StdReadKey(key string) bool {
	return stdReads[key]
}

// stdPkgs holds the packages all of whose functions and methods have one
// effect (unless stdFuncs lists them).
var stdPkgs = map[string]stdEffect{
	"syscall":                  {kind: Syscall, what: syscalls},
	"golang.org/x/sys/unix":    {kind: Syscall, what: syscalls},
	"golang.org/x/sys/windows": {kind: Syscall, what: syscalls},
	"os/signal":                {kind: Signal, what: signals},
}

// netTypes are the types of package net whose methods all use the
// network. The methods of a connection or listener (TCPConn.ReadFrom,
// TCPListener.Accept) are not among them: they act on one that a dial or
// listen made, which has the effect; code that only type-switches on
// *net.TCPConn does not use the network by itself.
var netTypes = map[string]bool{"Dialer": true, "ListenConfig": true, "Resolver": true}

// netPrefixes are the prefixes of package net's functions that use the
// network.
var netPrefixes = []string{"Dial", "Listen", "Lookup", "Resolve", "File", "Interface"}

// inTable reports whether the package with the given import path is
// summarised by the table rather than from source: the standard library
// (std says whether it is, when the driver knows; else the go command's
// rule for module paths decides) and golang.org/x/sys.
func inTable(path string, std func(string) (bool, bool)) bool {
	if _, ok := stdPkgs[path]; ok {
		return true
	}
	if std != nil {
		if is, known := std(path); known {
			return is
		}
	}
	return match.IsStd(path)
}

// stdSummary returns the summary of fn, a function of a package for which
// inTable is true.
func stdSummary(fn *types.Func) *Summary {
	if recv := fn.Type().(*types.Signature).Recv(); recv != nil && types.IsInterface(recv.Type()) {
		return nil // a call through an interface: unknown
	}
	e, ok := stdLookup(fn)
	name := match.PkgFuncName(fn)
	s := &Summary{Loops: e.loops, Blocks: e.blocks}
	if stdFileWrites[stdKey(fn)] {
		s.Files = &Effect{Kind: WritesFiles, Via: []string{name}, What: "writes the file system"}
	}
	if !ok || e.kind == "" {
		return s
	}
	s.Effects = append(s.Effects, Effect{Kind: e.kind, Via: []string{name}, What: e.what})
	if e.ends != "" {
		s.Effects = append(s.Effects, Effect{Kind: GoroutineEnds, Via: []string{name},
			What: "starts goroutines that its result's " + e.ends + " ends", Ends: e.ends, Type: e.typ})
	}
	return s
}

// stdKey returns the key of fn, a function of the standard library, in
// the tables: "import/path.Name" or "import/path.Type.Method".
func stdKey(fn *types.Func) string {
	path := strings.TrimPrefix(fn.Pkg().Path(), "vendor/")
	if recv := recvName(fn); recv != "" {
		return path + "." + recv + "." + fn.Name()
	}
	return path + "." + fn.Name()
}

func stdLookup(fn *types.Func) (stdEffect, bool) {
	path := strings.TrimPrefix(fn.Pkg().Path(), "vendor/")
	recv := recvName(fn)
	key := stdKey(fn)
	if e, ok := stdFuncs[key]; ok {
		return e, true
	}
	if stdReads[key] {
		return stdEffect{}, true
	}
	if e, ok := stdPkgs[path]; ok {
		return e, true
	}
	if path == "net" {
		if recv != "" && netTypes[recv] {
			return stdEffect{kind: Network, what: network}, true
		}
		if recv == "" {
			for _, p := range netPrefixes {
				if strings.HasPrefix(fn.Name(), p) {
					return stdEffect{kind: Network, what: network}, true
				}
			}
		}
	}
	return stdEffect{}, false
}

// recvName returns the name of the named type of fn's receiver, or "".
func recvName(fn *types.Func) string {
	recv := fn.Type().(*types.Signature).Recv()
	if recv == nil {
		return ""
	}
	if n := namedOf(recv.Type()); n != nil {
		return n.Obj().Name()
	}
	return ""
}

// namedOf returns the named type of t or *t, or nil.
func namedOf(t types.Type) *types.Named {
	t = types.Unalias(t)
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	n, _ := t.(*types.Named)
	if n != nil {
		n = n.Origin()
	}
	return n
}

// TypeKey names the named type t is, or points to, the way Effect.Type
// does ("import/path.Name"), or returns "" for any other type.
func TypeKey(t types.Type) string {
	n := namedOf(t)
	if n == nil || n.Obj().Pkg() == nil {
		return ""
	}
	return n.Obj().Pkg().Path() + "." + n.Obj().Name()
}

// Key names fn across type-checks of its package: "import/path.Name" or
// "import/path.Type.Method". Objects of the same function from export data
// and from source have the same key.
func Key(fn *types.Func) string {
	fn = fn.Origin()
	path := ""
	if fn.Pkg() != nil {
		path = fn.Pkg().Path()
	}
	if r := recvName(fn); r != "" {
		return path + "." + r + "." + fn.Name()
	}
	return path + "." + fn.Name()
}

// pureInterfaces are the standard library interfaces whose methods are
// pure in every implementation that matters: reflection, formatting,
// sorting, hashing and a context's accessors. io.Reader, net.Conn and
// the like are not: a call through them may use the network.
var pureInterfaces = map[string]bool{
	"reflect.Type": true, "fmt.Stringer": true, "fmt.GoStringer": true, "fmt.State": true,
	"fmt.Formatter": true, "sort.Interface": true, "hash.Hash": true, "hash.Hash32": true,
	"hash.Hash64": true, "context.Context": true, "go/ast.Node": true, "go/ast.Expr": true,
	"go/ast.Stmt": true, "go/ast.Decl": true, "go/types.Type": true, "go/types.Object": true,
}

// testingMethods are the methods of testing.TB that only report or
// describe the test. An interface that declares them (testing.TB itself,
// or a library's own interface{ Helper(); Errorf(string, ...any) }) is
// there to take a *testing.T.
var testingMethods = map[string]bool{
	"Helper": true, "Error": true, "Errorf": true, "Fatal": true, "Fatalf": true, "Fail": true,
	"FailNow": true, "Failed": true, "Log": true, "Logf": true, "Name": true, "Skip": true,
	"SkipNow": true, "Skipf": true, "Skipped": true, "TempDir": true, "Cleanup": true,
	"Context": true, "Output": true, "Attr": true,
}

// pureInterfaceMethod reports whether calling m, a method of the
// interface type recv, counts as pure.
func pureInterfaceMethod(m *types.Func, recv types.Type) bool {
	if n := namedOf(recv); n != nil && n.Obj().Pkg() != nil {
		if pureInterfaces[n.Obj().Pkg().Path()+"."+n.Obj().Name()] {
			return true
		}
	}
	return testingMethods[m.Name()]
}

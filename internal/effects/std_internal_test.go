package effects

import (
	"go/types"
	"testing"

	"github.com/unflake/unflake/internal/testmod"
)

// stdFunc returns the function or method name ("Getenv", "WaitGroup.Wait")
// of the standard package path, from its export data.
func stdFunc(t *testing.T, path, name string) *types.Func {
	t.Helper()
	pkg, err := testmod.Importer(t, path).Import(path)
	if err != nil {
		t.Fatal(err)
	}
	recv, method := "", name
	for i := range name {
		if name[i] == '.' {
			recv, method = name[:i], name[i+1:]
		}
	}
	if recv == "" {
		fn, ok := pkg.Scope().Lookup(name).(*types.Func)
		if !ok {
			t.Fatalf("%s.%s is not a function", path, name)
		}
		return fn
	}
	obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(pkg.Scope().Lookup(recv).Type()), true, pkg, method)
	fn, ok := obj.(*types.Func)
	if !ok {
		t.Fatalf("%s.%s is not a method", path, name)
	}
	return fn
}

// TestStdClassification checks the table's classes as the docs state
// them: the reads of os (and of syscall, which are otherwise system
// calls) are pure and a poll may repeat them; the clock is pure for a
// bubble but no read a poll settles on; the waits a bubble counts as
// durable block, a mutex does not.
func TestStdClassification(t *testing.T) {
	testmod.Short(t)
	for _, tc := range []struct {
		path, name string
		pure, read bool
		blocks     bool
		kind       Kind // of the one effect when not pure
	}{
		{path: "os", name: "Getenv", pure: true, read: true},
		{path: "os", name: "LookupEnv", pure: true, read: true},
		{path: "os", name: "Environ", pure: true, read: true},
		{path: "os", name: "Getwd", pure: true, read: true},
		{path: "os", name: "Hostname", pure: true, read: true},
		{path: "os", name: "ReadFile", pure: true, read: true},
		{path: "syscall", name: "Getenv", pure: true, read: true},
		{path: "syscall", name: "Getpid", pure: true, read: true},
		{path: "runtime", name: "NumGoroutine", pure: true, read: true},
		{path: "strings", name: "ToUpper", pure: true},
		{path: "time", name: "Now", pure: true},
		{path: "os", name: "Setenv", kind: WritesEnv},
		{path: "syscall", name: "Setenv", kind: WritesEnv},
		{path: "syscall", name: "Open", kind: Syscall},
		{path: "runtime", name: "GOMAXPROCS", kind: WritesGlobal},
		{path: "time", name: "Sleep", kind: Timer, blocks: true},
		{path: "sync", name: "WaitGroup.Wait", pure: true, blocks: true},
		{path: "sync", name: "Cond.Wait", pure: true, blocks: true},
		{path: "sync", name: "Mutex.Lock", pure: true},
		{path: "runtime", name: "Gosched", pure: true},
	} {
		fn := stdFunc(t, tc.path, tc.name)
		s := stdSummary(fn)
		if s == nil {
			t.Errorf("%s.%s: unknown", tc.path, tc.name)
			continue
		}
		if s.Pure() != tc.pure {
			t.Errorf("%s.%s: pure %v, want %v (%+v)", tc.path, tc.name, s.Pure(), tc.pure, s)
		}
		if !tc.pure && (len(s.Effects) != 1 || s.Effects[0].Kind != tc.kind) {
			t.Errorf("%s.%s: effects %+v, want one %s", tc.path, tc.name, s.Effects, tc.kind)
		}
		if s.Blocks != tc.blocks {
			t.Errorf("%s.%s: blocks %v, want %v", tc.path, tc.name, s.Blocks, tc.blocks)
		}
		if got := StdRead(fn); got != tc.read {
			t.Errorf("StdRead(%s.%s) = %v, want %v", tc.path, tc.name, got, tc.read)
		}
	}
}

// TestStdFileWrites checks that the standard library's writes of the file
// system go to Summary.Files and leave the summary pure (they are not
// among Effects), and that reads and a file's Close are not writes.
func TestStdFileWrites(t *testing.T) {
	testmod.Short(t)
	for _, tc := range []struct {
		path, name string
		writes     bool
	}{
		{path: "os", name: "WriteFile", writes: true},
		{path: "os", name: "OpenFile", writes: true},
		{path: "os", name: "RemoveAll", writes: true},
		{path: "os", name: "File.WriteString", writes: true},
		{path: "io/ioutil", name: "TempFile", writes: true},
		{path: "os", name: "ReadFile"},
		{path: "os", name: "Open"},
		{path: "os", name: "File.Close"},
	} {
		s := stdSummary(stdFunc(t, tc.path, tc.name))
		if s == nil || !s.Pure() {
			t.Errorf("%s.%s: summary %+v, want pure", tc.path, tc.name, s)
			continue
		}
		if got := s.Files != nil; got != tc.writes {
			t.Errorf("%s.%s: writes the file system %v, want %v", tc.path, tc.name, got, tc.writes)
		}
	}
}

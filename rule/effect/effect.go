// Package effect holds the vocabulary of effect summaries that rules read:
// what calling a function may do (start goroutines and whether they end,
// use the real network, processes, signals, syscalls or cgo, write the
// environment, the working directory or package-level variables, use
// package-level channels or timers), whether it may block or spin on the
// real clock, and which function parameters it runs inside a synctest
// bubble. Computing summaries is the engine's job (a Source hands them to
// a rule through rule.Pass.Effects); this package only names them, so a
// rule in another module can read them.
package effect

import "go/types"

// A Summary is what a call of one function may do, transitively.
// A nil *Summary means unknown: the analysis cannot see the function.
type Summary struct {
	// Effects holds the effects found, each with the call chain that
	// shows it (see Effect.Why).
	Effects []Effect

	// Opaque, when not empty, names a call the summary could not follow
	// (through an interface or a function value, or into code without a
	// summary): the function may have effects beyond Effects. It is a
	// phrase that completes "the test calls pkg.F, which ...": "calls
	// io.Writer.Write through an interface", "calls pkg.G, which calls
	// the function value f".
	Opaque string

	// Loops is true when a call may not return by itself: the function
	// runs a loop without a bound, serves a listener, or calls something
	// that may. A goroutine running it ends only if something ends it.
	Loops bool

	// Blocks is true when a call may block durably, as a synctest bubble
	// counts it: the function, on its own goroutine or in a function it
	// calls, operates on a channel, selects without a default, sleeps or
	// waits on a sync.WaitGroup or sync.Cond. (A mutex does not count.)
	// A call the summary could not follow does not set it.
	Blocks bool

	// Spin, when not nil, is a loop that waits for the real clock without
	// ever blocking (for time.Since(start) < d {}), in the function or in
	// one it calls or starts: in a synctest bubble, whose clock moves
	// only while every goroutine is blocked, it never ends. Its Kind is
	// Spins; What names the loop's file and line when known ("spins on
	// the real clock in a loop that never blocks (wait.go:12)"). It is
	// not among Effects, which it would change for every rule reading
	// them.
	Spin *Effect

	// Clock, when not nil, is a reading of the clock (time.Now,
	// time.Since, time.Until) in the function or in one it calls or
	// starts: code that may compare a reading with a deadline or a fixed
	// date, which a synctest bubble's clock (2000-01-01, standing still
	// between statements, a sleep ending exactly on its deadline) can
	// flip. Its Kind is ReadsClock; What names the call's file and line
	// when known ("reads the clock (cache.go:30)"). A call the summary
	// could not follow (Opaque) may read it too. It is not among Effects.
	Clock *Effect

	// Files, when not nil, is a write of the file system (creating,
	// writing, renaming or removing a file or directory: os.WriteFile,
	// os.OpenFile whatever its flags, an *os.File's Write) in the
	// function or in one it calls or starts: state outside the process,
	// which outlives it and is shared by whoever uses the same path. Its
	// Kind is WritesFiles; What names the call ("writes the file system
	// (os.OpenFile)"). A call the summary could not follow (Opaque) may
	// write too. It is not among Effects, which it would change for every
	// rule reading them.
	Files *Effect

	// Bubbles lists the parameters (by index, the receiver not counted)
	// of function type that the function runs inside a synctest bubble:
	// synctest.Test(t, f), a literal there that calls f, or f handed to
	// another function that does. Code passed there runs on the
	// bubble's virtual clock.
	Bubbles []int

	// RealClock, when not nil, is a read of package-level state that a
	// goroutine started by its package's initialisation keeps from the
	// real clock (a coarse clock: an atomic a ticker refreshes every
	// millisecond), in the function or in one it calls or starts. That
	// goroutine runs outside every synctest bubble: what it keeps moves
	// in real time, not with the bubble's virtual clock. Its Kind is
	// ReadsRealClock; What names the variable and the goroutine. It is
	// not among Effects.
	RealClock *Effect

	// RunsBubble is true when the function, or one it calls, calls
	// synctest.Test or synctest.Run: called inside a bubble, it panics
	// (bubbles do not nest).
	RunsBubble bool
}

// Pure reports whether s is known to have no effect at all.
func (s *Summary) Pure() bool {
	return s != nil && len(s.Effects) == 0 && s.Opaque == ""
}

// A Kind is one kind of effect.
type Kind string

const (
	// GoroutineEnds: starts goroutines that a lifecycle method of a value
	// the function returns, or of its receiver for a method, ends: the
	// goroutine waits on a channel field the method closes or sends on,
	// on a context field whose cancel function field (set together with
	// it) the method calls, or on a sync.Cond field the method signals
	// after writing a field the goroutine reads. The method may be
	// promoted from an embedded field.
	// Effect.Ends names the method, Effect.Type the value's type. A
	// goroutine that provably ends by itself (no loop without a bound,
	// no call that may not return) is no effect at all.
	GoroutineEnds Kind = "goroutine-ends"
	// GoroutineForever: starts goroutines that nothing shown ends.
	GoroutineForever Kind = "goroutine-forever"
	// Network: dials, listens or resolves names (net, net/http clients
	// and servers, httptest.NewServer, crypto/tls, net/rpc). A
	// connection's own methods are not: the dial that made it is.
	Network Kind = "network"
	// Process: runs or signals a process (os/exec, os.StartProcess).
	Process Kind = "process"
	// Signal: handles process signals (os/signal).
	Signal Kind = "signal"
	// Syscall: makes system calls (syscall, golang.org/x/sys).
	Syscall Kind = "syscall"
	// Cgo: calls C code.
	Cgo Kind = "cgo"
	// WritesEnv: os.Setenv, os.Unsetenv, os.Clearenv.
	WritesEnv Kind = "writes-env"
	// WritesWd: os.Chdir.
	WritesWd Kind = "writes-wd"
	// WritesGlobal: assigns, increments, takes the address of or calls a
	// pointer method on a package-level variable of any package (not a
	// mutex, once or pool), or changes a standard library setting
	// (log.SetOutput, flag.Parse, http.HandleFunc, slog.SetDefault).
	WritesGlobal Kind = "writes-global"
	// SharedSync: uses a package-level channel, timer, ticker, wait
	// group, condition variable or context (a value made outside any
	// synctest bubble). Effect.Type says which, for synctest's rules:
	// "chan", "time.Timer", "time.Ticker", "sync.WaitGroup" (held in the
	// variable), "*sync.WaitGroup" (pointed to), "sync.Cond",
	// "context.Context".
	SharedSync Kind = "shared-sync"
	// Timer: sleeps on, or starts, a timer or ticker of the real clock
	// (time.Sleep, time.After, time.NewTimer, context.WithTimeout).
	Timer Kind = "timer"
	// Spins: waits for the real clock in a loop that never blocks. Only
	// in Summary.Spin, never in Effects.
	Spins Kind = "spins"
	// ReadsClock: reads the clock (time.Now, time.Since, time.Until).
	// Only in Summary.Clock, never in Effects.
	ReadsClock Kind = "reads-clock"
	// ReadsRealClock: reads state a goroutine started at package
	// initialisation keeps from the real clock. Only in
	// Summary.RealClock, never in Effects.
	ReadsRealClock Kind = "reads-real-clock"
	// WritesFiles: writes the file system (os.WriteFile, os.OpenFile,
	// os.Remove, an *os.File's Write). Only in Summary.Files, never in
	// Effects.
	WritesFiles Kind = "writes-files"
)

// An Effect is one effect of a function, with how it comes about.
type Effect struct {
	Kind Kind
	// Via is the call chain from the function to the code with the
	// effect, outermost first ("metrics.StartReporter", "metrics.loop").
	Via []string
	// What says what the code does ("starts a goroutine that never
	// ends", "writes the package-level variable metrics.interval").
	What string
	// Ends is the lifecycle method that ends the goroutines, for
	// GoroutineEnds ("Close").
	Ends string
	// Type is the type whose method Ends is, as "import/path.Name", for
	// GoroutineEnds; the kind of shared value, for SharedSync.
	Type string
}

// Why says, for a reason in a finding, how calling the function has the
// effect: "metrics.StartReporter, which starts a goroutine that never ends".
func (e Effect) Why() string {
	s := ""
	for i, v := range e.Via {
		if i > 0 {
			s += " → "
		}
		s += v
	}
	if e.What != "" {
		s += ", which " + e.What
	}
	return s
}

// A Source gives the summary of a function: of another package than the
// one under analysis, and, for the Sources of a pass (Local, *Facts), of
// the package under analysis too. Standard library functions come from
// the table.
type Source interface {
	// Of returns fn's summary, or nil when unknown.
	Of(fn *types.Func) *Summary
}

// None is the Source that knows nothing: every function is unknown.
var None Source = none{}

type none struct{}

func (none) Of(*types.Func) *Summary { return nil }

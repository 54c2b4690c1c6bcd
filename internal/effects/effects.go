// Package effects summarises what calling a function may do: start
// goroutines (and whether they end), use the real network, processes,
// signals, syscalls or cgo, write the environment, the working directory
// or package-level variables, use package-level channels, timers, wait
// groups or contexts, or nothing of the kind.
//
// Summaries are computed bottom-up over the import graph. Under the go
// command (go vet -vettool, go fix -fixtool) they travel between packages
// as go/analysis facts (Analyzer); in unflake's own driver they are
// computed on demand, only for the functions a candidate test reaches
// (Source). Calls through interfaces and function values stay unknown.
package effects

import (
	"go/types"
	"reflect"

	"golang.org/x/tools/go/analysis"
)

// A Summary is what a call of one function may do, transitively.
// A nil *Summary means unknown: the analysis cannot see the function.
type Summary struct {
	// Effects holds the effects found, each with the call chain that
	// shows it (see Effect.Why).
	Effects []Effect

	// Opaque, when not empty, names a call the summary could not follow
	// (through an interface or a function value, or into code without a
	// summary): the function may have effects beyond Effects.
	Opaque string

	// Loops is true when a call may not return by itself: the function
	// runs a loop without a bound, serves a listener, or calls something
	// that may. A goroutine running it ends only if something ends it.
	Loops bool
}

// Pure reports whether s is known to have no effect at all.
func (s *Summary) Pure() bool {
	return s != nil && len(s.Effects) == 0 && s.Opaque == ""
}

// A Kind is one kind of effect.
type Kind string

const (
	// GoroutineEnds: starts goroutines that a lifecycle method of a value
	// the function returns ends (Effect.Ends names the method).
	GoroutineEnds Kind = "goroutine-ends"
	// GoroutineForever: starts goroutines that nothing shown ends.
	GoroutineForever Kind = "goroutine-forever"
	Network          Kind = "network"
	Process          Kind = "process"
	Signal           Kind = "signal"
	Syscall          Kind = "syscall"
	Cgo              Kind = "cgo"
	WritesEnv        Kind = "writes-env"
	WritesWd         Kind = "writes-wd"
	WritesGlobal     Kind = "writes-global"
	// SharedSync: uses a package-level channel, timer, wait group or
	// context (a value made outside any synctest bubble).
	SharedSync Kind = "shared-sync"
	// Timer: sleeps on, or starts, a timer or ticker of the real clock
	// (time.Sleep, time.After, time.NewTimer, context.WithTimeout).
	Timer Kind = "timer"
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
	// GoroutineEnds.
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

// A Source gives the summary of a function declared in another package
// than the one under analysis.
type Source interface {
	// Of returns fn's summary, or nil when unknown.
	Of(fn *types.Func) *Summary
}

// None is the Source that knows nothing: every function is unknown.
var None Source = none{}

type none struct{}

func (none) Of(*types.Func) *Summary { return nil }

// Analyzer computes the summaries of a package's functions and exports
// them as facts, for the packages that import it; its result is the
// Source of summaries for the package's callees in other packages.
var Analyzer = &analysis.Analyzer{
	Name:       "unflakeeffects",
	Doc:        "summarises what calling each function may do (goroutines, real I/O, process-wide state), for unflake's rules",
	Run:        run,
	ResultType: reflect.TypeFor[*Facts](),
	FactTypes:  []analysis.Fact{new(summaryFact)},
}

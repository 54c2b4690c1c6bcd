// Package effects summarises what calling a function may do: start
// goroutines (and whether they end), use the real network, processes,
// signals, syscalls or cgo, write the environment, the working directory
// or package-level variables, use package-level channels, timers, wait
// groups or contexts, or nothing of the kind. Beside the effects, a
// summary says whether a call may block durably (as a synctest bubble
// counts it), whether it busy-waits on the real clock (a loop that a
// bubble's clock would never end), and which of its function parameters
// it runs inside a synctest bubble.
//
// Summaries are computed bottom-up over the import graph. Under the go
// command (go vet -vettool, go fix -fixtool) they travel between packages
// as go/analysis facts (Analyzer, whose result is the Source *Facts); in
// unflake's own driver they are computed on demand, only for the
// functions a candidate test reaches (Loader). Local adds the package
// under analysis, summarised from its syntax. A call through an interface
// joins the summaries of its implementations when they are few and can
// all be listed (impls.go: a per-run index of named types by method);
// other calls through interfaces and function values stay unknown
// (Summary.Opaque). The standard
// library is not summarised from source: a table (std.go) lists its
// functions with an effect, and the rest of it counts as pure.
package effects

import (
	"reflect"

	"golang.org/x/tools/go/analysis"

	"github.com/unflake/unflake/rule/effect"
)

// The summary vocabulary lives in the public package rule/effect, which
// rules read; this package computes summaries. The aliases keep its own
// code short.
type (
	Summary = effect.Summary
	Kind    = effect.Kind
	Effect  = effect.Effect
	Source  = effect.Source
)

const (
	GoroutineEnds    = effect.GoroutineEnds
	GoroutineForever = effect.GoroutineForever
	Network          = effect.Network
	Process          = effect.Process
	Signal           = effect.Signal
	Syscall          = effect.Syscall
	Cgo              = effect.Cgo
	WritesEnv        = effect.WritesEnv
	WritesWd         = effect.WritesWd
	WritesGlobal     = effect.WritesGlobal
	SharedSync       = effect.SharedSync
	Timer            = effect.Timer
	Spins            = effect.Spins
	ReadsClock       = effect.ReadsClock
	ReadsRealClock   = effect.ReadsRealClock
	WritesFiles      = effect.WritesFiles
)

// None is the Source that knows nothing.
var None = effect.None

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

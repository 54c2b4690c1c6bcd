package verify

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"
	"time"

	"github.com/unflake/unflake/rule"
)

// timeStub is what workCode uses of the time package, for a type-check
// without the go command or the standard library's sources.
const timeStub = `package time

type Duration int64

const Millisecond Duration = 1000000

type Timer struct{ C <-chan int }

func NewTimer(d Duration) *Timer
func (t *Timer) Reset(d Duration) bool

type Ticker struct{ C <-chan int }

func NewTicker(d Duration) *Ticker
func (t *Ticker) Reset(d Duration)

func Sleep(d Duration)
`

// stubImporter gives the time package from timeStub, and the rest as
// fakeImporter does.
type stubImporter struct{}

func (stubImporter) Import(path string) (*types.Package, error) {
	if path != "time" {
		return fakeImporter{}.Import(path)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "time.go", timeStub, 0)
	if err != nil {
		return nil, err
	}
	return (&types.Config{}).Check("time", fset, []*ast.File{f}, nil)
}

func checkStub(t *testing.T, name, src string) (*token.FileSet, *ast.File, *types.Info, *types.Package) {
	t.Helper()
	return checkWith(t, stubImporter{}, name, src)
}

// workCode has loops that only compute (sites of the work mutant), loops
// that are no sites, and package defaults given to timers.
const workCode = `package p

import "time"

const rounds = 1 << 10

const (
	scheduleDelay = 50 * time.Millisecond
	tickEvery     = 10 * time.Millisecond
	once          = 20 * time.Millisecond
)

var grace = 5 * time.Millisecond

type Job struct {
	sum   uint64
	n     int
	timer *time.Timer
	ch    chan int
	w     waiter
}

type waiter struct{}

func (waiter) Wait() {}

func (j *Job) Derive(p []byte) {
	for i := 0; i < rounds; i++ {
		j.sum += uint64(i)
	}
	for range 3 {
		j.sum++
	}
	for i := 0; i < rounds*len(p); i++ {
		j.sum--
	}
	for i := 0; i < len(p); i++ {
		j.sum++
	}
	for i := 0; i < rounds; i++ {
		j.w.Wait()
	}
	for i := 0; i < rounds; i++ {
		j.ch <- i
	}
	for i := int32(0); i < 1<<28; i++ {
		j.sum++
	}
	for i := 0; 1<<30 > i; i += 2 {
		j.sum++
	}
}

func (j *Job) Run() {
	j.timer = time.NewTimer(scheduleDelay)
	t := time.NewTicker(tickEvery)
	j.timer.Reset(scheduleDelay)
	t.Reset(tickEvery)
	time.Sleep(once)
	if time.Duration(j.n) > grace {
		grace = 0
	}
	_ = [...]string{scheduleDelay: "delay"}
	_ = map[time.Duration]bool{tickEvery: true}
}
`

// A loop that only computes, with a constant bound or one derived from
// a constant, is a site of the work mutant: its bound made larger, about
// workIterations in all, within its type; a default a timer is given is
// a site of the default-0 mutant, made 0 at each use (1ns in a
// ticker's); both are aimed at a clock change only, and their schema
// type-checks.
func TestWorkAndDefaultMutants(t *testing.T) {
	const file = "/src/p/job.go"
	fset, f, info, pkg := checkStub(t, file, workCode)
	code := collect(fset, []*ast.File{f}, map[string][]byte{file: []byte(workCode)}, info, pkg.Scope())
	var got []string
	for _, a := range code.aims {
		switch a.site.what {
		case workBound:
			got = append(got, fmt.Sprintf("%d:work x%d:%s", a.line, a.site.factor, workCode[a.start:a.end]))
		case durationDefault:
			var uses []string
			for _, u := range a.site.uses {
				uses = append(uses, fmt.Sprintf("%d/%v", u.line, u.site.zero))
			}
			got = append(got, fmt.Sprintf("%d:%s:%s", a.line, a.site.shown, strings.Join(uses, ",")))
		}
	}
	// Not sites: a bound of no constant (len(p)), a loop that waits or
	// sends, an int32 bound that 16x would overflow; once (its one use
	// is a sleep's whole duration: the zeroed mutant is the same). grace
	// is no timer's, but the package arms timers: it comes last, its
	// write left as it is.
	want := []string{
		"28:work x4096:rounds",
		"31:work x4096:3",
		"34:work x4096:rounds*len(p)",
		"49:work x16:1<<30",
		"8:default scheduleDelay:55/true,57/true",
		"9:default tickEvery:56/false,58/false",
		"13:default grace:60/true",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("aims:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	m := mentions{direct: map[string]bool{"Derive": true, "Run": true}, indirect: map[string]bool{}}
	names := func(ms []*mutant) string {
		var out []string
		for _, m := range ms {
			out = append(out, m.String())
		}
		return strings.Join(out, "\n")
	}
	clock := code.aimed(m, map[rule.ChangeKind]bool{rule.Clock: true}, nil, 0)
	wantClock := []string{
		"time.NewTimer(scheduleDelay) with its duration made 0 at job.go:55",
		"loop bound rounds made 4096x (more CPU work) at job.go:28",
		"default scheduleDelay made 0 at its 2 uses at job.go:8",
		"j.timer.Reset(scheduleDelay) with its duration made 0 at job.go:57",
		"loop bound 3 made 4096x (more CPU work) at job.go:31",
		"default tickEvery made 0 at its 2 uses at job.go:9",
	}
	if got := names(clock); got != strings.Join(wantClock, "\n") {
		t.Errorf("clock:\n%s\nwant\n%s", got, strings.Join(wantClock, "\n"))
	}
	for _, k := range []rule.ChangeKind{rule.Budget, rule.Ownership, rule.Sync} {
		for _, m := range code.aimed(m, map[rule.ChangeKind]bool{k: true}, []time.Duration{500 * time.Millisecond}, 0) {
			if m.op == worked || m.op == defaultZeroed {
				t.Errorf("%s: %s aimed", k, m)
			}
		}
	}

	// One schema with them and the statements' mutants: the uses of a
	// default lie inside a timer's duration and a statement, and are
	// built into each.
	ms := append(clock, pickMutants(code.relevant(m), 20*time.Millisecond)...)
	src := string(schema(ms)[file])
	checkStub(t, file, src) // it builds
	for _, want := range []string{
		`for i := 0; i < func() int { switch unflakeMutant { case "m2.test": return (rounds) * 4096; }; return rounds }(); i++ {`,
		`for range func() int { switch unflakeMutant { case "m5.test": return (3) * 4096; }; return 3 }() {`,
		`time.NewTimer(func() unflakemutanttime.Duration { switch unflakeMutant { case "m1.test": return 0; }; return func() unflakemutanttime.Duration { switch unflakeMutant { case "m3.test": return 0; }; return scheduleDelay }() }())`,
		`t := time.NewTicker(func() unflakemutanttime.Duration { switch unflakeMutant { case "m6.test": return 1; }; return tickEvery }())`,
		`t.Reset(func() unflakemutanttime.Duration { switch unflakeMutant { case "m6.test": return 1; }; return tickEvery }())`,
	} {
		if !strings.Contains(src, want) {
			t.Errorf("schema lacks %s:\n%s", want, src)
		}
	}
	if orig, mut := strings.Count(workCode, "\n"), strings.Count(src, "\n"); mut != orig+2 {
		t.Errorf("the schema has %d lines, want the file's %d and the selector's", mut, orig)
	}
}

// Package crash turns a panic into a value that says where it happened:
// the engine recovers a panic of a rule, an analysis or a fix on one
// package and reports it as an internal error on that package, naming
// the first stack frame inside unflake's own code, while the other
// packages go on.
package crash

import (
	"fmt"
	"path"
	"reflect"
	"runtime"
	"strconv"
	"strings"
)

// A Panic is a recovered panic: its value and the innermost frame of
// unflake's code on the stack that raised it.
type Panic struct {
	Value any
	// Frame is "internal/effects/impls.go:104 (effects.newIfaceQuery)":
	// the file relative to the module and the function by its package's
	// name; "" when no frame of unflake's code was on the stack.
	Frame string
}

func (p *Panic) Error() string {
	if p.Frame == "" {
		return fmt.Sprintf("panic: %v", p.Value)
	}
	return fmt.Sprintf("panic: %v (at %s)", p.Value, p.Frame)
}

// Unwrap returns the panic's value when it is an error (a runtime error,
// an error a rule panicked with).
func (p *Panic) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}

// Recovered returns v, the value recover returned, as a Panic. It must be
// called by the deferred function that recovered, while the stack still
// holds the frames that panicked. A Panic re-raised by an inner recover
// comes back unchanged, with the frame it was first raised at.
func Recovered(v any) *Panic {
	if p, ok := v.(*Panic); ok {
		return p
	}
	return &Panic{Value: v, Frame: frame()}
}

// module is unflake's module path, from the name of this package's code
// ("github.com/unflake/unflake/internal/crash.marker").
var module = func() string {
	name := runtime.FuncForPC(reflect.ValueOf(marker).Pointer()).Name()
	return strings.TrimSuffix(name[:strings.LastIndex(name, "/")], "/internal")
}()

func marker() {}

// frame returns the innermost frame of unflake's code below the panic on
// the calling goroutine's stack.
func frame() string {
	// Deep enough for a panic far down a library's recursion (a printer
	// walking a syntax tree) called from unflake's code.
	pcs := make([]uintptr, 512)
	n := runtime.Callers(1, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var all []runtime.Frame
	for {
		f, more := frames.Next()
		all = append(all, f)
		if !more {
			break
		}
	}
	// The frames above runtime.gopanic are the recovering ones.
	start := 0
	for i, f := range all {
		if f.Function == "runtime.gopanic" {
			start = i + 1
			break
		}
	}
	for _, f := range all[start:] {
		if s := describe(f); s != "" {
			return s
		}
	}
	return ""
}

// describe says where f is when it is a frame of unflake's code (not this
// package's), or returns "".
func describe(f runtime.Frame) string {
	fn := f.Function
	if !strings.HasPrefix(fn, module+"/") && !strings.HasPrefix(fn, module+".") {
		return ""
	}
	// fn is "github.com/unflake/unflake/internal/effects.newIfaceQuery"
	// or "....(*Loader).of.func1": the package path ends at the first dot
	// after the last slash.
	slash := strings.LastIndex(fn, "/")
	dot := slash + strings.Index(fn[slash:], ".")
	pkg := fn[:dot]
	if pkg == module+"/internal/crash" {
		return ""
	}
	dir := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	// A test package (rewrite_test) lives in its package's directory.
	dir = strings.TrimSuffix(dir, "_test")
	return path.Join(dir, path.Base(f.File)) + ":" + strconv.Itoa(f.Line) + " (" + fn[slash+1:] + ")"
}

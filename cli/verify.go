package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/unflake/unflake/internal/verify"
	"github.com/unflake/unflake/rewrite"
)

// runVerified runs the engine with cfg under verification (--verify). A
// SIGINT or SIGTERM meanwhile stops every test process verification
// started (the context reaches each of them) and removes its temporary
// files; runVerified then returns what was verified so far (the fixes
// of the packages verified, the others held back; nil when nothing was)
// with an *interrupted error, and the command exits 130 or 143, as a
// shell reports a process the signal killed.
func (o *options) runVerified(cfg *rewrite.Config) (*rewrite.Result, *verify.Verification, error) {
	// The context ends only once the signal is recorded: a cancel
	// before it (signal.NotifyContext's) let a loaded machine report a
	// SIGTERM as an interrupt.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var mu sync.Mutex
	var caught os.Signal
	returned := make(chan struct{})
	defer close(returned)
	go func() {
		select {
		case s := <-sigs:
			mu.Lock()
			caught = s
			mu.Unlock()
			cancel()
		case <-returned:
		}
	}()
	res, v, err := verify.Run(ctx, cfg, verify.Options{
		Count:         o.verifyCount,
		Timeout:       o.verifyTimeout,
		NoMutants:     !o.verifyMutants,
		RecordIgnores: o.recordIgnores,
		Memory:        resultCacheDir(),
		Progress:      verifyProgress(o.stderr),
		Decided:       decidedPrinter(o.stderr, cfg.Dir),
	})
	if ctx.Err() != nil {
		mu.Lock()
		s := caught
		mu.Unlock()
		if s == nil {
			s = os.Interrupt
		}
		return res, v, &interrupted{sig: s}
	}
	return res, v, err
}

// interrupted is the error of a run a signal stopped. done says what the
// command did with what was verified before it.
type interrupted struct {
	sig  os.Signal
	done string
}

func (e *interrupted) Error() string {
	s := "stopped by " + e.sig.String() + "; the test processes were killed and their temporary files removed"
	if e.done != "" {
		s += "; " + e.done
	}
	return s
}

// exitCode is 128 plus the signal's number, as shells report it.
func (e *interrupted) exitCode() int {
	if e.sig == syscall.SIGTERM {
		return 128 + 15
	}
	return 128 + 2
}

// decidedPrinter returns, when stderr is a terminal, a printer of each
// fix verification decides, as it decides it, on a line of its own:
// "kept a/a_test.go:12 sleep (20 runs)" or "reverted a/a_test.go:12
// sleep: TestA failed after the rewrite: ...". The progress line is
// cleared first and comes back with the next progress report.
func decidedPrinter(stderr io.Writer, base string) func(verify.Decided) {
	f := terminal(stderr)
	if f == nil {
		return nil
	}
	return func(d verify.Decided) { fmt.Fprintln(f, "\r\033[K"+decidedLine(d, base)) }
}

// decidedLine is one decided fix in words.
func decidedLine(d verify.Decided, base string) string {
	at := fmt.Sprintf("%s:%d %s", rel(base, d.Finding.File), d.Finding.Line, d.Finding.Rule)
	switch {
	case d.Kept:
		return "unflake: kept " + at + " (" + runsAndTimes(d.Runs, d.Before, d.After) + ")"
	case d.Retry:
		return "unflake: reverted this form of " + at + ", trying its next: " + d.Why.String()
	}
	return "unflake: reverted " + at + ": " + d.Why.String()
}

// runsAndTimes says how a kept fix was verified: "20 runs, 1.2s → 0.1s",
// or, when the rewrite is not faster, "20 runs; deterministic, not
// faster: 0.0s → 0.2s" (a fix kept because it removes a race may cost
// time).
func runsAndTimes(runs int, before, after time.Duration) string {
	s := plural(runs, "run")
	if before == 0 && after == 0 {
		return s
	}
	if after < before {
		return fmt.Sprintf("%s, %.1fs → %.1fs", s, before.Seconds(), after.Seconds())
	}
	return fmt.Sprintf("%s; deterministic, not faster: %.1fs → %.1fs", s, before.Seconds(), after.Seconds())
}

package cli

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/unflake/unflake/internal/verify"
	"github.com/unflake/unflake/rewrite"
)

// runVerified runs the engine with cfg under verification (--verify). A
// SIGINT or SIGTERM meanwhile stops every test process verification
// started (the context reaches each of them) and removes its temporary
// files; the command then exits 130 or 143, as a shell reports a process
// the signal killed.
func (o *options) runVerified(cfg *rewrite.Config) (*rewrite.Result, *verify.Verification, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// NotifyContext does not say which signal came: listen too.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var mu sync.Mutex
	var caught os.Signal
	go func() {
		select {
		case s := <-sigs:
			mu.Lock()
			caught = s
			mu.Unlock()
			stop()
		case <-ctx.Done():
		}
	}()
	res, v, err := verify.Run(ctx, cfg, verify.Options{
		Count:     o.verifyCount,
		Timeout:   o.verifyTimeout,
		NoMutants: !o.verifyMutants,
		Progress:  verifyProgress(o.stderr),
	})
	if ctx.Err() != nil {
		mu.Lock()
		s := caught
		mu.Unlock()
		if s == nil {
			s = os.Interrupt
		}
		return nil, nil, &interrupted{sig: s}
	}
	return res, v, err
}

// interrupted is the error of a run a signal stopped.
type interrupted struct{ sig os.Signal }

func (e *interrupted) Error() string {
	return "stopped by " + e.sig.String() + "; the test processes were killed and the temporary files removed"
}

// exitCode is 128 plus the signal's number, as shells report it.
func (e *interrupted) exitCode() int {
	if e.sig == syscall.SIGTERM {
		return 128 + 15
	}
	return 128 + 2
}

// Package worker is a tiny job queue whose tests show the flaky patterns
// unflake rewrites.
package worker

import (
	"sync"
	"sync/atomic"
)

// Pool runs submitted jobs on background goroutines.
type Pool struct {
	wg   sync.WaitGroup
	done atomic.Int64
}

// Submit runs job in the background.
func (p *Pool) Submit(job func()) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		job()
		p.done.Add(1)
	}()
}

// Done returns how many jobs have finished.
func (p *Pool) Done() int64 { return p.done.Load() }

// Wait waits for every submitted job.
func (p *Pool) Wait() { p.wg.Wait() }

package worker

import (
	"testing"
	"time"
)

// TestFeed submits jobs from a feeder goroutine until the test ends, on a
// ticker: neither the ticker nor the goroutine is ever ended, so both
// outlive the test (unflake's leak rule stops and joins them at cleanup).
func TestFeed(t *testing.T) {
	var p Pool
	tick := time.NewTicker(time.Millisecond)
	jobs := make(chan func(), 1)
	go func() {
		for job := range jobs {
			p.Submit(job)
		}
	}()
	<-tick.C
	ran := make(chan struct{})
	jobs <- func() { close(ran) }
	<-ran
	close(jobs)
	if p.Done() > 1 {
		t.Fatalf("done = %d, want at most 1", p.Done())
	}
}

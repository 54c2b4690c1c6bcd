package worker

import (
	"testing"
	"time"
)

// waitDone polls until n jobs are done: 20 attempts of 5ms is a 100ms
// budget that a loaded CI machine can run out of.
func waitDone(t *testing.T, p *Pool, n int64) {
	t.Helper()
	for i := 0; i < 20; i++ {
		if p.Done() == n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("done = %d, want %d", p.Done(), n)
}

func TestSubmit(t *testing.T) {
	var p Pool
	for i := 0; i < 3; i++ {
		p.Submit(func() {})
	}
	waitDone(t, &p, 3)
}

func TestSubmitCountsDown(t *testing.T) {
	var p Pool
	p.Submit(func() {})
	ok := false
	for attempts := 50; attempts > 0; attempts-- {
		if p.Done() == 1 {
			ok = true
			break
		}
		<-time.After(2 * time.Millisecond)
	}
	if !ok {
		t.Fatal("job never finished")
	}
	p.Wait()
}

func TestRetryWithBackoff(t *testing.T) {
	var p Pool
	p.Submit(func() {})
	// The counter scales the wait: unflake leaves this poll alone and
	// says why.
	for i := 0; i < 5; i++ {
		if p.Done() == 1 {
			break
		}
		time.Sleep(time.Duration(i) * time.Millisecond)
	}
	p.Wait()
}

package metrics

import (
	"context"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
	_ "unsafe"
)

var interval = time.Second

var ticks = make(chan int)

// StartReporter starts a reporter that runs until the process exits.
func StartReporter() { // want StartReporter:`goroutine-forever: metrics.StartReporter, which starts a goroutine running metrics.loop that never ends`
	go loop()
}

func loop() { // unexported: no fact, its effects are in StartReporter's
	for {
		time.Sleep(interval)
	}
}

// SetInterval writes a package-level variable.
func SetInterval(d time.Duration) { // want SetInterval:`writes-global: metrics.SetInterval, which writes the package-level variable metrics.interval`
	interval = d
}

// Add is pure.
func Add(a, b int) int { return a + b } // want Add:`pure`

// Tick uses a package-level channel.
func Tick() { ticks <- 1 } // want Tick:`shared-sync: metrics.Tick, which uses the package-level channel metrics.ticks`

// Listen uses the network.
func Listen() (net.Listener, error) { // want Listen:`network: metrics.Listen → net.Listen, which uses the real network`
	return net.Listen("tcp", "127.0.0.1:0")
}

// Configure writes the environment.
func Configure() { // want Configure:`writes-env: metrics.Configure → os.Setenv, which writes the process environment`
	os.Setenv("METRICS", "1")
}

// Write calls through an interface.
func Write(w io.Writer) { // want Write:`opaque: calls io.Writer.Write through an interface`
	w.Write(nil)
}

// Compute starts a goroutine that ends by itself.
func Compute() int { // want Compute:`blocks`
	ch := make(chan int)
	go func() { ch <- Add(1, 2) }()
	return <-ch
}

// A Server runs a loop until Close.
type Server struct {
	done chan struct{}
}

// NewServer starts the server's loop, which Close ends.
func NewServer() *Server { // want NewServer:`goroutine-ends: metrics.NewServer, which starts a goroutine running metrics.Server.loop that Close of the metrics.Server it returns ends`
	s := &Server{done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *Server) loop() {
	for {
		select {
		case <-s.done:
			return
		}
	}
}

// Close ends the loop.
func (s *Server) Close() { close(s.done) } // want Close:`pure`

// A Worker runs until its context is cancelled by Stop.
type Worker struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// NewWorker starts a worker.
func NewWorker() *Worker { // want NewWorker:`goroutine-ends: metrics.NewWorker, which starts a goroutine that Stop of the metrics.Worker it returns ends`
	w := &Worker{}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	go func() {
		for {
			select {
			case <-w.ctx.Done():
				return
			default:
			}
		}
	}()
	return w
}

// Stop ends the worker.
func (w *Worker) Stop() { w.cancel() } // want Stop:`pure`

// Even and Odd call each other; Odd writes a global.
func Even(n int) bool { // want Even:`writes-global: metrics.Even → metrics.Odd, which writes the package-level variable metrics.interval`
	if n == 0 {
		return true
	}
	return Odd(n - 1)
}

func Odd(n int) bool { // want Odd:`writes-global: metrics.Odd, which writes the package-level variable metrics.interval`
	interval++
	if n == 0 {
		return false
	}
	return Even(n - 1)
}

// Map is generic.
func Map[T any](xs []T, f func(T) T) []T { // want Map:`opaque: calls the function value f`
	for i := range xs {
		xs[i] = f(xs[i])
	}
	return xs
}

var pool = sync.Pool{New: func() any { return new(int) }}

// Borrow takes from a package-level pool, which no caller can tell.
func Borrow() *int { return pool.Get().(*int) } // want Borrow:`pure`

// Relay copies on a connection made elsewhere: the dial has the effect.
func Relay(c *net.TCPConn, r io.Reader) { // want Relay:`pure`
	c.ReadFrom(r)
}

// Restart restarts the server's loop: Close ends it.
func (s *Server) Restart() { // want Restart:`goroutine-ends: metrics.Server.Restart, which starts a goroutine running metrics.Server.loop that Close of the metrics.Server ends`
	go s.loop()
}

// Reset restarts the loop and ends it: no goroutine is left.
func (s *Server) Reset() { // want Reset:`pure`
	s.Restart()
	s.Close()
}

// All is an iterator: calling yield runs the caller's loop body.
func All(xs []int) func(func(int) bool) { // want All:`pure`
	return func(yield func(int) bool) {
		for _, x := range xs {
			if !yield(x) {
				return
			}
		}
	}
}

// SetEnvFor sets a variable for the test's duration: still an
// environment write while the test runs.
func SetEnvFor(t *testing.T) { // want SetEnvFor:`writes-env: metrics.SetEnvFor → testing.T.Setenv, which writes the process environment`
	t.Setenv("METRICS", "1")
}

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Now reads the runtime's clock through a linked name.
func Now() int64 { return nanotime() } // want Now:`pure`

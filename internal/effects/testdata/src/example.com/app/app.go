package app

import "example.com/metrics"

// Start starts the reporter.
func Start() { // want Start:`goroutine-forever: app.Start → metrics.StartReporter, which starts a goroutine running metrics.loop that never ends`
	metrics.StartReporter()
}

// Serve uses a server and closes it.
func Serve() { // want Serve:`pure`
	s := metrics.NewServer()
	defer s.Close()
}

// Leak opens a server and never closes it.
func Leak() { // want Leak:`goroutine-forever: app.Leak → metrics.NewServer, which starts a goroutine that never ends`
	metrics.NewServer()
}

// Open returns the server it opens.
func Open() *metrics.Server { // want Open:`goroutine-ends: app.Open → metrics.NewServer, which starts a goroutine running metrics.Server.loop that Close of the metrics.Server it returns ends`
	return metrics.NewServer()
}

// Sum is pure through another package.
func Sum() int { return metrics.Add(1, 2) } // want Sum:`pure`

// Double is pure through a generic function of another package.
func Double(xs []int) []int { // want Double:`opaque: calls metrics.Map, which calls the function value f`
	return metrics.Map(xs, func(x int) int { return 2 * x })
}

type closer interface{ Close() }

// An App holds a server behind an interface and closes it in Close.
type App struct{ srv closer }

// NewApp starts a server that the App's Close ends.
func NewApp() *App { // want NewApp:`goroutine-ends: app.NewApp → metrics.NewServer, which starts a goroutine that Close of the app.App it returns ends`
	return &App{srv: metrics.NewServer()}
}

// Close closes the server.
func (a *App) Close() { a.srv.Close() } // want Close:`opaque: calls app.closer.Close through an interface`

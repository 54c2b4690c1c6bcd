// Package coarse keeps coarse clocks, as hot paths do (VictoriaMetrics'
// fasttime, fasthttp's coarse time): a goroutine that initialisation
// starts refreshes them from the real clock, outside any bubble.
package coarse

import (
	"sync/atomic"
	"time"
)

var now atomic.Int64

func init() {
	now.Store(time.Now().UnixNano())
	go func() {
		tick := time.NewTicker(time.Millisecond)
		for t := range tick.C {
			now.Store(t.UnixNano())
		}
	}()
}

// UnixNano reads the ticker's clock.
func UnixNano() int64 { return now.Load() } // want UnixNano:`writes-global: coarse.UnixNano, which writes the package-level variable coarse.now; reads-real-clock: coarse.UnixNano, which reads coarse.now \(coarse.go:24\), kept from the real clock by a goroutine coarse's initialisation starts \(coarse.go:15\), outside every synctest bubble`

// Expired compares with it, through UnixNano.
func Expired(deadline int64) bool { return UnixNano() > deadline } // want Expired:`writes-global: coarse.Expired → coarse.UnixNano, which writes the package-level variable coarse.now; reads-real-clock: coarse.Expired → coarse.UnixNano, which reads coarse.now \(coarse.go:24\), kept from the real clock by a goroutine coarse's initialisation starts \(coarse.go:15\), outside every synctest bubble`

var seconds uint64

var _ = start()

func start() bool {
	go refresh()
	return true
}

func refresh() {
	for {
		time.Sleep(time.Second)
		sec := uint64(time.Now().Unix())
		atomic.StoreUint64(&seconds, sec)
	}
}

// Seconds reads the sleeping loop's clock.
func Seconds() uint64 { return atomic.LoadUint64(&seconds) } // want Seconds:`writes-global: coarse.Seconds, which writes the package-level variable coarse.seconds; reads-real-clock: coarse.Seconds, which reads coarse.seconds \(coarse.go:47\), kept from the real clock by a goroutine coarse's initialisation starts \(coarse.go:34\), outside every synctest bubble`

var flushed atomic.Int64

func init() { go flushDaemon() }

// flushDaemon flushes on a ticker, and counts: it keeps no reading of
// the clock.
func flushDaemon() {
	for range time.NewTicker(time.Second).C {
		flushed.Add(1)
	}
}

// Flushed reads a count, not a clock.
func Flushed() int64 { return flushed.Load() } // want Flushed:`writes-global: coarse.Flushed, which writes the package-level variable coarse.flushed`

var lazy atomic.Int64

// Stamp keeps a reading, but no goroutine of initialisation does.
func Stamp() { lazy.Store(time.Now().UnixNano()) } // want Stamp:`writes-global: coarse.Stamp, which writes the package-level variable coarse.lazy; reads-clock: coarse.Stamp, which reads the clock \(coarse.go:67\)`

// Lazy reads it.
func Lazy() int64 { return lazy.Load() } // want Lazy:`writes-global: coarse.Lazy, which writes the package-level variable coarse.lazy`

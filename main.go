// Command unflake rewrites slow and flaky Go tests into fast, deterministic
// ones. See README.md and `unflake rules`. Called by the go command as its
// vet or fix tool (go vet -vettool, go fix -fixtool), it runs its rules as
// go/analysis analyzers (docs/drivers.md).
package main

import (
	"os"
	"runtime/debug"

	"github.com/unflake/unflake/analyzers"
	"github.com/unflake/unflake/cli"
)

// memoryLimit is the soft limit on the Go heap: a big test file leaves
// decorated copies behind it as garbage, and the collector reclaims them
// before the heap grows past this, not after it doubles. The live heap of
// a 50,000-line file is about 350 MiB (docs/bench.md). GOMEMLIMIT overrides it.
//
// Under this limit the collector runs only when the heap nears it, not
// each time the heap doubles: a run is short, and collecting at every
// doubling cost 20-30% of its CPU time on real repositories (docs/bench.md)
// while the peak stays under the limit either way. GOGC, or a GOMEMLIMIT
// of one's own, brings the usual pacing back.
const memoryLimit = 768 << 20

func main() {
	_, gogc := os.LookupEnv("GOGC")
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(memoryLimit)
		if !gogc {
			debug.SetGCPercent(-1)
		}
	}
	if analyzers.IsTool(os.Args[1:]) {
		analyzers.Main() // exits
	}
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}

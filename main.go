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
const memoryLimit = 768 << 20

func main() {
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(memoryLimit)
	}
	if analyzers.IsTool(os.Args[1:]) {
		analyzers.Main() // exits
	}
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}

// Command unflake rewrites slow and flaky Go tests into fast, deterministic
// ones. See README.md and `unflake rules`.
package main

import (
	"os"

	"github.com/unflake/unflake/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}

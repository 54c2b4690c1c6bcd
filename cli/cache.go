package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// resultCacheDir returns the directory of the engine's result cache
// (rewrite.Config.Cache): $UNFLAKE_CACHE when it is set to a path, none
// when it is "off", else unflake/ in the user's cache directory (as
// os.UserCacheDir says), or none when there is no such directory. A test
// binary uses none unless $UNFLAKE_CACHE names one: the tests' runs never
// fill the user's cache.
//
// Every analysing command passes it on; the engine itself leaves the
// cache alone under --verify and --changed-since.
func resultCacheDir() string {
	switch v := os.Getenv("UNFLAKE_CACHE"); v {
	case "off":
		return ""
	case "":
		if testing.Testing() {
			return ""
		}
		d, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(d, "unflake")
	default:
		abs, err := filepath.Abs(v)
		if err != nil {
			return ""
		}
		return abs
	}
}

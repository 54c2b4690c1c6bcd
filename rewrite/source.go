package rewrite

import (
	"os"
	"time"

	"github.com/unflake/unflake/rule"
)

// worthLoading reports whether the test file at path may hold a finding
// for one of rules.
func worthLoading(path string, rules []*rule.Rule, opts rule.Options, prefilter bool) (bool, error) {
	defer stages.since(costPrefilter, time.Now())
	if !prefilter {
		return true, nil
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	for _, r := range rules {
		if r.Prefilter(src, opts.For(r)) {
			return true, nil
		}
	}
	return false, nil
}

// readSource reads a file, keeping its mode for the atomic write.
func readSource(path string) ([]byte, os.FileMode, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	return src, info.Mode().Perm(), nil
}

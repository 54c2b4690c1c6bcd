package rewrite

import (
	"fmt"
	"os"
	"time"

	"github.com/unflake/unflake/internal/crash"
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
		ok, err := prefilter1(r, src, opts)
		if err != nil {
			return true, fmt.Errorf("%s: internal error: %v", path, err)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// prefilter1 is r's prefilter on src; a panic is an error naming the rule
// and where it panicked (the file's package is then left out, as when the
// file cannot be read).
func prefilter1(r *rule.Rule, src []byte, opts rule.Options) (ok bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			p := crash.Recovered(v)
			err = fmt.Errorf("the prefilter of rule %s panicked: %v", r.Name, p.Value)
			if p.Frame != "" {
				err = fmt.Errorf("%v (at %s)", err, p.Frame)
			}
		}
	}()
	return r.Prefilter(src, opts.For(r)), nil
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

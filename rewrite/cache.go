package rewrite

import (
	"flag"
	"fmt"

	"github.com/unflake/unflake/internal/cache"
)

// cacheEntry is what one stored run holds (package cache stores it).
type cacheEntry struct {
	Version  string
	Findings []Finding
	Codes    []string // Finding.code, in Findings order (Site hashes it)
	Changes  []Change
	Packages int
	Loaded   int
}

// cacheable reports whether cfg's run may use the cache at all.
func (cfg *Config) cacheable() bool {
	return cfg.Cache != "" && cfg.Only == nil && cfg.Decide == nil && cfg.GoAs == nil && cfg.Measured == nil
}

// cache returns the cache's view of cfg's run: what its key hashes.
func (cfg *Config) cache() *cache.Config {
	c := &cache.Config{Dir: cfg.Dir, Patterns: cfg.Patterns, Tags: cfg.Tags, Env: cfg.Env, Cache: cfg.Cache}
	field := func(name string, vals ...string) { c.Fields = append(c.Fields, cache.Field{Name: name, Vals: vals}) }
	field("run", cfg.Run)
	field("noprefilter", fmt.Sprint(cfg.NoPrefilter))
	for _, r := range cfg.Rules {
		var flags []string
		vals := cfg.Options.For(r)
		r.Flags.VisitAll(func(f *flag.Flag) { flags = append(flags, fmt.Sprintf("%s=%v", f.Name, vals.Get(f.Name))) })
		field("rule "+r.Name, flags...)
	}
	field("options", cfg.Options.Explicit()...) // a rule may read another's option
	return c
}

// loadResult returns the result that load finds, or nil on a miss.
func loadResult(load func(v any, valid func() bool) bool) *Result {
	var e cacheEntry
	if !load(&e, func() bool { return e.Version == cache.Version && len(e.Codes) == len(e.Findings) }) {
		return nil
	}
	for i := range e.Findings {
		e.Findings[i].code = e.Codes[i]
	}
	return &Result{Findings: e.Findings, Changes: e.Changes, Packages: e.Packages, Loaded: e.Loaded, Cached: true}
}

// storeResult stores res in c, if it is worth storing: runs with errors
// or refused files are not.
func storeResult(c *cache.Entry, res *Result) {
	if len(res.Errors) > 0 || len(res.Refused) > 0 {
		return
	}
	e := cacheEntry{Version: cache.Version, Findings: res.Findings, Changes: res.Changes, Packages: res.Packages, Loaded: res.Loaded}
	e.Codes = make([]string, len(res.Findings))
	for i, f := range res.Findings {
		e.Codes[i] = f.code
	}
	c.Store(&e)
}

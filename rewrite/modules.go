package rewrite

import (
	"context"

	"golang.org/x/tools/go/packages"

	"github.com/unflake/unflake/internal/modedit"
)

// modules is the engine's handle on the requirements a run adds to its
// main modules' go.mod (package modedit does the editing).
type modules struct{ *modedit.Modules }

type module = modedit.Module

func newModules(ctx context.Context, cfg *Config) *modules {
	return &modules{modedit.New(ctx, cfg.Env)}
}

func (ms *modules) get(p *packages.Package) *module { return ms.Get(p) }

func (ms *modules) cleanup() { ms.Cleanup() }

func (ms *modules) require(p *packages.Package, modPath string) (missing bool, err error) {
	return ms.Require(p, modPath)
}

func (ms *modules) changes(m *module, used map[string]bool) ([]Change, error) {
	return ms.Changes(m, used)
}

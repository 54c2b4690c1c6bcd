package effects_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/unflake/unflake/internal/effects"

	"github.com/unflake/unflake/internal/testmod"
)

// TestAnalyzerFacts checks the facts the Analyzer exports, package by
// package in import order: metrics, then app (which imports it), then
// top (which imports app), so facts flow across two package boundaries.
func TestAnalyzerFacts(t *testing.T) {
	testmod.Slow(t)
	analysistest.Run(t, analysistest.TestData(), effects.Analyzer, "example.com/metrics", "example.com/app", "example.com/top", "example.com/spin", "example.com/spool", "example.com/coarse")
}

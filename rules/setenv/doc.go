// Package setenv provides the setenv rule: a t.Setenv(X, "") clear at the
// top of a test is redundant when the package's TestMain already empties X
// for the whole test process, and it costs the test its parallelism
// (t.Setenv panics in a parallel test). The rule removes such clears.
//
// The rule's documentation, with every condition it checks, is doc.md,
// embedded into Rule.Doc.
package setenv

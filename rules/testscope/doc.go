// Package testscope provides the testscope rule: process-wide state a test
// changes (environment variables, the working directory, temporary
// directories, its context, package-level variables) leaks into the tests
// that run after it. The rule hands each change to the testing package,
// which undoes it when the test ends: t.Setenv, t.Chdir, t.TempDir,
// t.Context and a t.Cleanup that restores the variable.
//
// The rule's documentation, with every condition it checks, is doc.md,
// embedded into Rule.Doc.
package testscope

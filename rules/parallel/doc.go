// Package parallel provides the opt-in parallel rule: it adds t.Parallel()
// to top-level tests that, as far as the analysis can see, touch no
// process-wide state (the environment, the working directory, package-level
// variables), so the suite can run them side by side.
//
// The rule's documentation, with every condition it checks, is doc.md,
// embedded into Rule.Doc.
package parallel

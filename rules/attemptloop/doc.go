// Package attemptloop provides the attemptloop rule: a poll in a test
// bounded by an attempt count (for i := 0; i < 20; i++ { if ok() { break };
// time.Sleep(5 * time.Millisecond) }) hides a small time budget that runs
// out on a loaded machine. The rule bounds such a poll by a generous
// deadline instead, keeping its body and the test's failure handling.
//
// The rule's documentation, with every condition it checks, is doc.md,
// embedded into Rule.Doc.
package attemptloop

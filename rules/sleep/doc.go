// Package sleep provides the sleep rule: a time.Sleep (or <-time.After) in
// a test waits on the real clock. Where the test can run in a
// testing/synctest bubble, the rule wraps its body in synctest.Test so the
// wait passes instantly on a virtual clock; where the test already drives
// a fake clock, the wait becomes an advance of that clock.
//
// The rule's documentation, with every condition it checks, is doc.md,
// embedded into Rule.Doc.
package sleep

// Package wallclock provides the wallclock rule: a test that fails when
// the code it times takes too long (or too little) wall time passes on a
// quiet laptop and fails under -race or on a loaded machine. Where the
// timing is the behaviour under test, the rule runs the test in a
// testing/synctest bubble, where the assertion holds exactly in virtual
// time; where the test times its own computation, it removes the budget
// and keeps the result assertions.
//
// The rule's documentation, with every condition it checks, is doc.md,
// embedded into Rule.Doc.
package wallclock

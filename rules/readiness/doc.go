// Package readiness provides the readiness rule: a test that starts a
// child process, sleeps "to give the child time to install its handler",
// then signals it, guesses how fast the child starts; on a loaded machine
// the signal arrives first and kills the child. Where the child is the
// test binary's own helper test, the rule replaces the sleep with a
// handshake: the child writes a line on an extra pipe once signal.Notify
// has run, and the parent waits for that line.
//
// The rule's documentation, with every condition it checks, is doc.md,
// embedded into Rule.Doc.
package readiness

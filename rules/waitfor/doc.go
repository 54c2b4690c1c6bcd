// Package waitfor provides the waitfor rule: a test that sleeps and then
// checks state another goroutine or process produces
// (time.Sleep(10 * time.Millisecond); if len(m.Members()) != 1 { t.Fatal() })
// guesses how long the state takes, and fails on a loaded machine where it
// takes longer. The rule replaces the sleep by a poll on exactly those
// checks' conditions, bounded by a generous deadline; the checks follow
// unchanged.
//
// A poll is right only when the checks wait for a change. A sleep may
// instead give an unwanted event the time to happen before a check that
// nothing happened; a poll would then pass at once. The rule proves the
// first statically where it can (the checked state starts out failing the
// check and only code running apart from the test writes it); otherwise
// its fix is unproven and carries a probe, the sleep removed, which
// fix --verify runs first: only a check that fails without the wait is
// turned into a poll.
//
// The rule's documentation is doc.md, embedded into Rule.Doc.
package waitfor

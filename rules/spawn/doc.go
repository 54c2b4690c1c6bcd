// Package spawn provides the spawn rule: a test that runs independent child
// processes one after another runs them together, with an errgroup.Group
// (or a sync.WaitGroup under --no-new-deps), and checks their results
// afterwards on the test goroutine, in the original order.
//
// The rule's documentation, with every condition it checks, is doc.md,
// embedded into Rule.Doc.
package spawn

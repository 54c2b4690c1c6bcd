// Package leak provides the leak rule: a test ends what it starts. A value
// with a lifecycle method (Close, Stop, Shutdown, Cancel) that the test
// creates and never ends gets a t.Cleanup that ends it; a goroutine that
// ends when the test's context is done or a channel the test closes is
// closed is joined at cleanup; goroutines that would never end are
// reported.
//
// The rule's documentation, with every condition it checks, is doc.md,
// embedded into Rule.Doc.
package leak

// Package freeport provides the freeport rule: a test that listens on a
// fixed port fails when anything else on the machine holds it, a second
// copy of the same suite included. The rule makes net.Listen,
// net.ListenPacket and tls.Listen take port 0, a port the system picks,
// and points the test's later uses of the address at the listener's
// actual address; it reports the http.ListenAndServe shapes and the tests
// whose fixed port is part of what they check.
//
// The rule's documentation, with every condition it checks, is doc.md,
// embedded into Rule.Doc.
package freeport

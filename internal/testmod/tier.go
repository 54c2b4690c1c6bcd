package testmod

import "testing"

// Slow skips t unless the tests were built with -tags slow: the slow tier
// holds the tests that run the go command on whole modules (go test, go
// vet, -race, mutations) and the end-to-end drivers. CI runs it
// (.ci/run); `go test ./...` leaves it out so it stays within minutes.
func Slow(t testing.TB) {
	t.Helper()
	if !SlowTier {
		t.Skip("slow tier: run with -tags slow")
	}
}

// Short skips t under -short: the test is in the default tier but costs
// seconds, more than the edit-test loop of `go test -short ./...` can pay.
func Short(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped under -short")
	}
}

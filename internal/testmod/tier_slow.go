//go:build slow

package testmod

// SlowTier reports whether the tests were built with -tags slow.
const SlowTier = true

// Package sweep holds unflake's robustness sweep, a slow-tier test
// (sweep_test.go) that runs `unflake check` and `unflake fix --diff` with
// every rule over real modules: each module in the module cache that has
// tests, and any directories named with -sweep.dirs. It fails on a crash,
// an internal error, a diff that does not apply, or a rewritten package
// that no longer builds or vets. See docs/sweep.md.
package sweep

// Package rulehook lets the engine reach what a rule.Pass keeps from its
// rules: hooks that only the engine sets and rules never call, so they are
// no part of the public rule API (as net/http reaches its internals
// through an internal package).
package rulehook

// SetGranted, set by package rule, makes pass (a *rule.Pass) call granted
// with min each time its FileUsesGo allows a feature of go version min.
// A driver that analyses a module as if its go directive were raised
// learns from it the lowest version the fixes need.
var SetGranted func(pass any, granted func(min string))

package effects

import (
	"go/types"

	"github.com/unflake/unflake/rule/effect"
)

// The standard library reads and writes environment variables that the
// calling code never names: t.Chdir sets PWD, os.Getwd trusts it. A rule
// that asks "who reads or writes NAME" by looking for os.Getenv and
// os.Setenv misses those (red team batch 17, symlinkwd: a test cleared
// PWD after a t.Chdir, and setenv called the clear redundant). This is the
// one table of the writes (no rule asks for the hidden reads yet). The
// variables the standard library reads once and keeps for the process (TZ, the proxy variables, SSL_CERT_*: the
// parallel rule's cachedEnv) are a property of the package, not of one
// call, and stay with that rule.

// An EnvAccess is a standard library function's hidden use of the
// environment: the variables it reads or writes and what the reason says.
type EnvAccess struct {
	Vars []string
	Why  string
}

// Has reports whether a names v.
func (a EnvAccess) Has(v string) bool {
	for _, x := range a.Vars {
		if x == v {
			return true
		}
	}
	return false
}

const chdirSetsPWD = "t.Chdir sets PWD to the new directory"

// stdEnvWrites are the functions that write variables the call does not
// name, by Key.
var stdEnvWrites = map[string]EnvAccess{
	"testing.common.Chdir": {[]string{"PWD"}, chdirSetsPWD},
	"testing.T.Chdir":      {[]string{"PWD"}, chdirSetsPWD},
	"testing.B.Chdir":      {[]string{"PWD"}, chdirSetsPWD},
	"testing.F.Chdir":      {[]string{"PWD"}, chdirSetsPWD},
	"testing.TB.Chdir":     {[]string{"PWD"}, chdirSetsPWD},
}

// StdEnvWrites returns the variables fn, a standard library function,
// writes without the call naming them (t.Chdir: PWD), or ok false.
func StdEnvWrites(fn *types.Func) (EnvAccess, bool) {
	if fn == nil {
		return EnvAccess{}, false
	}
	a, ok := stdEnvWrites[Key(fn)]
	return a, ok
}

// KindEnvWrites returns the hidden environment writes a summary's effect
// of kind k may stand for: a function of another package that changes
// the working directory (WritesWd) may do it with t.Chdir, which sets PWD.
// The summary does not say which call it was, so PWD counts.
func KindEnvWrites(k effect.Kind) (EnvAccess, bool) {
	if k == effect.WritesWd {
		return EnvAccess{[]string{"PWD"}, "it changes the working directory, maybe with t.Chdir, which sets PWD"}, true
	}
	return EnvAccess{}, false
}

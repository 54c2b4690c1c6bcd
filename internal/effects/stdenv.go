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
// one table of them. The variables the standard library reads once and
// keeps for the process (TZ, the proxy variables, SSL_CERT_*: the
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

// stdEnvReads are the functions that read variables the call does not
// name, by Key. (exec's children inherit the whole environment: not a
// read of a variable, and not listed.)
var stdEnvReads = map[string]EnvAccess{
	"os.Getwd":                      {[]string{"PWD"}, "os.Getwd returns $PWD when it names the working directory"},
	"path/filepath.Abs":             {[]string{"PWD"}, "filepath.Abs calls os.Getwd, which returns $PWD when it names the working directory"},
	"os.UserHomeDir":                {[]string{"HOME", "USERPROFILE", "home"}, "os.UserHomeDir returns $HOME"},
	"os.UserCacheDir":               {[]string{"XDG_CACHE_HOME", "HOME", "LocalAppData", "home"}, "os.UserCacheDir returns $XDG_CACHE_HOME, or a directory under $HOME"},
	"os.UserConfigDir":              {[]string{"XDG_CONFIG_HOME", "HOME", "AppData", "home"}, "os.UserConfigDir returns $XDG_CONFIG_HOME, or a directory under $HOME"},
	"os.TempDir":                    {[]string{"TMPDIR", "TMP", "TEMP", "USERPROFILE"}, "os.TempDir returns $TMPDIR"},
	"os.CreateTemp":                 {[]string{"TMPDIR", "TMP", "TEMP", "USERPROFILE"}, "os.CreateTemp with an empty directory uses os.TempDir, $TMPDIR"},
	"os.MkdirTemp":                  {[]string{"TMPDIR", "TMP", "TEMP", "USERPROFILE"}, "os.MkdirTemp with an empty directory uses os.TempDir, $TMPDIR"},
	"os/exec.LookPath":              {[]string{"PATH", "path", "PATHEXT"}, "exec.LookPath searches $PATH"},
	"os/exec.Command":               {[]string{"PATH", "path", "PATHEXT"}, "exec.Command looks a bare name up in $PATH"},
	"os/exec.CommandContext":        {[]string{"PATH", "path", "PATHEXT"}, "exec.CommandContext looks a bare name up in $PATH"},
	"os/user.Current":               {[]string{"HOME", "USER"}, "user.Current falls back to $USER and $HOME"},
	"time.LoadLocation":             {[]string{"ZONEINFO"}, "time.LoadLocation looks zones up in $ZONEINFO first"},
	"net/http.ProxyFromEnvironment": {[]string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy", "REQUEST_METHOD"}, "http.ProxyFromEnvironment reads the proxy variables"},
	"crypto/x509.SystemCertPool":    {[]string{"SSL_CERT_FILE", "SSL_CERT_DIR"}, "x509.SystemCertPool reads $SSL_CERT_FILE and $SSL_CERT_DIR"},
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

// StdEnvReads returns the variables fn, a standard library function,
// reads without the call naming them (os.Getwd: PWD), or ok false.
func StdEnvReads(fn *types.Func) (EnvAccess, bool) {
	if fn == nil {
		return EnvAccess{}, false
	}
	a, ok := stdEnvReads[Key(fn)]
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

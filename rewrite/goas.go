package rewrite

import (
	"go/ast"
	"go/types"
	"go/version"
)

// raisedInfo returns info for a package whose module is analysed as go
// version to instead of declared: the files that take their version from
// the module get to. A file with a //go:build go1.N line keeps the
// version the type-checker gave it, since raising go.mod does not change
// it. The loaded package's files were checked at the declared version;
// the engine's own re-checks already use to, which this leaves as it is.
func raisedInfo(info *types.Info, files []*ast.File, declared, to string) *types.Info {
	c := *info
	c.FileVersions = make(map[*ast.File]string, len(info.FileVersions))
	for f, v := range info.FileVersions {
		c.FileVersions[f] = v
	}
	for _, f := range files {
		if v := c.FileVersions[f]; f.GoVersion == "" && (v == "" || version.Lang(v) == version.Lang(declared)) {
			c.FileVersions[f] = to
		}
	}
	return &c
}

// granted records in s that a pass granted a feature of go version min:
// when the declared version would have refused it, the fixes of the
// session need at least min (Finding.NeedsGo).
func (s *session) granted(declared, min string) {
	min = version.Lang(min)
	if version.Compare(min, version.Lang(declared)) <= 0 {
		return
	}
	if s.needsGo == "" || version.Compare(min, s.needsGo) > 0 {
		s.needsGo = min
	}
}

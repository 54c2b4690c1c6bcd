package cli

import (
	"runtime/debug"
	"strings"
)

// version says which unflake this is: the module version the go command
// stamped ("(devel)" for a build from a clone, a pseudo-version or a tag)
// and the VCS revision, marked when the tree had local changes.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown: no build information)"
	}
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	var extra []string
	if rev != "" {
		extra = append(extra, "revision "+rev)
		if modified == "true" {
			extra = append(extra, "modified")
		}
	}
	if bi.GoVersion != "" {
		extra = append(extra, "built with "+bi.GoVersion)
	}
	if len(extra) > 0 {
		v += " (" + strings.Join(extra, ", ") + ")"
	}
	return v
}

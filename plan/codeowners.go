package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Owners is a parsed CODEOWNERS file.
type Owners struct {
	rules []ownerRule
}

// ownerRule is one "pattern owner..." line.
type ownerRule struct {
	segs    []string // pattern segments; "**" matches any number of segments
	dirOnly bool     // the pattern ended in "/": it names directories only
	descend bool     // a matched directory owns everything below it
	owners  []string // empty: the rule un-owns what it matches
}

// ParseCodeowners parses GitHub CODEOWNERS syntax: one "pattern owner..."
// rule per line, # comments, blank lines; a pattern with no owners
// un-owns. Errors carry the line number ("CODEOWNERS:3: ...") for
// malformed lines: GitHub ignores such a line, which would silently route
// a batch to the wrong reviewers, so the plan refuses instead.
func ParseCodeowners(data []byte) (*Owners, error) {
	o := &Owners{}
	for i, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		// GitHub allows a comment after the owners ("*.js @a # note").
		for j, f := range fields {
			if strings.HasPrefix(f, "#") {
				fields = fields[:j]
				break
			}
		}
		if len(fields) == 0 {
			continue
		}
		r, err := parseRule(fields[0])
		if err == nil {
			for _, owner := range fields[1:] {
				// @user, @org/team or an e-mail address; anything else
				// is most likely a pattern with an unescaped space.
				if !strings.Contains(owner, "@") {
					err = fmt.Errorf("owner %q is neither @name nor an e-mail address", owner)
					break
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("CODEOWNERS:%d: %v", i+1, err)
		}
		r.owners = fields[1:]
		o.rules = append(o.rules, r)
	}
	return o, nil
}

// parseRule compiles a pattern with gitignore's anchoring rules and the
// exceptions GitHub documents for CODEOWNERS.
func parseRule(pat string) (ownerRule, error) {
	switch {
	case strings.HasPrefix(pat, "!"):
		return ownerRule{}, fmt.Errorf("pattern %q: negation (!) is not supported by GitHub", pat)
	case strings.Contains(pat, `\`):
		return ownerRule{}, fmt.Errorf("pattern %q: escapes (\\) are not supported", pat)
	case strings.ContainsAny(pat, "[]"):
		return ownerRule{}, fmt.Errorf("pattern %q: character ranges ([...]) are not supported by GitHub", pat)
	}
	r := ownerRule{}
	body := pat
	if strings.HasSuffix(body, "/") {
		r.dirOnly = true
		body = strings.TrimRight(body, "/")
	}
	// A slash at the start or in the middle anchors the pattern at the
	// root; otherwise it matches at any depth.
	anchored := strings.Contains(body, "/")
	for s := range strings.SplitSeq(body, "/") {
		if s != "" {
			r.segs = append(r.segs, s)
		}
	}
	if len(r.segs) == 0 {
		return ownerRule{}, fmt.Errorf("pattern %q matches nothing", pat)
	}
	if !anchored && r.segs[0] != "**" {
		r.segs = append([]string{"**"}, r.segs...)
	}
	// GitHub: "docs/*" owns the files directly in docs, not docs/a/b.
	// A last segment with a wildcard (other than "**") therefore names
	// entries, not trees.
	last := r.segs[len(r.segs)-1]
	r.descend = last == "**" || !strings.ContainsAny(last, "*?")
	return r, nil
}

// Of returns the owners of a slash-separated path relative to the
// repository root: the last matching rule wins, as on GitHub; nil if none
// (or if that rule un-owns the path).
func (o *Owners) Of(p string) []string {
	if o == nil {
		return nil
	}
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if p == "" {
		return nil
	}
	segs := strings.Split(p, "/")
	for i := len(o.rules) - 1; i >= 0; i-- {
		r := o.rules[i]
		if r.matches(segs) {
			if len(r.owners) == 0 {
				return nil
			}
			return append([]string(nil), r.owners...)
		}
	}
	return nil
}

// matches reports whether the rule owns the file at segs: the pattern
// matches the file itself or, when the rule descends, one of its
// directories.
func (r ownerRule) matches(segs []string) bool {
	if !r.dirOnly && matchSegs(r.segs, segs) {
		return true
	}
	if !r.descend && !r.dirOnly {
		return false
	}
	for k := len(segs) - 1; k >= 1; k-- {
		if matchSegs(r.segs, segs[:k]) {
			return true
		}
	}
	return false
}

// matchSegs reports whether the pattern segments match the path segments
// exactly; "**" matches zero or more whole segments.
func matchSegs(pat, segs []string) bool {
	if len(pat) == 0 {
		return len(segs) == 0
	}
	if pat[0] == "**" {
		for k := 0; k <= len(segs); k++ {
			if matchSegs(pat[1:], segs[k:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	// Patterns hold no "[" or "\" (rejected when parsed), so path.Match
	// cannot fail: only "*" and "?" are special and neither crosses "/".
	ok, _ := path.Match(pat[0], segs[0])
	return ok && matchSegs(pat[1:], segs[1:])
}

// codeownersPlaces are where GitHub looks for CODEOWNERS, in its order.
var codeownersPlaces = []string{".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"}

// FindCodeowners looks for CODEOWNERS in root/.github/, root/, root/docs/
// in that order (GitHub uses the first it finds) and returns its path
// relative to root, slash separated ("" if none), and its content.
func FindCodeowners(root string) (string, []byte, error) {
	for _, rel := range codeownersPlaces {
		name := filepath.Join(root, filepath.FromSlash(rel))
		fi, err := os.Stat(name)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.IsDir()) {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		data, err := os.ReadFile(name)
		if err != nil {
			return "", nil, err
		}
		return rel, data, nil
	}
	return "", nil, nil
}

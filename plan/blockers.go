package plan

import (
	"cmp"
	"slices"
	"strings"
	"unicode"

	"github.com/unflake/unflake/rewrite"
)

// tally counts findings under a key, and the measured time of the
// distinct top-level tests they are in.
type tally map[string]*tallied

type tallied struct {
	count int
	tests map[testKey]int64
}

type testKey struct{ pkg, test string }

func (t tally) add(key string, f rewrite.Finding) {
	e := t[key]
	if e == nil {
		e = &tallied{tests: map[testKey]int64{}}
		t[key] = e
	}
	e.count++
	if f.MeasuredMs > 0 {
		top, _, _ := strings.Cut(f.Test, "/")
		k := testKey{f.Package, top}
		e.tests[k] = max(e.tests[k], f.MeasuredMs)
	}
}

func (e *tallied) heldMs() int64 {
	var ms int64
	for _, t := range e.tests {
		ms += t
	}
	return ms
}

// counts lists the tally, the most measured time first (what a
// campaign should work on), then the most common, ties by key.
func (t tally) counts() []ReasonCount {
	out := []ReasonCount{}
	for r, e := range t {
		out = append(out, ReasonCount{Reason: r, Count: e.count, HeldMs: e.heldMs()})
	}
	slices.SortFunc(out, func(a, b ReasonCount) int {
		return cmp.Or(cmp.Compare(b.HeldMs, a.HeldMs), cmp.Compare(b.Count, a.Count), strings.Compare(a.Reason, b.Reason))
	})
	return out
}

// kinds groups the blockers of the findings not fixed by kind (kindOf
// their headline), counting each finding once per kind.
func kinds(fs []rewrite.Finding) []KindCount {
	type group struct {
		findings tally // one key: the kind
		sites    map[string]int
	}
	groups := map[string]*group{}
	for _, f := range fs {
		if f.Fixed {
			continue
		}
		bs := f.Blockers
		if len(bs) == 0 {
			bs = []string{f.Reason}
		}
		seen := map[string]bool{}
		for _, b := range bs {
			h := headline(b)
			k := kindOf(h)
			g := groups[k]
			if g == nil {
				g = &group{findings: tally{}, sites: map[string]int{}}
				groups[k] = g
			}
			g.sites[h]++
			if !seen[k] {
				seen[k] = true
				g.findings.add(k, f)
			}
		}
	}
	out := []KindCount{}
	for k, g := range groups {
		e := g.findings[k]
		var example string
		for h, n := range g.sites {
			if example == "" || n > g.sites[example] || n == g.sites[example] && h < example {
				example = h
			}
		}
		out = append(out, KindCount{Example: example, Others: len(g.sites) - 1, Count: e.count, HeldMs: e.heldMs()})
	}
	slices.SortFunc(out, func(a, b KindCount) int {
		return cmp.Or(cmp.Compare(b.HeldMs, a.HeldMs), cmp.Compare(b.Count, a.Count), strings.Compare(a.Example, b.Example))
	})
	return out
}

// kindOf is a blocker headline without what it names: the text in
// brackets (the wait, the goroutine's function, the duration) and every
// word with a dot in it (a file:line, a qualified name, a go version).
// "the test starts goroutines the analysis cannot show end (a go
// statement in Stop)" and "... (a go statement in Start)" are one kind;
// "the module's go version is go1.12; ..." and "... go1.16; ..." too.
func kindOf(h string) string {
	var b strings.Builder
	depth := 0
	for _, r := range h {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	words := strings.Fields(b.String())
	kept := words[:0]
	for _, w := range words {
		if strings.Contains(strings.TrimRightFunc(w, unicode.IsPunct), ".") {
			continue
		}
		kept = append(kept, w)
	}
	return strings.Join(kept, " ")
}

// headline is a blocker's first clause, up to the ": " that starts its
// explanation ("mu held from chain.go:66 across j.Run at chain.go:71,
// which waits (...)" of "...: in a synctest bubble a goroutine waiting
// for the lock is not durably blocked, ..."): the table says what holds
// the findings back, and the JSON plan and check say why.
func headline(blocker string) string {
	depth := 0
	for i, r := range blocker {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ':':
			if depth == 0 && strings.HasPrefix(blocker[i:], ": ") {
				return blocker[:i]
			}
		}
	}
	return blocker
}

// Package plan turns an analysis result into a campaign plan: the files
// the fixes change, grouped into batches small enough to review, each
// routed to its code owners. It is pure logic: the CLI runs the analysis,
// reads CODEOWNERS and prints the plan (see docs/plan.md for the schema).
package plan

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"path"
	"slices"
	"strings"

	"github.com/unflake/unflake/internal/output"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// Version is the plan format's version, bumped on incompatible changes so
// that `fix --plan` can refuse a plan it would misread.
const Version = 1

// Estimate kinds.
const (
	EstimateStatic   = "static"
	EstimateMeasured = "measured"
)

// Options shape the batches.
type Options struct {
	MaxFiles   int     // files per batch (values below 1 count as 1)
	MaxLines   int     // changed lines per batch; 0 means no limit
	Owners     *Owners // nil: no CODEOWNERS
	OwnersFile string  // its path, recorded in the plan
	// RepoPrefix is the path of the analysed directory relative to the
	// repository root ("" when they are the same, else "sub/dir"), to
	// match CODEOWNERS patterns, which are relative to the root.
	RepoPrefix string
}

// Input is what the analysis found. Findings have File relative to the
// analysed directory (slash separated). Changes maps such a relative path
// to the file's old and new content (only files the fixes change; go.mod
// and go.sum may appear: they are module files, not batch files, and are
// ignored for batching).
type Input struct {
	Findings []rewrite.Finding
	Changes  map[string]FileChange
	// GoRaises is what raising the modules' go directives would unlock
	// (see GoRaises); nil when that was not looked at.
	GoRaises []GoRaise
}

// FileChange is one file's content before and after the fixes.
type FileChange struct{ Old, New []byte }

// Plan is the campaign plan; its JSON form is the documented plan file.
type Plan struct {
	Version    int           `json:"version"`
	Estimate   string        `json:"estimate"`
	MaxFiles   int           `json:"maxFiles"`
	MaxLines   int           `json:"maxLines"`
	Codeowners string        `json:"codeowners"`
	Batches    []Batch       `json:"batches"`
	Rules      []RuleSummary `json:"rules"`
	// GoRaise lists, per module, the fixes a newer go directive would
	// unlock (fix --raise-go applies them); [] when there are none.
	GoRaise []GoRaise `json:"goRaise"`
	Totals  Totals    `json:"totals"`
}

// Batch is one pull request's worth of files.
type Batch struct {
	ID                int      `json:"id"`
	Owners            []string `json:"owners"`
	Packages          []string `json:"packages"`
	Files             []File   `json:"files"`
	Findings          int      `json:"findings"`
	Fixable           int      `json:"fixable"`
	ChangedLines      int      `json:"changedLines"`
	EstimatedSavingMs int64    `json:"estimatedSavingMs"`
}

// File is one file of a batch.
type File struct {
	Path         string   `json:"path"`
	SHA256       string   `json:"sha256"` // of the old content: `fix --plan` refuses a file edited since
	ChangedLines int      `json:"changedLines"`
	Findings     []string `json:"findings"`
}

// RuleSummary is what one rule found across the whole input.
type RuleSummary struct {
	Rule       string        `json:"rule"`
	Findings   int           `json:"findings"`
	Fixable    int           `json:"fixable"`
	NotFixable []ReasonCount `json:"notFixable"`
	// Blockers counts each blocker on its own: how many of the findings
	// not fixed it holds back (a finding with several counts under each),
	// the most common first. It says what to work on across a repository
	// (raise the go line, a lock in one helper) where NotFixable's exact
	// reasons, each a combination, are all different.
	Blockers []ReasonCount `json:"blockers"`
	// Kinds groups Blockers by kind: blockers that differ only in what
	// their headline names (a site, a function, the text in brackets)
	// are one kind, counted once per finding. It is what the Markdown
	// table shows, where forty sites of one hazard would be forty lines.
	Kinds []KindCount `json:"kinds"`
	// HeldMs is the measured time (--from-json, --measure) of the
	// distinct top-level tests with a finding not fixed: what the
	// blockers cost the suite. 0 when no test was timed.
	HeldMs            int64 `json:"heldMs,omitempty"`
	EstimatedSavingMs int64 `json:"estimatedSavingMs"`
}

// ReasonCount counts the findings not fixed for one reason.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
	// HeldMs is the measured time of the distinct top-level tests those
	// findings are in; 0 when none was timed.
	HeldMs int64 `json:"heldMs,omitempty"`
}

// KindCount counts the findings not fixed for one kind of blocker.
type KindCount struct {
	// Example is the kind's most common blocker, cut at the ": " that
	// starts its explanation.
	Example string `json:"example"`
	// Others is how many other blockers of the kind there are (other
	// sites of the same hazard).
	Others int   `json:"others"`
	Count  int   `json:"count"`
	HeldMs int64 `json:"heldMs,omitempty"`
}

// Totals sum up the plan.
type Totals struct {
	Findings          int   `json:"findings"`
	Fixable           int   `json:"fixable"`
	NotFixable        int   `json:"notFixable"`
	Batches           int   `json:"batches"`
	Files             int   `json:"files"`
	ChangedLines      int   `json:"changedLines"`
	EstimatedSavingMs int64 `json:"estimatedSavingMs"`
}

// batchFile is a batch file while the batches are built.
type batchFile struct {
	File
	owners   []string
	findings []rewrite.Finding
}

// Make builds the plan. The result depends only on the input's content,
// never on map or slice order, so the same analysis gives the same plan.
func Make(in Input, opts Options) *Plan {
	opts.MaxFiles = max(opts.MaxFiles, 1)
	opts.MaxLines = max(opts.MaxLines, 0)
	measured := slices.ContainsFunc(in.Findings, func(f rewrite.Finding) bool {
		return f.Fixed && (f.Verified || f.MeasuredMs > 0)
	})
	p := &Plan{
		Version:    Version,
		Estimate:   EstimateStatic,
		MaxFiles:   opts.MaxFiles,
		MaxLines:   opts.MaxLines,
		Codeowners: opts.OwnersFile,
		Batches:    []Batch{},
		Rules:      summarizeRules(in.Findings, measured),
		GoRaise:    slices.Clone(in.GoRaises),
	}
	if p.GoRaise == nil {
		p.GoRaise = []GoRaise{}
	}
	if measured {
		p.Estimate = EstimateMeasured
	}

	files := batchFiles(in, opts)
	for _, group := range groupByOwners(files) {
		for _, chunk := range split(group, opts) {
			p.Batches = append(p.Batches, newBatch(len(p.Batches)+1, chunk, measured))
		}
	}
	if measured {
		rank(p.Batches, files)
	}

	t := &p.Totals
	t.Findings = len(in.Findings)
	for _, f := range in.Findings {
		if f.Fixed {
			t.Fixable++
		}
	}
	t.NotFixable = t.Findings - t.Fixable
	t.Batches = len(p.Batches)
	for _, b := range p.Batches {
		t.Files += len(b.Files)
		t.ChangedLines += b.ChangedLines
	}
	// Over all findings rather than the sum of the batches: under the
	// measured estimate a test counts once however its fixes are split.
	t.EstimatedSavingMs = saving(in.Findings, measured)
	return p
}

// batchFiles returns the files with at least one fixable finding and a
// change, each with all its findings, in no particular order.
func batchFiles(in Input, opts Options) []*batchFile {
	byFile := map[string][]rewrite.Finding{}
	for _, f := range in.Findings {
		byFile[f.File] = append(byFile[f.File], f)
	}
	var out []*batchFile
	for name, fs := range byFile {
		ch, ok := in.Changes[name]
		if !ok || isModuleFile(name) || !slices.ContainsFunc(fs, func(f rewrite.Finding) bool { return f.Fixed }) {
			continue
		}
		sortFindings(fs)
		sum := sha256.Sum256(ch.Old)
		bf := &batchFile{
			File: File{
				Path:         name,
				SHA256:       hex.EncodeToString(sum[:]),
				ChangedLines: output.CountChangedLines(ch.Old, ch.New),
				Findings:     make([]string, len(fs)),
			},
			owners:   ownerSet(opts.Owners.Of(path.Join(opts.RepoPrefix, name))),
			findings: fs,
		}
		for i, f := range fs {
			bf.Findings[i] = f.ID
		}
		out = append(out, bf)
	}
	return out
}

// isModuleFile reports go.mod and go.sum (of any module in the tree):
// they change only to support a fix and go with whichever batch needs it.
func isModuleFile(name string) bool {
	base := path.Base(name)
	return base == "go.mod" || base == "go.sum"
}

// ownerSet sorts and deduplicates owners, so that the same people listed
// in another order form the same group; never nil, so JSON shows [].
func ownerSet(owners []string) []string {
	out := slices.Clone(owners)
	slices.Sort(out)
	out = slices.Compact(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// groupByOwners groups files by owner set, groups ordered by their owner
// string with the unowned group last, files in tree order.
func groupByOwners(files []*batchFile) [][]*batchFile {
	groups := map[string][]*batchFile{}
	for _, f := range files {
		k := strings.Join(f.owners, " ")
		groups[k] = append(groups[k], f)
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		// Unowned files last: they need someone to pick them up.
		if (a == "") != (b == "") {
			if a == "" {
				return 1
			}
			return -1
		}
		return strings.Compare(a, b)
	})
	out := make([][]*batchFile, len(keys))
	for i, k := range keys {
		g := groups[k]
		slices.SortFunc(g, func(a, b *batchFile) int { return comparePaths(a.Path, b.Path) })
		out[i] = g
	}
	return out
}

// comparePaths orders paths as a walk of the directory tree: a directory's
// own files (by name), then its subdirectories (by name). Plain string
// order would interleave a directory's files with its subdirectories
// ("a/b/x" < "a/c" < "a/d/y"), cutting runs of one subtree into pieces.
func comparePaths(a, b string) int {
	// slices.Compare puts a prefix first: a directory before its
	// subdirectories.
	if c := slices.Compare(dirSegs(a), dirSegs(b)); c != 0 {
		return c
	}
	return strings.Compare(path.Base(a), path.Base(b))
}

func dirSegs(p string) []string {
	d := path.Dir(p)
	if d == "." {
		return nil
	}
	return strings.Split(d, "/")
}

// topDir is the directory of p cut to its first two levels: the unit the
// batching prefers not to split ("." for files at the top).
func topDir(p string) string {
	segs := dirSegs(p)
	if len(segs) == 0 {
		return "."
	}
	return strings.Join(segs[:min(len(segs), 2)], "/")
}

// split cuts one owner group, in tree order, into batches: a batch closes
// when the next file would exceed MaxFiles or MaxLines, or, once it is at
// least half full, when the next file leaves the batch's top-two-level
// directory, so that reviewers get whole parts of the tree where possible.
// A file is never split; one over MaxLines gets a batch of its own.
func split(files []*batchFile, opts Options) [][]*batchFile {
	var out [][]*batchFile
	var cur []*batchFile
	lines := 0
	for _, f := range files {
		if n := len(cur); n > 0 {
			full := n+1 > opts.MaxFiles ||
				(opts.MaxLines > 0 && lines+f.ChangedLines > opts.MaxLines) ||
				(2*n >= opts.MaxFiles && topDir(f.Path) != topDir(cur[n-1].Path))
			if full {
				out = append(out, cur)
				cur, lines = nil, 0
			}
		}
		cur = append(cur, f)
		lines += f.ChangedLines
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func newBatch(id int, files []*batchFile, measured bool) Batch {
	b := Batch{ID: id, Owners: files[0].owners, Files: make([]File, len(files))}
	var all []rewrite.Finding
	pkgs := []string{}
	for i, f := range files {
		b.Files[i] = f.File
		b.ChangedLines += f.ChangedLines
		for _, fd := range f.findings {
			all = append(all, fd)
			pkgs = append(pkgs, fd.Package)
			if fd.Fixed {
				b.Fixable++
			}
		}
	}
	slices.Sort(pkgs)
	b.Packages = slices.Compact(pkgs)
	b.Findings = len(all)
	b.EstimatedSavingMs = saving(all, measured)
	return b
}

// summarizeRules gives one entry per rule present, by name.
func summarizeRules(findings []rewrite.Finding, measured bool) []RuleSummary {
	byRule := map[string][]rewrite.Finding{}
	for _, f := range findings {
		byRule[f.Rule] = append(byRule[f.Rule], f)
	}
	out := []RuleSummary{}
	for name, fs := range byRule {
		s := RuleSummary{Rule: name, Findings: len(fs)}
		reasons, blockers, held := tally{}, tally{}, tally{} // held: every finding not fixed, under ""
		for _, f := range fs {
			if f.Fixed {
				s.Fixable++
				continue
			}
			reasons.add(f.Reason, f)
			held.add("", f)
			bs := f.Blockers
			if len(bs) == 0 {
				bs = []string{f.Reason}
			}
			for _, b := range bs {
				blockers.add(b, f)
			}
		}
		s.NotFixable = reasons.counts()
		s.Blockers = blockers.counts()
		s.Kinds = kinds(fs)
		if e := held[""]; e != nil {
			s.HeldMs = e.heldMs()
		}
		s.EstimatedSavingMs = saving(fs, measured)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b RuleSummary) int { return strings.Compare(a.Rule, b.Rule) })
	return out
}

// saving estimates the time the fixable findings among fs save.
//
// Static: the sum of their SavingMs (the sleeps removed, the polls
// bounded). Measured: a test's time falls once however many fixes it
// gets, so each distinct (package, top-level test) among the fixable
// findings adds its gain once:
//   - timed before and after the fixes (--verify): the measured gain; a
//     test that got slower adds 0 (verification keeps no fix that
//     breaks a test, and noise should not cancel real gains);
//   - timed before only (go test -json: Finding.MeasuredMs): its whole
//     time when a fix puts it on a virtual clock, which then costs next
//     to nothing, else its fixes' static saving up to that time;
//   - not timed: nothing.
func saving(fs []rewrite.Finding, measured bool) int64 {
	var total int64
	if !measured {
		for _, f := range fs {
			if f.Fixed {
				total += f.SavingMs
			}
		}
		return total
	}
	type key struct{ pkg, test string }
	type gain struct {
		verified bool
		ms       int64 // the measured gain, when verified
		before   int64 // the measured time before, from go test -json
		static   int64 // the fixes' static saving
		virtual  bool  // a fix changes the clock
	}
	gains := map[key]*gain{}
	for _, f := range fs {
		if !f.Fixed {
			continue
		}
		test, _, _ := strings.Cut(f.Test, "/")
		k := key{f.Package, test}
		g := gains[k]
		if g == nil {
			g = &gain{}
			gains[k] = g
		}
		if f.Verified {
			// The findings of one test carry the same measurement;
			// max rather than first keeps the result independent of
			// order.
			g.verified, g.ms = true, max(g.ms, f.BeforeMs-f.AfterMs)
		}
		g.before = max(g.before, f.MeasuredMs)
		g.static += f.SavingMs
		g.virtual = g.virtual || slices.ContainsFunc(f.Changes, func(c rule.Change) bool { return c.Kind == rule.Clock })
	}
	for _, g := range gains {
		switch {
		case g.verified:
			total += g.ms
		case g.virtual:
			total += g.before
		default:
			total += min(g.static, g.before)
		}
	}
	return total
}

// rank orders measured batches by what they are worth: those with a test
// that failed and passed in the measured runs (flaky) first, then by
// seconds saved, the larger first, ties in their order; the IDs follow
// the new order.
func rank(batches []Batch, files []*batchFile) {
	flaky := map[string]bool{}
	for _, f := range files {
		for _, fd := range f.findings {
			if fd.Flaky {
				flaky[f.Path] = true
			}
		}
	}
	isFlaky := func(b Batch) bool {
		return slices.ContainsFunc(b.Files, func(f File) bool { return flaky[f.Path] })
	}
	slices.SortStableFunc(batches, func(a, b Batch) int {
		fa, fb := isFlaky(a), isFlaky(b)
		if fa != fb {
			if fa {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.EstimatedSavingMs, a.EstimatedSavingMs)
	})
	for i := range batches {
		batches[i].ID = i + 1
	}
}

// sortFindings orders a file's findings by position, then rule and id,
// so their ids list the same way whatever order the analysis gave.
func sortFindings(fs []rewrite.Finding) {
	slices.SortStableFunc(fs, func(a, b rewrite.Finding) int {
		return cmp.Or(
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Col, b.Col),
			strings.Compare(a.Rule, b.Rule),
			strings.Compare(a.ID, b.ID),
		)
	})
}

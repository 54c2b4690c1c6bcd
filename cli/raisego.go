package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	goversion "go/version"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/modedit"
	"github.com/unflake/unflake/internal/verify"
	"github.com/unflake/unflake/plan"
	"github.com/unflake/unflake/rewrite"
)

// goRaises analyses the files where res left a finding unfixed once more,
// with every main module's go version raised to the newest the installed
// toolchain supports, and returns what that unlocks per module (module
// directories relative to base). It never changes a file.
//
// With unproven set, fixes the raised analysis leaves unproven count too:
// the caller verifies them (--verify).
func (o *options) goRaises(patterns []string, res *rewrite.Result, base string, unproven bool) ([]plan.GoRaise, error) {
	raised, _, err := o.raisedFindings(patterns, res)
	if err != nil {
		return nil, err
	}
	hyp := plan.ProvenOnly
	if unproven {
		hyp = plan.Verifiable
	}
	return plan.GoRaises(res.Findings, raised, moduleOf(base), hyp), nil
}

// raisedAt analyses the files where res left a finding unfixed once
// more, with every main module's go version raised to ver (a module
// declaring a newer one keeps it), and returns the findings.
func (o *options) raisedAt(patterns []string, res *rewrite.Result, ver string) ([]rewrite.Finding, error) {
	unfixed := map[string]bool{}
	for _, f := range res.Findings {
		if !f.Fixed {
			unfixed[f.File] = true
		}
	}
	cfg, err := o.engineConfig(patterns)
	if err != nil {
		return nil, err
	}
	prev := cfg.Only
	cfg.Only = func(path string) bool { return unfixed[path] && (prev == nil || prev(path)) }
	cfg.GoAs = func(string) string { return ver }
	cfg.Progress = nil
	out, err := rewrite.Run(cfg)
	if err != nil {
		return nil, err
	}
	return out.Findings, nil
}

// raisedFindings analyses the files where res left a finding unfixed
// once more, with every main module's go version raised to the newest the
// installed toolchain supports (top), and returns the findings. It never
// changes a file. With nothing unfixed there is nothing to analyse.
func (o *options) raisedFindings(patterns []string, res *rewrite.Result) (raised []rewrite.Finding, top string, err error) {
	if !slices.ContainsFunc(res.Findings, func(f rewrite.Finding) bool { return !f.Fixed }) {
		return nil, "", nil
	}
	cfg, err := o.engineConfig(patterns)
	if err != nil {
		return nil, "", err
	}
	if top, err = toolchainGo(cfg); err != nil {
		return nil, "", err
	}
	raised, err = o.raisedAt(patterns, res, top)
	return raised, top, err
}

// toolchainGo is the newest go language version ("go1.26") that both the
// installed go command and unflake's own type-checker support: the
// highest a module's go line can be raised to here.
func toolchainGo(cfg *rewrite.Config) (string, error) {
	cmd := exec.Command("go", "env", "GOVERSION")
	cmd.Dir, cmd.Env = cfg.Dir, cfg.Env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	v := goversion.Lang(strings.TrimSpace(string(out)))
	if own := goversion.Lang(runtime.Version()); own != "" && (v == "" || goversion.Compare(own, v) < 0) {
		v = own
	}
	if v == "" {
		return "", fmt.Errorf("go env GOVERSION: %q is not a go version", strings.TrimSpace(string(out)))
	}
	return v, nil
}

// moduleOf returns the module directory of a file, relative to base.
func moduleOf(base string) func(file string) string {
	return func(file string) string { return rel(base, moduleDir(file)) }
}

// moduleDir is the directory of the nearest go.mod at or above file's.
func moduleDir(file string) string {
	start := filepath.Dir(file)
	for d := start; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return start
		}
		d = parent
	}
}

// raisedFix is fix --raise-go: it learns what a raise unlocks per module
// (counting the unproven fixes under --verify), runs the analysis with
// those modules at their new versions (verified under --verify), and adds
// each raised go.mod to the changes, at the version the analysis ran at.
// A module whose unlocked fixes were all held back is not raised. With no
// unlocked fix it is the plain analysis, and held says why the raise
// unlocks nothing (raiseHeld), for the summary.
func (o *options) raisedFix(patterns []string) (res *rewrite.Result, v *verify.Verification, base string, raises []plan.GoRaise, held string, err error) {
	cfg, err := o.engineConfig(patterns)
	if err != nil {
		return nil, nil, "", nil, "", err
	}
	base = cfg.Dir
	static, err := rewrite.Run(cfg)
	if err != nil {
		return nil, nil, "", nil, "", err
	}
	raised, top, err := o.raisedFindings(patterns, static)
	if err != nil {
		return nil, nil, "", nil, "", err
	}
	raises = plan.GoRaises(static.Findings, raised, moduleOf(base), o.hypotheses())
	if len(raises) == 0 {
		res, v, base, err := o.analyse(patterns)
		if top == "" || err != nil {
			return res, v, base, nil, "", err // every finding is fixed
		}
		held := plan.GoHolds(static.Findings, raised)
		to, verr := o.heldVersion(patterns, static, held, top)
		if verr != nil {
			return nil, nil, "", nil, "", verr
		}
		return res, v, base, nil, raiseHeld(to, held, o.verify), err
	}
	// Verification may hold back every fix a raise unlocks in a module:
	// then its go line stays, and the analysis runs again without its
	// raise (the fixes that remain must not use what it would allow).
	for {
		res, v, err := o.runRaised(patterns, raises, base)
		if err != nil {
			return nil, nil, "", nil, "", err
		}
		kept := map[string]plan.GoRaise{}
		for _, r := range plan.GoRaises(static.Findings, res.Findings, moduleOf(base), plan.ProvenOnly) {
			kept[r.Module] = r
		}
		var still []plan.GoRaise
		lower := false
		for _, r := range raises {
			if k, ok := kept[r.Module]; ok {
				// The go line goes to the version the analysis ran at;
				// when verification held back the fixes that needed
				// the highest, the analysis runs again at the lowest
				// the kept ones need.
				r.Fixes, r.EstimatedSavingMs = k.Fixes, k.EstimatedSavingMs
				if goversion.Compare(k.To, r.To) < 0 {
					r.To, lower = k.To, true
				}
				still = append(still, r)
			}
		}
		if len(still) == len(raises) && !lower {
			var notes []string
			for _, r := range raises {
				gomod := filepath.Join(base, filepath.FromSlash(r.Module), "go.mod")
				if err := raiseGoLine(res, gomod, r.To); err != nil {
					return nil, nil, "", nil, "", err
				}
				if err := completeSum(res, gomod); err != nil {
					notes = append(notes, "unflake: "+rel(base, gomod)+" raised, but its go.sum could not be checked (run go mod tidy): "+oneLine(err.Error()))
				}
			}
			slices.SortFunc(res.Changes, func(a, b rewrite.Change) int { return strings.Compare(a.Path, b.Path) })
			return res, v, base, raises, strings.Join(notes, "\n"), nil
		}
		if len(still) == 0 {
			res, v, base, err := o.analyse(patterns)
			return res, v, base, nil, "unflake: the go line stays: verification held back every fix a raise would unlock", err
		}
		raises = still
	}
}

// hypotheses says which unproven fixes a raise unlocks for this run:
// those verification may keep under --verify, every one in a review
// diff (--unproven), none otherwise.
func (o *options) hypotheses() plan.Hypotheses {
	switch {
	case o.verify:
		return plan.Verifiable
	case o.unproven:
		return plan.ForReview
	}
	return plan.ProvenOnly
}

// runRaised runs the analysis (verified under --verify) with each module
// of raises analysed at its To version; in a review diff (--unproven)
// every fix is applied, proven or not, as analyse does.
func (o *options) runRaised(patterns []string, raises []plan.GoRaise, base string) (*rewrite.Result, *verify.Verification, error) {
	// The go command may name a go.mod through another path (a symbolic
	// link in the directory): match by real path.
	to := map[string]string{}
	for _, r := range raises {
		to[realPath(filepath.Join(base, filepath.FromSlash(r.Module), "go.mod"))] = r.To
	}
	cfg, err := o.engineConfig(patterns)
	if err != nil {
		return nil, nil, err
	}
	cfg.GoAs = func(gomod string) string { return to[realPath(gomod)] }
	if o.verify {
		return o.runVerified(cfg)
	}
	if o.unproven {
		cfg.Decide = func(rewrite.Site) rewrite.Decision { return rewrite.Decision{} }
	}
	res, err := rewrite.Run(cfg)
	return res, nil, err
}

// realPath is path with symbolic links resolved, or path when that fails.
func realPath(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}

// raiseGoLine adds to res the change of gomod that sets its go line to
// version ver ("go1.25" is written "go 1.25.0"), on top of any change the
// fixes already make to it (added requirements), and drops a toolchain
// line older than that, as `go get go@1.25.0` does. The go command edits
// a copy: go.mod is not written here.
func raiseGoLine(res *rewrite.Result, gomod, ver string) error {
	i := slices.IndexFunc(res.Changes, func(c rewrite.Change) bool { return realPath(c.Path) == realPath(gomod) })
	var old, cur []byte
	mode := os.FileMode(0o644)
	if i >= 0 {
		old, cur, mode = res.Changes[i].Old, res.Changes[i].New, res.Changes[i].Mode
	} else {
		data, err := os.ReadFile(gomod)
		if err != nil {
			return err
		}
		old, cur = data, data
		if st, err := os.Stat(gomod); err == nil {
			mode = st.Mode().Perm()
		}
	}
	tmp, err := os.MkdirTemp("", "unflake-raisego-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	copyPath := filepath.Join(tmp, "go.mod")
	if err := os.WriteFile(copyPath, cur, 0o644); err != nil {
		return err
	}
	goEdit := func(args ...string) ([]byte, error) {
		cmd := exec.Command("go", append(append([]string{"mod", "edit"}, args...), copyPath)...)
		cmd.Dir = tmp
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("%s: go mod edit: %v: %s", gomod, err, strings.TrimSpace(stderr.String()))
		}
		return out, nil
	}
	out, err := goEdit("-json")
	if err != nil {
		return err
	}
	var mf struct{ Toolchain string }
	if err := json.Unmarshal(out, &mf); err != nil {
		return fmt.Errorf("%s: go mod edit -json: %v", gomod, err)
	}
	line := strings.TrimPrefix(ver, "go") + ".0"
	args := []string{"-go=" + line}
	if mf.Toolchain != "" && goversion.Compare(mf.Toolchain, "go"+line) <= 0 {
		args = append(args, "-toolchain=none")
	}
	if _, err := goEdit(args...); err != nil {
		return err
	}
	next, err := os.ReadFile(copyPath)
	if err != nil {
		return err
	}
	c := rewrite.Change{Path: gomod, Old: old, New: next, Mode: mode}
	if i >= 0 {
		res.Changes[i] = c
	} else {
		res.Changes = append(res.Changes, c)
	}
	return nil
}

// heldVersion is the go version a raise that unlocks nothing is named
// by: the lowest version, above the oldest go line of the modules with
// unfixed findings, at which the raised analysis holds back the same as
// at top (the toolchain's newest). That is the version the gates ask for
// (synctest's go1.25), not the toolchain's. It is found by bisecting the
// versions between (an analysis of the unfixed files each); with no
// finding the go version holds back, it is top.
func (o *options) heldVersion(patterns []string, static *rewrite.Result, held plan.GoHeld, top string) (string, error) {
	if held.Findings == 0 {
		return top, nil
	}
	oldest := top
	for _, f := range static.Findings {
		if d := declaredGo(filepath.Join(moduleDir(f.File), "go.mod")); !f.Fixed && d != "" && goversion.Compare(d, oldest) < 0 {
			oldest = d
		}
	}
	var candidates []string // oldest+1 … top-1
	for v := nextMinor(oldest); v != "" && goversion.Compare(v, top) < 0; v = nextMinor(v) {
		candidates = append(candidates, v)
	}
	lo, hi := 0, len(candidates) // candidates[hi:] and top hold back the same
	for lo < hi {
		mid := (lo + hi) / 2
		at, err := o.raisedAt(patterns, static, candidates[mid])
		if err != nil {
			return "", err
		}
		if reflect.DeepEqual(plan.GoHolds(static.Findings, at), held) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if hi < len(candidates) {
		return candidates[hi], nil
	}
	return top, nil
}

// goLine is the go directive of a go.mod.
var goLine = regexp.MustCompile(`(?m)^go\s+(\d+\.\d+)`)

// declaredGo is the go version ("go1.24") a go.mod declares, or "".
func declaredGo(gomod string) string {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return ""
	}
	if m := goLine.FindSubmatch(data); m != nil {
		return "go" + string(m[1])
	}
	return ""
}

// nextMinor is the go version after v ("go1.24" → "go1.25"), or "".
func nextMinor(v string) string {
	minor, err := strconv.Atoi(strings.TrimPrefix(goversion.Lang(v), "go1."))
	if err != nil {
		return ""
	}
	return "go1." + strconv.Itoa(minor+1)
}

// raiseHeld says, in one line, why raising the go line to ver (the
// version the findings' gates ask for) unlocks no fix: no finding waits
// for it, or the findings that do are held back by more than the go
// version (counted by the first other blocker, the three most common
// named), or the fixes it unlocks are unproven and only --verify would
// try them.
func raiseHeld(ver string, held plan.GoHeld, verify bool) string {
	if held.Findings == 0 {
		return "unflake: raising the go line would unlock no fix: no finding is held back by the go version"
	}
	top := ver
	s := "unflake: raising the go line to " + top + " would unlock no fix: "
	switch {
	case held.Unproven == held.Findings && !verify:
		var next []string
		if n := held.Unproven - held.Review; n > 0 {
			next = append(next, fmt.Sprintf("fix --raise-go --verify tries %s, which a run may keep", them(n, held.Unproven)))
		}
		if held.Review > 0 {
			next = append(next, fmt.Sprintf("fix --raise-go --diff --unproven shows %s for review only", them(held.Review, held.Unproven)))
		}
		s = fmt.Sprintf("unflake: raising the go line to %s would unlock no proven fix: the %s the go version holds back would still be unproven (%s): ", top, plural(held.Findings, "finding"), strings.Join(next, "; "))
	case held.Findings == 1:
		s += "the finding the go version holds back is held back by more: "
	default:
		s += fmt.Sprintf("the %d findings the go version holds back are held back by more: ", held.Findings)
	}
	var parts []string
	shown := 0
	for i, r := range held.By {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more for %s", held.Findings-shown, plural(len(held.By)-i, "other reason")))
			break
		}
		parts = append(parts, fmt.Sprintf("%d × %s", r.Count, r.Reason))
		shown += r.Count
	}
	s += strings.Join(parts, "; ")
	if n := held.Unproven - held.Review; n > 0 && held.Unproven < held.Findings && !verify {
		s += fmt.Sprintf(" (%d of them would be unproven fixes, which fix --raise-go --verify can try)", n)
	}
	if held.Review > 0 && (held.Unproven < held.Findings || verify) {
		switch {
		case held.Review == 1 && held.Findings == 1:
			s += " (it would be a fix for review only, which fix --raise-go --diff --unproven shows)"
		case held.Review == held.Findings:
			s += " (they would be fixes for review only, which fix --raise-go --diff --unproven shows)"
		default:
			s += fmt.Sprintf(" (%d of them would be fixes for review only, which fix --raise-go --diff --unproven shows)", held.Review)
		}
	}
	return s
}

// them names n of all findings: "it" or "them" when n is all of them,
// else "n of them".
func them(n, all int) string {
	switch {
	case n == all && n == 1:
		return "it"
	case n == all:
		return "them"
	}
	return fmt.Sprintf("%d of them", n)
}

// raiseSummary says which go lines fix --raise-go raised, for the summary:
// "raised go.mod to go1.25 (1 more fix)".
func raiseSummary(raises []plan.GoRaise, diff bool) string {
	verb := "raised"
	if diff {
		verb = "would raise"
	}
	var parts []string
	for _, r := range raises {
		parts = append(parts, fmt.Sprintf("%s %s to %s (unlocks %s)", verb, filepath.ToSlash(filepath.Join(r.Module, "go.mod")), r.To, plural(r.Fixes, "fix")))
	}
	return strings.Join(parts, "; ")
}

// completeSum adds to the go.sum of the module of gomod (in res.Changes)
// the entries that loading its packages needs once its go line is
// raised: a newer go line can change the module graph the go command
// loads (graph pruning, the checksums it keeps), and a go.sum the raise
// left short would fail the next build. It loads every package of the
// module and its tests, as rewritten (-overlay), with -mod=mod and
// -modfile pointing at a copy of the raised go.mod, so the go command
// adds what is missing to the copies (fetching through the user's own
// GOPROXY) and never touches the module; it removes nothing. A go.mod
// the go command completes (requirements a pruned graph must list) is
// taken too. A vendored module is left alone: its vendor directory, not
// go.sum, is what its builds read.
func completeSum(res *rewrite.Result, gomod string) error {
	dir := filepath.Dir(gomod)
	if _, err := os.Stat(filepath.Join(dir, "vendor", "modules.txt")); err == nil {
		return nil
	}
	mi := slices.IndexFunc(res.Changes, func(c rewrite.Change) bool { return realPath(c.Path) == realPath(gomod) })
	if mi < 0 {
		return nil
	}
	sumPath := filepath.Join(dir, "go.sum")
	si := slices.IndexFunc(res.Changes, func(c rewrite.Change) bool { return realPath(c.Path) == realPath(sumPath) })
	var sum []byte
	if si >= 0 {
		sum = res.Changes[si].New
	} else if data, err := os.ReadFile(sumPath); err == nil {
		sum = data
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	tmp, err := os.MkdirTemp("", "unflake-gosum-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	modCopy := filepath.Join(tmp, "go.mod")
	if err := os.WriteFile(modCopy, res.Changes[mi].New, 0o644); err != nil {
		return err
	}
	if sum != nil {
		if err := os.WriteFile(filepath.Join(tmp, "go.sum"), sum, 0o644); err != nil {
			return err
		}
	}
	replace := map[string]string{}
	for i, c := range res.Changes {
		if modedit.IsModFile(c.Path) || !strings.HasPrefix(c.Path, dir+string(filepath.Separator)) {
			continue
		}
		p := filepath.Join(tmp, strconv.Itoa(i)+"_"+filepath.Base(c.Path))
		if err := os.WriteFile(p, c.New, 0o644); err != nil {
			return err
		}
		replace[c.Path] = p
	}
	overlay, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "overlay.json"), overlay, 0o644); err != nil {
		return err
	}
	cmd := exec.Command("go", "list", "-mod=mod", "-modfile="+modCopy, "-overlay="+filepath.Join(tmp, "overlay.json"), "-deps", "-test", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go list: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	newSum, err := os.ReadFile(filepath.Join(tmp, "go.sum"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err == nil && !bytes.Equal(newSum, sum) {
		c := rewrite.Change{Path: sumPath, New: newSum, Mode: 0o644}
		if si >= 0 {
			c.Old, c.Mode = res.Changes[si].Old, res.Changes[si].Mode
			res.Changes[si] = c
		} else {
			c.Old = sum
			if st, err := os.Stat(sumPath); err == nil {
				c.Mode = st.Mode().Perm()
			}
			res.Changes = append(res.Changes, c)
		}
	}
	if newMod, err := os.ReadFile(modCopy); err == nil && !bytes.Equal(newMod, res.Changes[mi].New) {
		res.Changes[mi].New = newMod
	}
	return nil
}

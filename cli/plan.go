package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/unflake/unflake/plan"
	"github.com/unflake/unflake/rewrite"
)

func newPlanCmd(opts *options) *cobra.Command {
	var (
		asJSON             bool
		maxFiles, maxLines int
	)
	cmd := &cobra.Command{
		Use:   "plan [flags] PATTERNS",
		Short: "Split the fixes into reviewable batches for a migration campaign",
		Long: `Plan runs the analysis of check on the packages matching PATTERNS and
groups the fixable findings into batches sized for review (--max-files,
--max-lines), one pull request each. A file never splits across batches;
batches follow the directory tree and, where the repository has a
CODEOWNERS file (.github/, the root or docs/), its owners, so each batch has
one set of owners.

It prints Markdown for a tracking issue, or with --json the same as data
(the schema is in docs/plan.md); save that and apply one batch at a time
with: unflake fix --plan plan.json --batch K PATTERNS

The saving is a static estimate (constant sleeps removed, polls bounded);
with --verify the measured before/after test times replace it, and with
--from-json (a go test -json log) or --measure the tests' measured times:
batches are then ranked by them, those with a flaky test first.

Where a module's go directive holds fixes back (synctest needs go1.25),
the plan says per module how many more fixes the lowest go version that
unlocks them would give (goRaise); unflake fix --raise-go applies them.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxFiles < 1 {
				return fmt.Errorf("--max-files %d: must be at least 1", maxFiles)
			}
			if maxLines < 0 {
				return fmt.Errorf("--max-lines %d: must not be negative", maxLines)
			}
			return planRun(opts, args, asJSON, plan.Options{MaxFiles: maxFiles, MaxLines: maxLines})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the plan as JSON (the input of fix --plan)")
	f.IntVar(&maxFiles, "max-files", 20, "at most `N` files per batch")
	f.IntVar(&maxLines, "max-lines", 0, "at most `N` changed lines per batch (0: no limit)")
	addAnalysisFlags(cmd, opts)
	addVerifyFlags(cmd, opts)
	return cmd
}

func planRun(opts *options, patterns []string, asJSON bool, po plan.Options) error {
	res, _, base, err := opts.analyse(patterns)
	if err != nil {
		return err
	}
	// A plan that leaves out packages that failed to load would be
	// silently incomplete.
	if err := opts.reportErrors(res, base); err != nil {
		return err
	}
	in := plan.Input{Changes: map[string]plan.FileChange{}}
	for _, f := range res.Findings {
		f.File = rel(base, f.File)
		in.Findings = append(in.Findings, f)
	}
	for _, c := range res.Changes {
		in.Changes[rel(base, c.Path)] = plan.FileChange{Old: c.Old, New: c.New}
	}
	root := repoRoot(base)
	if p := rel(root, base); p != "." {
		po.RepoPrefix = p
	}
	ownersPath, data, err := plan.FindCodeowners(root)
	if err != nil {
		return err
	}
	if ownersPath != "" {
		owners, err := plan.ParseCodeowners(data)
		if err != nil {
			return fmt.Errorf("%s: %v", ownersPath, err)
		}
		po.Owners, po.OwnersFile = owners, ownersPath
	}
	if in.GoRaises, err = opts.goRaises(patterns, res, base, opts.verify); err != nil {
		return err
	}
	p := plan.Make(in, po)
	if asJSON {
		out, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(opts.stdout, "%s\n", out)
		return err
	}
	_, err = fmt.Fprint(opts.stdout, p.Markdown())
	return err
}

// repoRoot returns the nearest directory at or above dir holding .git (a
// directory, or a file in a worktree), or dir itself when there is none.
func repoRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// readPlan reads a plan saved by `plan --json`.
func readPlan(path string) (*plan.Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p plan.Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s: not a plan made by unflake plan --json: %v", path, err)
	}
	if p.Version != 1 {
		return nil, fmt.Errorf("%s: plan version %d, want 1", path, p.Version)
	}
	return &p, nil
}

// batchRun applies exactly batch k of the plan at planPath: only its files
// are analysed and rewritten. A file that changed since the plan was made
// is analysed again; if it now has a fix the plan did not list, the file
// is held back and the new findings are reported (exit 1), never applied
// blindly. Planned findings that are gone are reported too.
func batchRun(opts *options, patterns []string, planPath string, k int, diff bool) error {
	p, err := readPlan(planPath)
	if err != nil {
		return err
	}
	var batch *plan.Batch
	for i := range p.Batches {
		if p.Batches[i].ID == k {
			batch = &p.Batches[i]
		}
	}
	if batch == nil {
		return fmt.Errorf("--batch %d: the plan has batches 1 to %d", k, len(p.Batches))
	}
	cfg, err := opts.engineConfig(patterns)
	if err != nil {
		return err
	}
	base := cfg.Dir
	planned := map[string]plan.File{} // absolute path → planned file
	for _, f := range batch.Files {
		planned[filepath.Join(base, filepath.FromSlash(f.Path))] = f
	}
	prev := cfg.Only // --changed-since, if given
	only := func(keep map[string]plan.File) func(string) bool {
		return func(path string) bool {
			_, ok := keep[path]
			return ok && (prev == nil || prev(path))
		}
	}
	cfg.Only = only(planned)
	res, err := opts.runEngine(cfg)
	if err != nil {
		return err
	}

	// Which files still match the plan.
	held := map[string]bool{}
	var notes []string
	for path, f := range planned {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("%s: %v (the plan lists it)", f.Path, err)
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) == f.SHA256 {
			continue // unchanged: the analysis finds what the plan recorded
		}
		want := map[string]bool{}
		for _, id := range f.Findings {
			want[id] = true
		}
		found := map[string]bool{}
		for _, fd := range res.Findings {
			if fd.File != path {
				continue
			}
			found[fd.ID] = true
			if fd.Fixed && !want[fd.ID] {
				held[path] = true
				fd.File = rel(base, fd.File)
				notes = append(notes, fd.String()+" [not in the plan: "+f.Path+" changed since the plan was made; its fixes are not applied]")
			}
		}
		for _, id := range f.Findings {
			if !found[id] {
				notes = append(notes, fmt.Sprintf("%s: finding %s of the plan is no longer found (the file changed since the plan was made)", f.Path, id))
			}
		}
	}
	sort.Strings(notes)
	for _, n := range notes {
		fmt.Fprintln(opts.stderr, n)
	}
	if len(held) > 0 {
		keep := map[string]plan.File{}
		for path, f := range planned {
			if !held[path] {
				keep[path] = f
			}
		}
		cfg.Only = only(keep)
		if len(keep) == 0 {
			res = &rewrite.Result{}
		} else if res, err = opts.runEngine(cfg); err != nil {
			return err
		}
	}
	errs := opts.reportErrors(res, base)
	if err := opts.emitAll(res.Changes, res.Refused, base, diff); err != nil {
		return err
	}
	if errs == nil || len(res.Changes) > 0 {
		fmt.Fprintln(opts.stderr, strings.Replace(summary(res, diff), "unflake:", fmt.Sprintf("unflake: batch %d:", k), 1))
	}
	switch {
	case errs != nil:
		return errs
	case len(held) > 0, diff && len(res.Changes) > 0:
		return errFindings
	}
	return nil
}

// runEngine runs the engine with cfg, verifying the fixes under --verify.
func (o *options) runEngine(cfg *rewrite.Config) (*rewrite.Result, error) {
	var res *rewrite.Result
	var err error
	if !o.verify {
		res, err = rewrite.Run(cfg)
	} else {
		res, _, err = o.runVerified(cfg)
	}
	o.annotate(res)
	return res, err
}

// Package cli is unflake's command line: cobra commands, flags, output
// streams and the one map from errors to exit codes. It is the only code
// that prints.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/unflake/unflake/internal/load"
	"github.com/unflake/unflake/internal/measured"
	"github.com/unflake/unflake/internal/verify"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rules"
)

// Exit codes.
const (
	exitClean    = 0 // nothing found, or fix wrote its changes
	exitFindings = 1 // check found something; fix --diff has a change
	exitError    = 2 // bad input, load failure, internal error
)

// errFindings makes a command exit with exitFindings after printing.
var errFindings = errors.New("findings")

// errReported makes a command exit with exitError when it has already
// printed its errors.
var errReported = errors.New("errors reported")

// Main runs unflake with args and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int { return MainEnv(args, nil, stdout, stderr) }

// MainEnv is Main with env as the environment of the commands unflake
// runs, go and git (nil: the process's): a test that runs unflake in
// process gives it one of its own, so the user's GOFLAGS, GOPROXY, module
// cache or GIT_DIR cannot change the result.
func MainEnv(args, env []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr, env)
	root.SetArgs(args)
	err := root.Execute()
	switch {
	case err == nil:
		return exitClean
	case errors.Is(err, errFindings):
		return exitFindings
	case errors.Is(err, errReported):
		return exitError
	}
	var sig *interrupted
	if errors.As(err, &sig) {
		fmt.Fprintf(stderr, "unflake: %s\n", err)
		return sig.exitCode()
	}
	fmt.Fprintf(stderr, "unflake: %s\n", oneLine(err.Error()))
	return exitError
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// options are the flags shared by the commands that analyse code.
type options struct {
	dir   string
	tags  []string
	rules []string
	skip  []string
	run   string

	changedSince string // --changed-since: only test files changed since this git revision

	// fromJSON (--from-json) is a go test -json log to read the tests'
	// times from; measure (--measure) runs the tests once for them.
	// times holds them once read.
	fromJSON string
	measure  bool
	times    *measured.Times

	// ruleOptions are the values of the rules' own flags in this run.
	ruleOptions rule.Options

	verify        bool
	verifyCount   int
	verifyTimeout time.Duration
	verifyMutants bool
	recordIgnores bool // fix --record-ignores
	unproven      bool // fix --diff --unproven: show the hypotheses too

	stdout, stderr io.Writer
	env            []string // the environment of the go command (rewrite.Config.Env) and of git
}

func newRootCmd(stdout, stderr io.Writer, env []string) *cobra.Command {
	opts := &options{stdout: stdout, stderr: stderr, env: env}
	root := &cobra.Command{
		Use:   "unflake",
		Short: "Rewrite slow and flaky Go tests into fast, deterministic ones",
		Long: `unflake finds the mechanical causes of slow and flaky Go tests (attempt-count
polls, real sleeps, ...) and rewrites the test code that has them, proving
every rewrite compiles. Only _test.go files are rewritten.

Exit codes: 0 clean, 1 findings (check) or changes (fix --diff), 2 error.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE:          func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	root.Version = version()
	root.SetVersionTemplate("unflake {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.CompletionOptions.DisableDefaultCmd = true
	pf := root.PersistentFlags()
	pf.StringVarP(&opts.dir, "dir", "C", "", "run as if started in `DIR`")
	root.AddCommand(newFixCmd(opts), newCheckCmd(opts), newPlanCmd(opts), newSealCmd(opts), newRulesCmd(opts))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	return root
}

// addAnalysisFlags adds the flags of commands that run rules, including
// every rule's own flags.
func addAnalysisFlags(cmd *cobra.Command, opts *options) {
	f := cmd.Flags()
	f.StringSliceVar(&opts.tags, "tags", nil, "build `tags` to load packages with (comma-separated)")
	f.StringSliceVar(&opts.rules, "rules", nil, "run only these `rules` (comma-separated; default: the default set; all: every rule)")
	f.StringSliceVar(&opts.skip, "skip", nil, "do not run these `rules` (comma-separated)")
	f.StringVar(&opts.run, "run", "", "only tests and subtests whose names match `REGEX`, as go test -run")
	f.StringVar(&opts.fromJSON, "from-json", "", "read the tests' measured times from go test -json output in `FILE` (- for stdin): they decide --min-saving, rank plan batches (flaky tests first) and are reported")
	f.BoolVar(&opts.measure, "measure", false, "run the packages' tests once with go test -json first, for their measured times (as --from-json)")
	addRuleFlags(f, rules.All(), &opts.ruleOptions)
}

// engineConfig turns the options and patterns into an engine run.
func (o *options) engineConfig(patterns []string) (*rewrite.Config, error) {
	if err := rule.Validate(rules.All()); err != nil {
		return nil, fmt.Errorf("internal error: %v", err)
	}
	selected, err := rules.Select(o.rules, o.skip)
	if err != nil {
		return nil, err
	}
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	dir, err := o.baseDir()
	if err != nil {
		return nil, err
	}
	cfg := &rewrite.Config{Dir: dir, Patterns: patterns, Tags: o.tags, Rules: selected, Run: o.run, Lookup: rules.Lookup, Options: o.ruleOptions, Env: o.env}
	cfg.Progress = progress(o.stderr)
	cfg.Cache = resultCacheDir()
	if err := o.readTimes(dir, patterns); err != nil {
		return nil, err
	}
	if o.times != nil {
		cfg.Measured = func(pkg, test string) (time.Duration, bool) {
			m, ok := o.times.Test(pkg, test)
			return m.Elapsed, ok
		}
	}
	if o.changedSince != "" {
		if cfg.Only, err = changedFilter(dir, o.changedSince, o.env); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// readTimes reads the tests' measured times once, from --from-json or a
// run of go test -json in dir (--measure).
func (o *options) readTimes(dir string, patterns []string) error {
	if o.times != nil {
		return nil
	}
	var err error
	switch {
	case o.fromJSON != "" && o.measure:
		return fmt.Errorf("--from-json and --measure exclude each other")
	case o.fromJSON == "-":
		if o.times, err = measured.Read(os.Stdin); err != nil {
			return fmt.Errorf("--from-json -: %v", err)
		}
	case o.fromJSON != "":
		if o.times, err = measured.ReadFile(o.fromJSON); err != nil {
			return fmt.Errorf("--from-json %v", err)
		}
	case o.measure:
		fmt.Fprintln(o.stderr, "unflake: measuring: go test -json "+strings.Join(patterns, " "))
		if o.times, err = measured.Run(dir, o.env, o.tags, patterns); err != nil {
			return fmt.Errorf("--measure: %v", err)
		}
	}
	return nil
}

// annotate records on each finding the measured time of its top-level
// test and whether the log has it flaky (Finding.MeasuredMs, Flaky).
func (o *options) annotate(res *rewrite.Result) {
	if o.times == nil || res == nil {
		return
	}
	for i := range res.Findings {
		f := &res.Findings[i]
		top, _, _ := strings.Cut(f.Test, "/")
		if m, ok := o.times.Test(f.Package, top); ok {
			f.MeasuredMs = m.Elapsed.Milliseconds()
			f.Flaky = m.Flaky()
		}
	}
}

// baseDir is the directory patterns and output paths are relative to.
func (o *options) baseDir() (string, error) {
	dir := o.dir
	if dir == "" {
		return os.Getwd()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("-C %s: not a directory", dir)
	}
	return abs, nil
}

// analyse runs the engine, and verifies its fixes under --verify; it
// returns the result, the verification (nil without --verify) and the base
// directory.
func (o *options) analyse(patterns []string) (*rewrite.Result, *verify.Verification, string, error) {
	cfg, err := o.engineConfig(patterns)
	if err != nil {
		return nil, nil, "", err
	}
	if o.verify {
		res, v, err := o.runVerified(cfg)
		var in *interrupted
		if err != nil && !errors.As(err, &in) {
			return nil, nil, "", err
		}
		o.annotate(res)
		// Interrupted: what was verified so far, and the error.
		return res, v, cfg.Dir, err
	}
	if o.unproven {
		// Every fix, proven or not, goes into the diff: the hypotheses
		// are shown for review, never written (fix checks --diff).
		cfg.Decide = func(rewrite.Site) rewrite.Decision { return rewrite.Decision{} }
	}
	res, err := rewrite.Run(cfg)
	if err != nil {
		return nil, nil, "", err
	}
	o.annotate(res)
	return res, nil, cfg.Dir, nil
}

// reportErrors prints Result.Errors one per line, with paths relative to
// base: "file:line:col: message" when the error has a position, else
// "unflake: message". It returns errReported if there was any.
func (o *options) reportErrors(res *rewrite.Result, base string) error {
	return o.printErrors(res.Errors, base)
}

// printErrors prints errs as reportErrors does.
func (o *options) printErrors(errs []error, base string) error {
	for _, e := range errs {
		msg := oneLine(strings.ReplaceAll(e.Error(), base+string(filepath.Separator), ""))
		var pe *load.PosError
		if !errors.As(e, &pe) || pe.Pos == "" || pe.Pos == "-" {
			msg = "unflake: " + msg
		}
		fmt.Fprintln(o.stderr, msg)
	}
	if len(errs) == 0 {
		return nil
	}
	return errReported
}

// rel returns path relative to base, with forward slashes.
func rel(base, path string) string {
	r, err := filepath.Rel(base, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}

// progress returns a progress printer for long runs when stderr is a
// terminal, or nil.
func progress(stderr io.Writer) func(done, total int) {
	f := terminal(stderr)
	if f == nil {
		return nil
	}
	return func(done, total int) {
		if total < 20 {
			return
		}
		fmt.Fprintf(f, "\runflake: %d/%d packages", done, total)
		if done == total {
			fmt.Fprint(f, "\r\033[K")
		}
	}
}

// terminal returns w as a file if it is a terminal, or nil.
func terminal(w io.Writer) *os.File {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return f
}

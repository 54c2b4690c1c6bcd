package cli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rules"
)

// sarifLog is the part of a SARIF 2.1.0 log the tests look at.
type sarifLog struct {
	Schema  string `json:"$schema"`
	Version string `json:"version"`
	Runs    []struct {
		Tool struct {
			Driver struct {
				Name           string `json:"name"`
				InformationURI string `json:"informationUri"`
				Rules          []struct {
					ID               string `json:"id"`
					Name             string `json:"name"`
					ShortDescription struct {
						Text string `json:"text"`
					} `json:"shortDescription"`
					Help struct {
						Text     string `json:"text"`
						Markdown string `json:"markdown"`
					} `json:"help"`
					DefaultConfiguration struct {
						Level string `json:"level"`
					} `json:"defaultConfiguration"`
				} `json:"rules"`
			} `json:"driver"`
		} `json:"tool"`
		Results []struct {
			RuleID    string `json:"ruleId"`
			RuleIndex *int   `json:"ruleIndex"`
			Level     string `json:"level"`
			Message   struct {
				Text string `json:"text"`
			} `json:"message"`
			Locations []struct {
				PhysicalLocation struct {
					ArtifactLocation struct {
						URI       string `json:"uri"`
						URIBaseID string `json:"uriBaseId"`
					} `json:"artifactLocation"`
					Region struct {
						StartLine   int `json:"startLine"`
						StartColumn int `json:"startColumn"`
					} `json:"region"`
				} `json:"physicalLocation"`
			} `json:"locations"`
			PartialFingerprints map[string]string `json:"partialFingerprints"`
			Properties          struct {
				Fixed   bool   `json:"fixed"`
				Package string `json:"package"`
				Test    string `json:"test"`
			} `json:"properties"`
		} `json:"results"`
	} `json:"runs"`
}

// checkSARIF decodes out as a SARIF log and checks the fields code
// scanning needs; it returns the log.
func checkSARIF(t *testing.T, out string, wantRules []string) *sarifLog {
	t.Helper()
	var log sarifLog
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatalf("SARIF: %v\n%s", err, out)
	}
	if log.Version != "2.1.0" || log.Schema != "https://json.schemastore.org/sarif-2.1.0.json" {
		t.Errorf("version %q, $schema %q", log.Version, log.Schema)
	}
	if len(log.Runs) != 1 {
		t.Fatalf("%d runs, want 1", len(log.Runs))
	}
	run := log.Runs[0]
	d := run.Tool.Driver
	if d.Name != "unflake" || d.InformationURI != "https://github.com/unflake/unflake" {
		t.Errorf("driver %q %q", d.Name, d.InformationURI)
	}
	var ids []string
	for _, r := range d.Rules {
		ids = append(ids, r.ID)
		if r.Name != r.ID || r.ShortDescription.Text == "" || r.Help.Text == "" || !strings.HasPrefix(r.Help.Markdown, "# "+r.ID+": ") || r.DefaultConfiguration.Level != "warning" {
			t.Errorf("rule %+v", r)
		}
	}
	if strings.Join(ids, ",") != strings.Join(wantRules, ",") {
		t.Errorf("driver.rules %v, want the selected rules %v", ids, wantRules)
	}
	for _, r := range run.Results {
		if r.RuleIndex == nil || *r.RuleIndex < 0 || *r.RuleIndex >= len(d.Rules) || d.Rules[*r.RuleIndex].ID != r.RuleID {
			t.Errorf("result %s: ruleIndex %v does not point at its rule", r.RuleID, r.RuleIndex)
		}
		if r.Level != "warning" || r.Message.Text == "" {
			t.Errorf("result %s: level %q, message %q", r.RuleID, r.Level, r.Message.Text)
		}
		if len(r.Locations) != 1 {
			t.Fatalf("result %s: %d locations", r.RuleID, len(r.Locations))
		}
		pl := r.Locations[0].PhysicalLocation
		uri := pl.ArtifactLocation.URI
		if uri == "" || strings.HasPrefix(uri, "/") || strings.Contains(uri, ":") || strings.Contains(uri, `\`) || pl.ArtifactLocation.URIBaseID != "%SRCROOT%" {
			t.Errorf("result %s: artifactLocation %+v, want a relative URI", r.RuleID, pl.ArtifactLocation)
		}
		if pl.Region.StartLine < 1 || pl.Region.StartColumn < 1 {
			t.Errorf("result %s: region %+v", r.RuleID, pl.Region)
		}
		if r.PartialFingerprints["unflakeFindingId/v1"] == "" || r.Properties.Package == "" {
			t.Errorf("result %s: fingerprints %v, properties %+v", r.RuleID, r.PartialFingerprints, r.Properties)
		}
	}
	return &log
}

func ruleNames(t *testing.T, names, skip []string) []string {
	t.Helper()
	selected, err := rules.Select(names, skip)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range selected {
		out = append(out, r.Name)
	}
	return out
}

func TestCheckSARIF(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, ownContext)
	code, stdout, stderr := run(t, "-C", dir, "check", "--format", "sarif", "./...")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	log := checkSARIF(t, stdout, ruleNames(t, nil, nil))
	var found bool
	for _, r := range log.Runs[0].Results {
		if r.RuleID != "testscope" {
			continue
		}
		found = true
		pl := r.Locations[0].PhysicalLocation
		if pl.ArtifactLocation.URI != "m_test.go" || pl.Region.StartLine != 10 || pl.Region.StartColumn != 14 {
			t.Errorf("testscope location %+v", pl)
		}
		if !strings.Contains(r.Message.Text, "; fix: ") || !r.Properties.Fixed || r.Properties.Test != "TestConfig" || r.Properties.Package != "example.com/m" {
			t.Errorf("testscope result %+v", r)
		}
	}
	if !found {
		t.Errorf("no testscope result:\n%s", stdout)
	}

	code, stdout, _ = run(t, "-C", dir, "check", "--format", "sarif", "--rules", "testscope,sleep", "--skip", "sleep", "./clean")
	if code != 0 {
		t.Errorf("clean package: exit %d", code)
	}
	checkSARIF(t, stdout, []string{"testscope"})
	if !strings.Contains(stdout, `"results": []`) {
		t.Errorf("clean package: no empty results array:\n%s", stdout)
	}
}

// nested puts packages in subdirectories, so paths have slashes.
const nested = `
-- sub/sub_test.go --
package sub

import (
	"context"
	"testing"
)

// TestSub runs under a context of its own.
func TestSub(t *testing.T) {
	ctx, end := context.WithCancel(context.Background())
	defer end()
	if err := ctx.Err(); err != nil {
		t.Fatal(err)
	}
}
`

func TestCheckGitHub(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, ownContext, nested)
	code, stdout, stderr := run(t, "-C", dir, "check", "--format", "github", "--rules", "testscope", "./...")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines:\n%s", stdout)
	}
	for i, prefix := range []string{
		"::warning file=m_test.go,line=10,col=14,title=unflake testscope::",
		"::warning file=sub/sub_test.go,line=10,col=14,title=unflake testscope::",
	} {
		if !strings.HasPrefix(lines[i], prefix) || !strings.Contains(lines[i], "; fix: ") {
			t.Errorf("line %d: %q, want prefix %q", i, lines[i], prefix)
		}
	}
}

func TestJSONAliasAgrees(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir := testmod.Write(t, ownContext)
	code1, out1, _ := run(t, "-C", dir, "check", "--json", "./...")
	code2, out2, _ := run(t, "-C", dir, "check", "--format", "json", "./...")
	code3, out3, _ := run(t, "-C", dir, "check", "--json", "--format", "json", "./...")
	if code1 != 1 || code2 != 1 || code3 != 1 || out1 != out2 || out1 != out3 {
		t.Errorf("--json (exit %d) and --format json (exit %d, %d) differ:\n%s\n%s\n%s", code1, code2, code3, out1, out2, out3)
	}
	var findings []rewrite.Finding
	if err := json.Unmarshal([]byte(out2), &findings); err != nil || len(findings) == 0 {
		t.Errorf("--format json: %v, %d findings", err, len(findings))
	}
}

func TestFormatErrors(t *testing.T) {
	t.Parallel()
	dir := testmod.Write(t, ownContext)
	before := testmod.Snapshot(t, dir)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fix", "--format", "json", "./..."}, "--format needs --diff"},
		{[]string{"fix", "--format", "github", "./..."}, "--format needs --diff"},
		{[]string{"check", "--format", "xml", "./..."}, "--format xml: must be one of text, json, sarif, github"},
		{[]string{"fix", "--diff", "--format", "xml", "./..."}, "--format xml"},
		{[]string{"check", "--json", "--format", "sarif", "./..."}, "--json conflicts with --format sarif"},
		{[]string{"check", "--json", "--format", "text", "./..."}, "--json conflicts with --format text"},
	} {
		code, stdout, stderr := run(t, append([]string{"-C", dir}, tc.args...)...)
		if code != 2 || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q; want 2 and nothing", tc.args, code, stdout)
		}
		if !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "unflake: ") {
			t.Errorf("%v: stderr %q, want one line containing %q", tc.args, stderr, tc.want)
		}
	}
	for k, v := range testmod.Snapshot(t, dir) {
		if before[k] != v {
			t.Errorf("a usage error changed %s", k)
		}
	}
}

func TestFixDiffFormats(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir := testmod.Write(t, ownContext)
	before := testmod.Snapshot(t, dir)
	_, textDiff, _ := run(t, "-C", dir, "fix", "--diff", "--rules", "testscope", "./...")
	if !strings.HasPrefix(textDiff, "--- a/m_test.go\n") {
		t.Fatalf("text diff:\n%s", textDiff)
	}

	code, stdout, stderr := run(t, "-C", dir, "fix", "--diff", "--format", "json", "--rules", "testscope", "./...")
	if code != 1 || !strings.Contains(stderr, "would rewrite 1 file") {
		t.Errorf("json: exit %d, stderr %q", code, stderr)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &obj); err != nil {
		t.Fatalf("json: %v\n%s", err, stdout)
	}
	var findings []rewrite.Finding
	var diff string
	if err := json.Unmarshal(obj["findings"], &findings); err != nil || len(findings) != 1 || findings[0].File != "m_test.go" {
		t.Errorf("json findings: %v %+v", err, findings)
	}
	if err := json.Unmarshal(obj["diff"], &diff); err != nil || diff != textDiff {
		t.Errorf("json diff: %v\n%s\nwant\n%s", err, diff, textDiff)
	}
	if len(obj) != 2 {
		t.Errorf("json keys: %v", obj)
	}

	code, stdout, _ = run(t, "-C", dir, "fix", "--diff", "--format", "sarif", "--rules", "testscope", "./...")
	if code != 1 {
		t.Errorf("sarif: exit %d", code)
	}
	if log := checkSARIF(t, stdout, []string{"testscope"}); len(log.Runs[0].Results) != 1 {
		t.Errorf("sarif: %d results, want 1", len(log.Runs[0].Results))
	}

	code, stdout, _ = run(t, "-C", dir, "fix", "--diff", "--format", "github", "--rules", "testscope", "./...")
	if code != 1 {
		t.Errorf("github: exit %d", code)
	}
	want := "::group::unflake diff\n" + textDiff + "::endgroup::\n"
	if !strings.HasPrefix(stdout, "::warning file=m_test.go,line=10,col=14,title=unflake testscope::") || !strings.HasSuffix(stdout, want) || strings.Count(stdout, "::warning ") != 1 {
		t.Errorf("github:\n%s", stdout)
	}

	code, stdout, _ = run(t, "-C", dir, "fix", "--diff", "--format", "github", "./clean")
	if code != 0 || stdout != "" {
		t.Errorf("github, clean package: exit %d, stdout %q", code, stdout)
	}
	code, stdout, _ = run(t, "-C", dir, "fix", "--diff", "--format", "json", "./clean")
	if code != 0 || strings.ReplaceAll(strings.Join(strings.Fields(stdout), ""), " ", "") != `{"findings":[],"diff":""}` {
		t.Errorf("json, clean package: exit %d, stdout %q", code, stdout)
	}
	for k, v := range testmod.Snapshot(t, dir) {
		if before[k] != v {
			t.Errorf("fix --diff changed %s", k)
		}
	}
}

// gitRepo makes dir a git repository with everything in it committed.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	//unflake:ignore spawn each git step needs the one before it, in the same repository
	gitIn(t, dir, "init", "-q")
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "initial")
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	args = append([]string{"-c", "user.name=unflake", "-c", "user.email=unflake@example.com", "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"}, args...)
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = testmod.GitEnv(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func TestChangedSince(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir := testmod.Write(t, ownContext, nested)
	gitRepo(t, dir)
	code, stdout, stderr := run(t, "-C", dir, "check", "--rules", "testscope", "--changed-since", "HEAD", "./...")
	if code != 0 || stdout != "" {
		t.Errorf("nothing changed: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// Change the test file of the second package.
	path := filepath.Join(dir, "sub", "sub_test.go")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(src, "\n// changed\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = run(t, "-C", dir, "check", "--rules", "testscope", "--changed-since", "HEAD", "./...")
	if code != 1 || !strings.HasPrefix(stdout, "sub/sub_test.go:10:14: testscope: ") || strings.Count(stdout, "\n") != 1 {
		t.Errorf("one changed file: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// From a subdirectory, paths stay relative to -C.
	code, stdout, _ = run(t, "-C", filepath.Join(dir, "sub"), "check", "--rules", "testscope", "--changed-since", "HEAD", "./...")
	if code != 1 || !strings.HasPrefix(stdout, "sub_test.go:10:14: testscope: ") {
		t.Errorf("-C sub: exit %d, stdout %q", code, stdout)
	}

	// An untracked test file counts as changed.
	newTest := strings.Replace(nested[strings.Index(nested, "package sub"):], "package sub", "package new", 1)
	if err := os.MkdirAll(filepath.Join(dir, "new"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "new", "new_test.go"), []byte(newTest), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = run(t, "-C", dir, "fix", "--diff", "--rules", "testscope", "--changed-since", "HEAD", "./...")
	if code != 1 || !strings.Contains(stdout, "--- a/new/new_test.go\n") || !strings.Contains(stdout, "--- a/sub/sub_test.go\n") || strings.Contains(stdout, "m_test.go") {
		t.Errorf("changed and untracked files: exit %d, diff:\n%s", code, stdout)
	}
}

func TestChangedSinceErrors(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, ownContext)
	if _, err := exec.LookPath("git"); err == nil {
		// Outside a repository (unless the temporary directory is in one).
		code, stdout, stderr := run(t, "-C", dir, "fix", "--diff", "--changed-since", "HEAD", "./...")
		if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--changed-since") {
			t.Errorf("not a repository: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	}
	gitRepo(t, dir)
	before := testmod.Snapshot(t, dir)
	for _, rev := range []string{"no-such-rev", "HEAD~5", "-x"} {
		code, stdout, stderr := run(t, "-C", dir, "fix", "--changed-since", rev, "./...")
		if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "unflake: --changed-since "+rev+": ") {
			t.Errorf("--changed-since %s: exit %d, stdout %q, stderr %q", rev, code, stdout, stderr)
		}
	}
	for k, v := range testmod.Snapshot(t, dir) {
		if before[k] != v && !strings.Contains(filepath.ToSlash(k), "/.git/") {
			t.Errorf("a bad revision changed %s", k)
		}
	}
}

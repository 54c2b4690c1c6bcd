package rules_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/testmod"
)

// guideFile matches a file of docs/adding-a-rule.md's complete example: an
// HTML comment naming the path, then a fenced block holding the file.
var guideFile = regexp.MustCompile("(?s)<!-- file: (\\S+) -->\n```[a-z]*\n(.*?)\n```\n")

// TestAddingARuleGuide follows docs/adding-a-rule.md on a copy of the
// repository: it adds the guide's example rule (its folder, its cases, a
// demo case), registers it as the guide says, regenerates the listings
// with UNFLAKE_UPDATE=1, and checks that the rule works, the tests pass,
// and nothing else needed editing by hand.
func TestAddingARuleGuide(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	guide, err := os.ReadFile(filepath.Join("..", "docs", "adding-a-rule.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := guideFile.FindAllSubmatch(guide, -1)
	if len(files) == 0 {
		t.Fatal("docs/adding-a-rule.md has no complete example (<!-- file: PATH --> blocks)")
	}

	dir := t.TempDir()
	copyTree(t, "..", dir)
	before := testmod.Snapshot(t, dir)
	var name string
	for _, f := range files {
		path := string(f[1])
		if dir, base := filepath.Split(path); base == "doc.md" {
			name = filepath.Base(dir)
		}
		writeFile(t, filepath.Join(dir, path), append(f[2], '\n'))
	}
	if name == "" {
		t.Fatal("the example has no rules/NAME/doc.md")
	}

	// Section 5: register it; first, so no other rule's fix takes its sites
	// in the demo.
	registry := filepath.Join(dir, "rules", "rules.go")
	src, err := os.ReadFile(registry)
	if err != nil {
		t.Fatal(err)
	}
	src = bytes.Replace(src, []byte("import (\n"), []byte("import (\n\t\"github.com/unflake/unflake/rules/"+name+"\"\n"), 1)
	src = bytes.Replace(src, []byte("return []*rule.Rule{\n"), []byte("return []*rule.Rule{\n\t\t"+name+".Rule,\n"), 1)
	writeFile(t, registry, src)
	//unflake:ignore spawn each step reads what the one before it wrote, in the same copy
	run(t, dir, nil, "gofmt", "-w", "rules/rules.go")

	// Generated listings and the rule's goldens.
	run(t, dir, []string{"UNFLAKE_UPDATE=1"}, "go", "test", "-short", "./rules/"+name, "./rules", "./analyzers",
		"-run", "^(TestGolden|TestRulesDocIsCurrent|TestNogoPackages)$")
	// Then everything the guide's checklist asks holds.
	run(t, dir, nil, "go", "vet", "./...")
	run(t, dir, nil, "go", "test", "./rules/"+name, "./rules", "./analyzers",
		"-run", "^(TestGolden|TestRulesDocIsCurrent|TestNogoPackages|TestRegistryIsValid|TestDemoShowsEveryRule|TestEveryRuleChecksItsCases)$")
	out := run(t, dir, nil, "go", "run", ".", "rules")
	if !strings.Contains(out, name) {
		t.Errorf("unflake rules does not list %s:\n%s", name, out)
	}

	// What changed: the rule's folder, its cases, the registry, the demo,
	// and generated files; nothing else.
	allowed := []string{
		"rules/" + name + "/", "testdata/" + name + "/", "golden/" + name + "/", "demo/" + name + "/",
		"rules/rules.go", "docs/rules.md", "analyzers/nogo/" + name + "/",
	}
	after := testmod.Snapshot(t, dir)
	var changed []string
	for path, data := range after {
		if old, ok := before[path]; !ok || old != data {
			changed = append(changed, path)
		}
	}
	sort.Strings(changed)
	var unexpected []string
	for _, path := range changed {
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		ok := false
		for _, a := range allowed {
			ok = ok || rel == a || strings.HasSuffix(a, "/") && strings.HasPrefix(rel, a)
		}
		if !ok {
			unexpected = append(unexpected, rel)
		}
	}
	if len(unexpected) > 0 {
		t.Errorf("adding a rule changed files outside its folder, the registry, the demo and generated listings: %v", unexpected)
	}
}

// run runs a command in dir with the tests' go environment.
func run(t *testing.T, dir string, extra []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = testmod.GoEnv(t, extra...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the repository at src to dst, without .git.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

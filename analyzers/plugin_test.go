package analyzers_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/testmod"
)

// registerStub is the API of github.com/golangci/plugin-module-register
// that golangci-lint's module plugins use (not a dependency of unflake).
const registerStub = `package register

import "golang.org/x/tools/go/analysis"

type LinterPlugin interface {
	BuildAnalyzers() ([]*analysis.Analyzer, error)
	GetLoadMode() string
}

const (
	LoadModeSyntax    = "syntax"
	LoadModeTypesInfo = "typesinfo"
)

type NewPlugin func(settings any) (LinterPlugin, error)

func Plugin(name string, p NewPlugin) {}

func DecodeSettings[T any](rawSettings any) (T, error) {
	var t T
	return t, nil
}
`

// The golangci-lint plugin that docs/drivers.md shows builds against
// unflake's analyzers (with a stand-in for the plugin register module).
func TestPluginInDocsBuilds(t *testing.T) {
	testmod.Slow(t)
	doc, err := os.ReadFile(filepath.Join("..", "docs", "drivers.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "`tools/unflakeplugin/plugin.go`:\n\n```go\n")
	code, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 {
		t.Fatal("docs/drivers.md has no plugin.go code block")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": `module example.com/unflakeplugin

go 1.26

require (
	github.com/golangci/plugin-module-register v0.1.1
	github.com/unflake/unflake v0.0.0
	golang.org/x/tools v0.52.0
)

replace github.com/unflake/unflake => ` + root + `

replace github.com/golangci/plugin-module-register => ./registermod
`,
		"go.sum":                           string(sum),
		"plugin.go":                        code,
		"registermod/go.mod":               "module github.com/golangci/plugin-module-register\n\ngo 1.26\n\nrequire golang.org/x/tools v0.52.0\n",
		"registermod/register/register.go": registerStub,
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(testmod.GoEnv(t), "GOSUMDB=off")
	for i, kv := range env {
		if kv == "GOFLAGS=" {
			env[i] = "GOFLAGS=-mod=mod"
		}
	}
	if stdout, stderr := run(t, dir, env, "go", "vet", "."); stdout+stderr != "" {
		t.Errorf("the plugin of docs/drivers.md does not build:\n%s%s", stdout, stderr)
	}
}

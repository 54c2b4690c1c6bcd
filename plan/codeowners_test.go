package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOwnersOf checks the matching against the examples in GitHub's
// CODEOWNERS documentation, one pattern at a time, plus the precedence
// rules (last match wins, no owners un-owns).
func TestOwnersOf(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		owners map[string][]string // path -> expected owners (nil: none)
	}{
		{
			name: "star owns everything",
			file: "* @global",
			owners: map[string][]string{
				"README.md":       {"@global"},
				"a/b/c/d_test.go": {"@global"},
			},
		},
		{
			name: "extension at any depth",
			file: "*.js @js-owner",
			owners: map[string][]string{
				"app.js":         {"@js-owner"},
				"web/src/app.js": {"@js-owner"},
				"app.jsx":        nil,
				"web/js/x.go":    nil,
			},
		},
		{
			name: "go files at any depth",
			file: "*.go docs@example.com",
			owners: map[string][]string{
				"main.go":              {"docs@example.com"},
				"a/b/c/x_test.go":      {"docs@example.com"},
				"a/b/c/x_test.go.orig": nil,
			},
		},
		{
			name: "anchored directory owns everything below",
			file: "/build/logs/ @doctocat",
			owners: map[string][]string{
				"build/logs/x.log":        {"@doctocat"},
				"build/logs/deep/er/y.go": {"@doctocat"},
				"a/build/logs/x.log":      nil,
				"build/logs":              nil, // a file, not the directory
				"build/other.go":          nil,
			},
		},
		{
			name: "docs/* owns files directly in docs only",
			file: "docs/* docs@example.com",
			owners: map[string][]string{
				"docs/getting-started.md":            {"docs@example.com"},
				"docs/build-app/troubleshooting.md":  nil,
				"a/docs/getting-started.md":          nil,
				"docs":                               nil,
				"docsx/getting-started.md":           nil,
				"docs/build-app/deeper/more/file.md": nil,
			},
		},
		{
			name: "directory named apps anywhere",
			file: "apps/ @octocat",
			owners: map[string][]string{
				"apps/x.go":          {"@octocat"},
				"a/b/apps/c/x.go":    {"@octocat"},
				"apps":               nil, // a file named apps
				"myapps/x.go":        nil,
				"a/apps_test/x.go":   nil,
				"a/b/apps/c/d/e.txt": {"@octocat"},
			},
		},
		{
			name: "anchored docs directory",
			file: "/docs/ @doctocat",
			owners: map[string][]string{
				"docs/a.md":     {"@doctocat"},
				"docs/a/b.md":   {"@doctocat"},
				"sub/docs/a.md": nil,
			},
		},
		{
			name: "double star logs",
			file: "**/logs @octocat",
			owners: map[string][]string{
				"logs/a":                 {"@octocat"},
				"build/logs/a":           {"@octocat"},
				"scripts/logs/a":         {"@octocat"},
				"deeply/nested/logs/a/b": {"@octocat"},
				"logs":                   {"@octocat"}, // a file named logs too
				"build/logsx/a":          nil,
			},
		},
		{
			name: "no owners un-owns a subdirectory",
			file: "/apps/ @octocat\n/apps/github\n",
			owners: map[string][]string{
				"apps/x.go":          {"@octocat"},
				"apps/github/x.go":   nil,
				"apps/github/a/b.go": nil,
				"apps/githubx/a.go":  {"@octocat"},
			},
		},
		{
			name: "slash in the middle anchors",
			file: "docs/getting-started.md @writer",
			owners: map[string][]string{
				"docs/getting-started.md":   {"@writer"},
				"a/docs/getting-started.md": nil,
			},
		},
		{
			name: "last match wins",
			file: "* @global\n*.go @gophers\n/rewrite/ @engine @org/core\n",
			owners: map[string][]string{
				"README.md":          {"@global"},
				"cli/root.go":        {"@gophers"},
				"rewrite/diff.go":    {"@engine", "@org/core"},
				"rewrite/x/y.md":     {"@engine", "@org/core"},
				"x/rewrite/diff.go":  {"@gophers"},
				"x/rewrite/diff.txt": {"@global"},
			},
		},
		{
			name: "earlier rules do not override later ones",
			file: "/rewrite/ @engine\n* @global\n",
			owners: map[string][]string{
				"rewrite/diff.go": {"@global"},
			},
		},
		{
			name: "comments and blank lines",
			file: "# owners\n\n   \n*.go @gophers # inline comment\n# *.md @nobody\n",
			owners: map[string][]string{
				"a.go": {"@gophers"},
				"a.md": nil,
			},
		},
		{
			name: "double star in the middle",
			file: "/a/**/z.go @z",
			owners: map[string][]string{
				"a/z.go":     {"@z"},
				"a/b/c/z.go": {"@z"},
				"b/a/z.go":   nil,
			},
		},
		{
			name: "empty file owns nothing",
			file: "",
			owners: map[string][]string{
				"a.go": nil,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := ParseCodeowners([]byte(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range sortedKeys(tt.owners) {
				if got, want := o.Of(p), tt.owners[p]; !slices.Equal(got, want) || (got == nil) != (want == nil) {
					t.Errorf("Of(%q) = %q, want %q", p, got, want)
				}
			}
		})
	}
}

func TestOwnersOfNil(t *testing.T) {
	var o *Owners
	if got := o.Of("a.go"); got != nil {
		t.Errorf("nil Owners: Of = %q, want nil", got)
	}
}

// TestOwnersOfReturnsCopy guards the rules against callers that sort or
// append to the result.
func TestOwnersOfReturnsCopy(t *testing.T) {
	o, err := ParseCodeowners([]byte("* @b @a"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(o.Of("x"))
	if got := o.Of("x"); !slices.Equal(got, []string{"@b", "@a"}) {
		t.Errorf("Of after caller sorted the result = %q", got)
	}
}

func TestParseCodeownersErrors(t *testing.T) {
	tests := []struct {
		name, file, want string
	}{
		{"negation", "* @a\n\n!/docs/ @b\n", "CODEOWNERS:3: "},
		{"escape", `\#notacomment @a`, "CODEOWNERS:1: "},
		{"character range", "# c\n*.[ch] @a\n", "CODEOWNERS:2: "},
		{"not an owner", "*.go @a b\n", "CODEOWNERS:1: "},
		{"only slashes", "/ @a\n", "CODEOWNERS:1: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCodeowners([]byte(tt.file))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v, want prefix %q", err, tt.want)
			}
		})
	}
}

func TestFindCodeowners(t *testing.T) {
	tests := []struct {
		name  string
		files []string // each gets content equal to its name
		dirs  []string
		want  string
	}{
		{name: "none", want: ""},
		{name: "root", files: []string{"CODEOWNERS"}, want: "CODEOWNERS"},
		{name: "docs", files: []string{"docs/CODEOWNERS"}, want: "docs/CODEOWNERS"},
		{name: "github first", files: []string{"docs/CODEOWNERS", "CODEOWNERS", ".github/CODEOWNERS"}, want: ".github/CODEOWNERS"},
		{name: "root before docs", files: []string{"docs/CODEOWNERS", "CODEOWNERS"}, want: "CODEOWNERS"},
		{name: "a directory is not the file", dirs: []string{".github/CODEOWNERS"}, files: []string{"docs/CODEOWNERS"}, want: "docs/CODEOWNERS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, d := range tt.dirs {
				if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range tt.files {
				name := filepath.Join(root, f)
				if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(name, []byte(f), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, data, err := FindCodeowners(root)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("path = %q, want %q", got, tt.want)
			}
			if string(data) != tt.want {
				t.Errorf("content = %q, want %q", data, tt.want)
			}
		})
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

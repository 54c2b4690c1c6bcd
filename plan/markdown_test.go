package plan

import (
	"testing"

	"github.com/unflake/unflake/rewrite"
)

func TestMarkdown(t *testing.T) {
	owners, err := ParseCodeowners([]byte("* @org/team\n/c/ @x|y @amy\n"))
	if err != nil {
		t.Fatal(err)
	}
	change := FileChange{Old: []byte("a\nb\n"), New: []byte("a\nc\n")}
	tests := []struct {
		name string
		in   Input
		opts Options
		want string
	}{
		{
			name: "static, with CODEOWNERS",
			in: Input{
				Findings: []rewrite.Finding{
					{ID: "sleep-1", Rule: "sleep", Package: "m/a", File: "a/a_test.go", Fixed: true, SavingMs: 1234},
					{ID: "sleep-2", Rule: "sleep", Package: "m/b", File: "a/b_test.go", Fixed: true, SavingMs: 1000},
					{ID: "sleep-3", Rule: "sleep", Package: "m/c", File: "a/c_test.go", Fixed: true},
					{ID: "sleep-4", Rule: "sleep", Package: "m/d", File: "a/d_test.go", Fixed: true},
					{ID: "sleep-5", Rule: "sleep", Package: "m/e", File: "a/e_test.go", Reason: "reason one"},
					{ID: "sleep-6", Rule: "sleep", Package: "m/e", File: "a/e_test.go", Reason: "a | b"},
					{ID: "sleep-7", Rule: "sleep", Package: "m/e", File: "a/e_test.go", Reason: "a | b"},
					{ID: "wallclock-1", Rule: "wallclock", Package: "m/c", File: "c/c_test.go", Fixed: true},
				},
				Changes: map[string]FileChange{
					"a/a_test.go": change, "a/b_test.go": change, "a/c_test.go": change,
					"a/d_test.go": change, "c/c_test.go": change, "go.mod": change,
				},
			},
			opts: Options{MaxFiles: 20, MaxLines: 400, Owners: owners, OwnersFile: ".github/CODEOWNERS"},
			want: "# unflake campaign\n" +
				"\n" +
				"8 findings, 5 fixable in 5 files, in 2 batches of at most 20 files and 400 changed lines. Estimated saving: 2.2 s (static estimate: the constant sleeps removed and polls bounded; `unflake plan --verify` measures instead).\n" +
				"Owners from `.github/CODEOWNERS`.\n" +
				"\n" +
				"## Rules\n" +
				"\n" +
				"| rule | findings | fixable | not fixable, held back by (a finding may have several) | estimated saving |\n" +
				"|---|---:|---:|---|---:|\n" +
				"| sleep | 7 | 4 | 2 × a \\| b<br>1 × reason one | 2.2 s |\n" +
				"| wallclock | 1 | 1 | — | — |\n" +
				"\n" +
				"## Batches\n" +
				"\n" +
				"| batch | owners | packages | files | findings | estimated saving |\n" +
				"|---|---|---|---:|---:|---:|\n" +
				"| 1 | @amy, @x\\|y | `m/c` | 1 | 1 | — |\n" +
				"| 2 | @org/team | `m/a`, `m/b`, `m/c`, +1 more | 4 | 4 | 2.2 s |\n" +
				"\n" +
				"Apply one batch (one pull request each): `unflake fix --plan plan.json --batch K ./...`\n",
		},
		{
			name: "measured, no CODEOWNERS",
			in: Input{
				Findings: []rewrite.Finding{
					{ID: "sleep-1", Rule: "sleep", Package: "m/a", Test: "TestA", File: "a/a_test.go", Fixed: true, Verified: true, BeforeMs: 2500, AfterMs: 50},
				},
				Changes: map[string]FileChange{"a/a_test.go": change},
			},
			opts: Options{MaxFiles: 1},
			want: "# unflake campaign\n" +
				"\n" +
				"1 finding, 1 fixable in 1 file, in 1 batch of at most 1 file. Measured saving: 2.5 s (test times from --verify, --from-json or --measure; batches ranked by it, flaky tests first).\n" +
				"No CODEOWNERS file: batches follow the directory tree.\n" +
				"\n" +
				"## Rules\n" +
				"\n" +
				"| rule | findings | fixable | not fixable, held back by (a finding may have several) | estimated saving |\n" +
				"|---|---:|---:|---|---:|\n" +
				"| sleep | 1 | 1 | — | 2.5 s |\n" +
				"\n" +
				"## Batches\n" +
				"\n" +
				"| batch | owners | packages | files | findings | estimated saving |\n" +
				"|---|---|---|---:|---:|---:|\n" +
				"| 1 | — | `m/a` | 1 | 1 | 2.5 s |\n" +
				"\n" +
				"Apply one batch (one pull request each): `unflake fix --plan plan.json --batch K ./...`\n",
		},
		{
			name: "nothing found",
			opts: Options{MaxFiles: 20},
			want: "# unflake campaign\n" +
				"\n" +
				"0 findings, 0 fixable in 0 files, in 0 batches of at most 20 files. Estimated saving: — (static estimate: the constant sleeps removed and polls bounded; `unflake plan --verify` measures instead).\n" +
				"No CODEOWNERS file: batches follow the directory tree.\n" +
				"\n" +
				"## Rules\n" +
				"\n" +
				"No findings.\n" +
				"\n" +
				"## Batches\n" +
				"\n" +
				"No fixable findings.\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Make(tt.in, tt.opts).Markdown(); got != tt.want {
				t.Errorf("Markdown:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestSeconds(t *testing.T) {
	tests := []struct {
		ms   int64
		want string
	}{
		{0, "—"},
		{1200, "1.2 s"},
		{12345, "12.3 s"},
		{60000, "60.0 s"},
		{49, "0.0 s"},
	}
	for _, tt := range tests {
		if got := seconds(tt.ms); got != tt.want {
			t.Errorf("seconds(%d) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}

// A blocker's headline is its first clause, up to the ": " outside
// parentheses that starts its explanation.
func TestHeadline(t *testing.T) {
	for in, want := range map[string]string{
		"mu held from chain.go:66 across j.Run at chain.go:71, which waits (the function value f at cron.go:136: it may sleep): in a synctest bubble ...": "mu held from chain.go:66 across j.Run at chain.go:71, which waits (the function value f at cron.go:136: it may sleep)",
		"the module's go version is go1.12; synctest needs go1.25":                                                                                        "the module's go version is go1.12; synctest needs go1.25",
		"": "",
	} {
		if got := headline(in); got != want {
			t.Errorf("headline(%q) = %q, want %q", in, got, want)
		}
	}
}

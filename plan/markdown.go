package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// maxPackagesShown bounds the packages listed in a batch row, so that a
// batch spanning many packages does not blow up the table.
const maxPackagesShown = 3

// maxKindsShown bounds the kinds of blocker listed in a rule's row: the
// first few say what to work on, and a scheduler's suite has forty.
const maxKindsShown = 8

// Markdown renders the plan as the body of a tracking issue: a summary,
// a table of rules (what was found and why some of it cannot be fixed)
// and a table of batches (one pull request each).
func (p *Plan) Markdown() string {
	var b strings.Builder
	t := p.Totals
	b.WriteString("# unflake campaign\n\n")
	fmt.Fprintf(&b, "%s, %d fixable in %s, in %s of at most %s",
		plural(t.Findings, "finding"), t.Fixable, plural(t.Files, "file"),
		plural(t.Batches, "batch"), plural(p.MaxFiles, "file"))
	if p.MaxLines > 0 {
		fmt.Fprintf(&b, " and %s", plural(p.MaxLines, "changed line"))
	}
	b.WriteString(". ")
	if p.Estimate == EstimateMeasured {
		fmt.Fprintf(&b, "Measured saving: %s (test times from --verify, --from-json or --measure; batches ranked by it, flaky tests first).\n", seconds(t.EstimatedSavingMs))
	} else {
		fmt.Fprintf(&b, "Estimated saving: %s (static estimate: the constant sleeps removed and polls bounded; `unflake plan --verify` measures instead).\n", seconds(t.EstimatedSavingMs))
	}
	if p.Codeowners != "" {
		fmt.Fprintf(&b, "Owners from `%s`.\n", p.Codeowners)
	} else {
		b.WriteString("No CODEOWNERS file: batches follow the directory tree.\n")
	}

	b.WriteString("\n## Rules\n\n")
	if len(p.Rules) == 0 {
		b.WriteString("No findings.\n")
	} else {
		timed := slices.ContainsFunc(p.Rules, func(r RuleSummary) bool { return r.HeldMs > 0 })
		if timed {
			b.WriteString("| rule | findings | fixable | not fixable, held back by (a finding may have several; measured time of its tests) | held back (measured) | estimated saving |\n")
			b.WriteString("|---|---:|---:|---|---:|---:|\n")
		} else {
			b.WriteString("| rule | findings | fixable | not fixable, held back by (a finding may have several) | estimated saving |\n")
			b.WriteString("|---|---:|---:|---|---:|\n")
		}
		for _, r := range p.Rules {
			notFixable := kindsCell(r.Kinds, timed)
			if timed {
				fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s |\n",
					cell(r.Rule), r.Findings, r.Fixable, notFixable, seconds(r.HeldMs), seconds(r.EstimatedSavingMs))
				continue
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %s | %s |\n",
				cell(r.Rule), r.Findings, r.Fixable, notFixable, seconds(r.EstimatedSavingMs))
		}
	}

	if len(p.GoRaise) > 0 {
		b.WriteString("\n## Go directive\n\n")
		b.WriteString("Fixes that a newer `go` line in go.mod would unlock (`unflake fix --raise-go` raises it and applies them):\n\n")
		b.WriteString("| module | raise to | more fixes | estimated saving |\n")
		b.WriteString("|---|---|---:|---:|\n")
		for _, r := range p.GoRaise {
			fmt.Fprintf(&b, "| `%s` | %s | %d | %s |\n", strings.ReplaceAll(r.Module, "|", `\|`), cell(r.To), r.Fixes, seconds(r.EstimatedSavingMs))
		}
	}

	b.WriteString("\n## Batches\n\n")
	if len(p.Batches) == 0 {
		b.WriteString("No fixable findings.\n")
		return b.String()
	}
	b.WriteString("| batch | owners | packages | files | findings | estimated saving |\n")
	b.WriteString("|---|---|---|---:|---:|---:|\n")
	for _, bt := range p.Batches {
		owners := "—"
		if len(bt.Owners) > 0 {
			owners = cell(strings.Join(bt.Owners, ", "))
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %d | %d | %s |\n",
			bt.ID, owners, packages(bt.Packages), len(bt.Files), bt.Findings, seconds(bt.EstimatedSavingMs))
	}
	b.WriteString("\nApply one batch (one pull request each): `unflake fix --plan plan.json --batch K ./...`\n")
	return b.String()
}

// kindsCell lists up to maxKindsShown kinds of blocker, each with its
// count, its example and, when timed, the measured time it holds back;
// then how many kinds more there are.
func kindsCell(ks []KindCount, timed bool) string {
	if len(ks) == 0 {
		return "—"
	}
	shown := ks[:min(len(ks), maxKindsShown)]
	lines := make([]string, 0, len(shown)+1)
	for _, k := range shown {
		line := fmt.Sprintf("%d × %s", k.Count, cell(k.Example))
		var notes []string
		if k.Others > 0 {
			notes = append(notes, fmt.Sprintf("%d more like it", k.Others))
		}
		if timed && k.HeldMs > 0 {
			notes = append(notes, seconds(k.HeldMs))
		}
		if len(notes) > 0 {
			line += " (" + strings.Join(notes, "; ") + ")"
		}
		lines = append(lines, line)
	}
	if n := len(ks) - len(shown); n > 0 {
		lines = append(lines, fmt.Sprintf("%s more (the JSON plan lists them)", plural(n, "kind")))
	}
	return strings.Join(lines, "<br>")
}

// packages lists up to maxPackagesShown import paths as code, then how
// many more there are.
func packages(pkgs []string) string {
	if len(pkgs) == 0 {
		return "—"
	}
	shown := pkgs[:min(len(pkgs), maxPackagesShown)]
	parts := make([]string, 0, len(shown)+1)
	for _, p := range shown {
		// Only "|" needs escaping in a code span: entities would show.
		parts = append(parts, "`"+strings.ReplaceAll(p, "|", `\|`)+"`")
	}
	if n := len(pkgs) - len(shown); n > 0 {
		parts = append(parts, fmt.Sprintf("+%d more", n))
	}
	return strings.Join(parts, ", ")
}

// cell makes text safe inside a table cell: "|" would end the cell (it
// needs escaping even inside code spans), a newline the row, and "<"
// could start HTML that swallows text, since the reasons column uses
// <br> and so the cell is read as HTML-bearing Markdown.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\r\n", " ")
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "<", "&lt;")
}

// seconds formats milliseconds as seconds with one decimal; zero (no
// saving, or none known) as an em dash, which reads better in a column
// than "0.0 s".
func seconds(ms int64) string {
	if ms == 0 {
		return "—"
	}
	return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + " s"
}

// plural formats a count with its noun, for the summary sentence.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "ch") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

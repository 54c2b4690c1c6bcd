package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/unflake/unflake/internal/output"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rules"
)

// Output formats of check and fix --diff.
const (
	formatText   = "text"
	formatJSON   = "json"
	formatSARIF  = "sarif"
	formatGitHub = "github"
)

var formats = []string{formatText, formatJSON, formatSARIF, formatGitHub}

// addFormatFlag adds --format, defaulting to text.
func addFormatFlag(cmd *cobra.Command, format *string) {
	cmd.Flags().StringVar(format, "format", formatText, "output format `F`: "+strings.Join(formats, ", "))
}

// checkFormat reports an error unless format is one of formats.
func checkFormat(format string) error {
	for _, f := range formats {
		if format == f {
			return nil
		}
	}
	return fmt.Errorf("--format %s: must be one of %s", format, strings.Join(formats, ", "))
}

// relFindings returns a copy of findings with paths relative to base.
func relFindings(findings []rewrite.Finding, base string) []rewrite.Finding {
	out := make([]rewrite.Finding, len(findings))
	for i, f := range findings {
		f.File = rel(base, f.File)
		out[i] = f
	}
	return out
}

// writeText prints the findings one per line (Finding.String).
func writeText(w io.Writer, findings []rewrite.Finding) error {
	for _, f := range findings {
		if _, err := fmt.Fprintln(w, f.String()); err != nil {
			return err
		}
	}
	return nil
}

// writeJSON prints the findings as an indented JSON array ([] for none).
func writeJSON(w io.Writer, findings []rewrite.Finding) error {
	if findings == nil {
		findings = []rewrite.Finding{}
	}
	return encodeJSON(w, findings)
}

// fixJSON is the output of fix --diff --format json.
type fixJSON struct {
	Findings []rewrite.Finding `json:"findings"`
	Diff     string            `json:"diff"`
}

// writeFixJSON prints the findings and the unified diff as one object.
func writeFixJSON(w io.Writer, findings []rewrite.Finding, diff string) error {
	if findings == nil {
		findings = []rewrite.Finding{}
	}
	return encodeJSON(w, fixJSON{Findings: findings, Diff: diff})
}

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// SARIF 2.1.0, the subset unflake writes.

const (
	sarifSchema  = "https://json.schemastore.org/sarif-2.1.0.json"
	sarifVersion = "2.1.0"
	sarifLevel   = "warning"
	sarifIDKey   = "unflakeFindingId/v1"
	sarifBaseID  = "%SRCROOT%"
	unflakeURI   = "https://github.com/unflake/unflake"
)

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string             `json:"id"`
	Name                 string             `json:"name"`
	ShortDescription     sarifText          `json:"shortDescription"`
	FullDescription      sarifText          `json:"fullDescription"`
	Help                 sarifHelp          `json:"help"`
	DefaultConfiguration sarifConfiguration `json:"defaultConfiguration"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifHelp struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown"`
}

type sarifConfiguration struct {
	Level string `json:"level"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Level               string            `json:"level"`
	Message             sarifText         `json:"message"`
	Locations           []sarifLocation   `json:"locations"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Properties          sarifProperties   `json:"properties"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysicalLocation `json:"physicalLocation"`
}

type sarifPhysicalLocation struct {
	ArtifactLocation sarifArtifactLocation `json:"artifactLocation"`
	Region           sarifRegion           `json:"region"`
}

type sarifArtifactLocation struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn"`
}

type sarifProperties struct {
	Fixed   bool   `json:"fixed"`
	Package string `json:"package"`
	Test    string `json:"test"`
	// Why a finding is not fixed, where it is structured.
	Unwritable output.WriteFailure `json:"unwritable,omitempty"`
	LostTo     string              `json:"lostTo,omitempty"`
}

// writeSARIF prints a SARIF 2.1.0 log with one run: the rules that ran
// (selected) and the findings, whose paths must be relative to the base
// directory.
func writeSARIF(w io.Writer, selected []*rule.Rule, findings []rewrite.Finding) error {
	driver := sarifDriver{Name: "unflake", InformationURI: unflakeURI, Rules: []sarifRule{}}
	index := map[string]int{}
	add := func(r *rule.Rule) {
		index[r.Name] = len(driver.Rules)
		driver.Rules = append(driver.Rules, sarifRule{
			ID:                   r.Name,
			Name:                 r.Name,
			ShortDescription:     sarifText{Text: r.Short()},
			FullDescription:      sarifText{Text: r.Summary()},
			Help:                 sarifHelp{Text: r.Summary(), Markdown: r.Doc},
			DefaultConfiguration: sarifConfiguration{Level: sarifLevel},
		})
	}
	for _, r := range selected {
		add(r)
	}
	results := []sarifResult{}
	for _, f := range findings {
		i, ok := index[f.Rule]
		if !ok {
			// Not expected: every finding comes from a rule that ran.
			// Describe the rule anyway so ruleIndex stays valid.
			r := rules.Lookup(f.Rule)
			if r == nil {
				r = &rule.Rule{Name: f.Rule}
			}
			add(r)
			i = index[f.Rule]
		}
		line, col := max(f.Line, 1), max(f.Col, 1)
		results = append(results, sarifResult{
			RuleID:    f.Rule,
			RuleIndex: i,
			Level:     sarifLevel,
			Message:   sarifText{Text: f.Text()},
			Locations: []sarifLocation{{PhysicalLocation: sarifPhysicalLocation{
				ArtifactLocation: sarifArtifactLocation{URI: sarifURI(f.File), URIBaseID: sarifBaseID},
				Region:           sarifRegion{StartLine: line, StartColumn: col},
			}}},
			PartialFingerprints: map[string]string{sarifIDKey: f.ID},
			Properties:          sarifProperties{Fixed: f.Fixed, Package: f.Package, Test: f.Test, Unwritable: f.Unwritable, LostTo: f.LostTo},
		})
	}
	return encodeJSON(w, sarifLog{
		Schema:  sarifSchema,
		Version: sarifVersion,
		Runs:    []sarifRun{{Tool: sarifTool{Driver: driver}, Results: results}},
	})
}

// sarifURI turns a slash-separated relative path into a relative URI
// reference: other characters than unreserved ones, sub-delimiters, '/' and
// '@' are percent-encoded (':' too, which would start a scheme).
func sarifURI(path string) string {
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			strings.IndexByte("-._~/!$&'()*+,;=@", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// writeGitHub prints one GitHub Actions workflow command per finding:
// ::warning file=F,line=L,col=C,title=unflake RULE::MESSAGE
func writeGitHub(w io.Writer, findings []rewrite.Finding) error {
	for _, f := range findings {
		_, err := fmt.Fprintf(w, "::warning file=%s,line=%d,col=%d,title=%s::%s\n",
			githubProperty(f.File), f.Line, f.Col, githubProperty("unflake "+f.Rule), githubData(f.Text()))
		if err != nil {
			return err
		}
	}
	return nil
}

// writeGitHubDiff prints the diff in a collapsible group of the workflow
// log; nothing when it is empty. A diff line never starts with "::" (each
// starts with ' ', '+', '-', '@' or '\'), so none is taken for a command.
func writeGitHubDiff(w io.Writer, diff string) error {
	if diff == "" {
		return nil
	}
	if !strings.HasSuffix(diff, "\n") {
		diff += "\n"
	}
	_, err := io.WriteString(w, "::group::unflake diff\n"+diff+"::endgroup::\n")
	return err
}

// githubData escapes the message of a workflow command.
func githubData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// githubProperty escapes a property value of a workflow command.
func githubProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// selectedRules returns the rules a run with these options runs, as
// engineConfig selects them.
func (o *options) selectedRules() ([]*rule.Rule, error) {
	return rules.Select(o.rules, o.skip)
}

package rules_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unflake/unflake/rules"
)

// Every rule's package checks the rule's golden cases in process
// (goldentest.Check), so the default tier catches a changed finding or
// rewrite of any rule; TestGolden here runs them through the CLI only
// in the slow tier.
func TestEveryRuleChecksItsCases(t *testing.T) {
	t.Parallel()
	for _, r := range rules.All() {
		src, err := os.ReadFile(filepath.Join(r.Name, "golden_test.go"))
		if err != nil || !strings.Contains(string(src), `goldentest.Check(t, "`+r.Name+`")`) {
			t.Errorf("rules/%s/golden_test.go must call goldentest.Check(t, %q) (docs/adding-a-rule.md)", r.Name, r.Name)
		}
	}
}

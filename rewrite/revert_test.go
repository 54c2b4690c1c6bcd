package rewrite_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
)

func TestFindingJSONTimes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f    rewrite.Finding
		want []string
		not  []string
	}{
		{rewrite.Finding{Rule: "sleep", Fixed: true, Verified: true}, []string{`"beforeMs":0`, `"afterMs":0`}, nil},
		{rewrite.Finding{Rule: "sleep", Fixed: true}, nil, []string{"beforeMs", "afterMs", "revert"}},
		{rewrite.Finding{Rule: "sleep", Revert: &rewrite.Revert{Kind: revert.Skips, Test: "TestA", Detail: "a_test.go:3: no db"}},
			[]string{`"revert":{"kind":"skips","test":"TestA","detail":"a_test.go:3: no db"}`}, []string{"beforeMs"}},
	} {
		data, err := json.Marshal(tc.f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(data)
		for _, w := range tc.want {
			if !strings.Contains(s, w) {
				t.Errorf("%s lacks %s", s, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(s, w) {
				t.Errorf("%s has %s", s, w)
			}
		}
		var back rewrite.Finding
		if err := json.Unmarshal(data, &back); err != nil || back.Verified != tc.f.Verified || (back.Revert == nil) != (tc.f.Revert == nil) {
			t.Errorf("round trip of %s: %+v, %v", s, back, err)
		}
	}
}

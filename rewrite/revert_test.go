package rewrite_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/unflake/unflake/rewrite"
)

func TestInsertIgnore(t *testing.T) {
	t.Parallel()
	old := "package a\n\nfunc TestA(t *testing.T) {\n\tx := 1\n\ttime.Sleep(1)\n}\n"
	// Another fix changed line 4; the site is line 5.
	new := "package a\n\nfunc TestA(t *testing.T) {\n\tx := 2\n\ttime.Sleep(1)\n}\n"
	got, ok := rewrite.InsertIgnore([]byte(old), []byte(new), 5, "//unflake:ignore sleep reverted")
	want := "package a\n\nfunc TestA(t *testing.T) {\n\tx := 2\n\t//unflake:ignore sleep reverted\n\ttime.Sleep(1)\n}\n"
	if !ok || string(got) != want {
		t.Errorf("got %v:\n%s\nwant:\n%s", ok, got, want)
	}
	// The site's own line changed: nothing to anchor the directive to.
	if _, ok := rewrite.InsertIgnore([]byte(old), []byte(new), 4, "//unflake:ignore sleep reverted"); ok {
		t.Errorf("inserted above a changed line")
	}
}

func TestFindingJSONTimes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f    rewrite.Finding
		want []string
		not  []string
	}{
		{rewrite.Finding{Rule: "sleep", Fixed: true, Verified: true}, []string{`"beforeMs":0`, `"afterMs":0`}, nil},
		{rewrite.Finding{Rule: "sleep", Fixed: true}, nil, []string{"beforeMs", "afterMs", "revert"}},
		{rewrite.Finding{Rule: "sleep", Revert: &rewrite.Revert{Kind: rewrite.Skips, Test: "TestA", Detail: "a_test.go:3: no db"}},
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

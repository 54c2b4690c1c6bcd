package sleep

import (
	"github.com/unflake/unflake/rule"
	"testing"
)

func TestPrefilter(t *testing.T) {
	for src, want := range map[string]bool{
		"func f() { time.Sleep(1) }":      true,
		"func f() { <-tm.After(1) }":      true,
		"func f() { _ = time.Now() }":     false,
		"func f() { fmt.Println(\"x\") }": false,
	} {
		if got := prefilter([]byte(src), rule.Values{}); got != want {
			t.Errorf("prefilter(%q) = %v, want %v", src, got, want)
		}
	}
}

package parallel

import "testing"

func TestParse(t *testing.T) { // want `TestParse .*; not fixed: order change: .*fix --diff --unproven shows it for review`
	if got := Parse("a=1"); got["a"] != "1" {
		t.Fatalf("Parse = %v", got)
	}
}

func TestCount(t *testing.T) { // want `TestCount .*; not fixed: .*package-level variable calls`
	Count()
}

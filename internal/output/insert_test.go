package output_test

import (
	"testing"

	"github.com/unflake/unflake/internal/output"
)

func TestInsertIgnore(t *testing.T) {
	t.Parallel()
	old := "package a\n\nfunc TestA(t *testing.T) {\n\tx := 1\n\ttime.Sleep(1)\n}\n"
	// Another fix changed line 4; the site is line 5.
	new := "package a\n\nfunc TestA(t *testing.T) {\n\tx := 2\n\ttime.Sleep(1)\n}\n"
	got, ok := output.InsertIgnore([]byte(old), []byte(new), 5, "//unflake:ignore sleep reverted")
	want := "package a\n\nfunc TestA(t *testing.T) {\n\tx := 2\n\t//unflake:ignore sleep reverted\n\ttime.Sleep(1)\n}\n"
	if !ok || string(got) != want {
		t.Errorf("got %v:\n%s\nwant:\n%s", ok, got, want)
	}
	// The site's own line changed: nothing to anchor the directive to.
	if _, ok := output.InsertIgnore([]byte(old), []byte(new), 4, "//unflake:ignore sleep reverted"); ok {
		t.Errorf("inserted above a changed line")
	}
}

package setenv_test

import (
	"testing"

	"github.com/unflake/unflake/internal/goldentest"
)

// TestGolden checks setenv's cases (testdata/setenv) against their goldens
// in process; rules' TestGolden also runs and vets them (-tags slow).
func TestGolden(t *testing.T) { goldentest.Check(t, "setenv") }

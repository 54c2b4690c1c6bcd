package leak_test

import (
	"testing"

	"github.com/unflake/unflake/internal/goldentest"
)

// TestGolden checks leak's cases (testdata/leak) against their goldens
// in process; rules' TestGolden also runs and vets them (-tags slow).
func TestGolden(t *testing.T) { goldentest.Check(t, "leak") }

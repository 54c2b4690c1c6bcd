package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/unflake/unflake/rewrite"
)

// Verification remembers the fixes a test failed after outside
// the user's source: in unflake's cache directory (the result cache's,
// $UNFLAKE_CACHE), one small file per fix, named by a hash of its site
// key. A later fix --verify holds such a fix back at once, without
// building or running anything, and says it was reverted before. The
// site key hashes the rule, the package, the test and the matched code,
// so a fix whose code changed is tried again; so is one remembered more
// than memoryAge ago, since the code under test may have changed.
//
// The cache directory rather than a state file in the module: a file in
// the repository would be review noise (or need an ignore rule) and go
// stale as code moves, which is what the directives in the diff did; the
// cache directory is already where unflake keeps what earlier runs
// learned, keyed by content, and deleting it (or UNFLAKE_CACHE=off)
// forgets. fix --verify --record-ignores writes the directives as well,
// for a team that wants the record in review.

// memoryAge is how long a reverted fix is remembered.
const memoryAge = 30 * 24 * time.Hour

// A memory is the directory of remembered reverts, or none ("").
type memory string

// A remembered revert, as stored.
type remembered struct {
	Rule   string          `json:"rule"`
	File   string          `json:"file"`
	Line   int             `json:"line"`
	Test   string          `json:"test,omitempty"`
	Revert *rewrite.Revert `json:"revert"`
	At     time.Time       `json:"at"`
}

func (m memory) path(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(string(m), "verify-reverts", hex.EncodeToString(sum[:16])+".json")
}

// recall returns the revert remembered for the site key, or nil.
func (m memory) recall(key string, now time.Time) *rewrite.Revert {
	if m == "" {
		return nil
	}
	data, err := os.ReadFile(m.path(key))
	if err != nil {
		return nil
	}
	var r remembered
	if json.Unmarshal(data, &r) != nil || r.Revert == nil || now.Sub(r.At) > memoryAge {
		return nil
	}
	why := *r.Revert
	why.Remembered = r.At.UTC().Format(time.DateOnly)
	return &why
}

// remember stores the revert of f's fix. A failure to write is ignored:
// the memory saves time, it never changes a result.
func (m memory) remember(f rewrite.Finding, now time.Time) {
	if m == "" || f.Revert == nil {
		return
	}
	why := *f.Revert
	why.Remembered = ""
	data, err := json.Marshal(remembered{Rule: f.Rule, File: f.File, Line: f.Line, Test: f.Test, Revert: &why, At: now})
	if err != nil {
		return
	}
	p := m.path(f.Site().Key)
	if os.MkdirAll(filepath.Dir(p), 0o755) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), p) != nil {
		os.Remove(tmp.Name())
	}
}

// toRemember reports whether a finding's revert is verification's
// evidence against the fix itself: a fix that was applied in some round
// (tried holds the site key of each fix applied), proven or not, and
// that a test failed after, or one remembered so. The
// same fixes are recorded as directives under Options.RecordIgnores.
func toRemember(f rewrite.Finding, tried map[string]bool) bool {
	if f.Fixed || f.Revert == nil || !f.Revert.AfterRewrite() {
		return false
	}
	if f.Revert.Remembered != "" {
		return true
	}
	return tried[f.Site().Key]
}

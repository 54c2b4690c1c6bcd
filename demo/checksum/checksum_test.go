package checksum

import (
	"hash/adler32"
	"testing"
	"time"
)

// The budget holds on a quiet laptop and fails under -race or on a busy
// CI runner: unflake removes it and keeps the result check.
func TestAdler32(t *testing.T) {
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i)
	}
	start := time.Now()
	got := Adler32(data)
	if time.Since(start) > 20*time.Millisecond {
		t.Fatalf("Adler32 of 1MiB took %v, budget 20ms", time.Since(start))
	}
	if want := adler32.Checksum(data); got != want {
		t.Errorf("Adler32 = %#x, want %#x", got, want)
	}
}

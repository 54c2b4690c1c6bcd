package effects

import (
	"bytes"
	"encoding/gob"
	"reflect"
	"testing"
)

// TestFactGob checks that a summary survives the gob encoding the go
// command's drivers (go vet -vettool, unitchecker) use between packages.
func TestFactGob(t *testing.T) {
	in := &summaryFact{Summary{
		Effects: []Effect{
			{Kind: GoroutineEnds, Via: []string{"metrics.NewServer"}, What: "starts a goroutine", Ends: "Close", Type: "example.com/metrics.Server"},
			{Kind: Network, Via: []string{"metrics.Listen", "net.Listen"}, What: "uses the real network"},
		},
		Opaque:     "calls io.Writer.Write through an interface",
		Loops:      true,
		Blocks:     true,
		Spin:       &Effect{Kind: Spins, Via: []string{"metrics.Wait", "metrics.until"}, What: "spins on the real clock in a loop that never blocks (wait.go:12)"},
		Clock:      &Effect{Kind: ReadsClock, Via: []string{"metrics.Stamp"}, What: "reads the clock (stamp.go:7)"},
		Files:      &Effect{Kind: WritesFiles, Via: []string{"metrics.Spool", "os.OpenFile"}, What: "writes the file system"},
		Bubbles:    []int{1},
		RunsBubble: true,
	}}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(in); err != nil {
		t.Fatal(err)
	}
	out := new(summaryFact)
	if err := gob.NewDecoder(&buf).Decode(out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("after gob: got %+v, want %+v", out, in)
	}
}

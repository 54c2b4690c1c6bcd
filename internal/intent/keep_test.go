package intent

import "testing"

func TestKeeps(t *testing.T) {
	for _, c := range []struct {
		text string
		want string // the sentence, or "" for none
	}{
		// The red team's comments (issue 27, U5 and U6, the sleep rule).
		{"The client library hardcodes port 48089, so the server must listen on exactly 127.0.0.1:48089",
			"The client library hardcodes port 48089, so the server must listen on exactly 127.0.0.1:48089"},
		{"fixed port 48090, as in prod", "fixed port 48090, as in prod"},
		{"must be this socket", "must be this socket"},
		{"intentionally never closed", "intentionally never closed"},
		{"Deliberately leaves the file open: the test checks that the poller\nworks while another handle holds the file.",
			"Deliberately leaves the file open"},
		{"Do not convert to virtual time.", "Do not convert to virtual time."},
		{"Wait out the cooldown; this sleep is a real sleep and must stay one.", "this sleep is a real sleep and must stay one."},
		// More phrasings.
		{"on purpose: the handle outlives the test", "on purpose"},
		{"NOTE: the port is hard-coded in the client.", "the port is hard-coded in the client."},
		{"don't replace this listener", "don't replace this listener"},
		{"This must not be changed.", "This must not be changed."},
		{"listens on exactly :8080", "listens on exactly :8080"},
		{"keep this as it is", "keep this as it is"},
		// Negated: no claim.
		{"not on purpose", ""},
		{"This was not intentionally left open.", ""},
		{"rather than a hardcoded port, ask for a free one", ""},
		// Explanations, not claims: the most common comments in tests.
		{"wait for the server to start", ""},
		{"give the goroutine time to run", ""},
		{"n must be 3 after the flush", ""},
		{"retry exactly 3 times", ""},
		{"it does not use the network", ""},
		{"close the file when done", ""},
		{"the result must be sorted", ""},
		{"", ""},
	} {
		got, ok := Keeps(c.text)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Keeps(%q) = %q, %v; want %q", c.text, got, ok, c.want)
		}
	}
}

func TestUses(t *testing.T) {
	for _, c := range []struct {
		text  string
		claim Claim
		want  string
	}{
		// The red team's comment (issue 27, U7).
		{"Listen on an ephemeral loopback TCP port; the client dials it over TCP.", Network,
			"Listen on an ephemeral loopback TCP port"},
		{"a real socket", Network, "a real socket"},
		{"start a TCP listener", Network, "start a TCP listener"},
		{"Wait out the cooldown; this sleep is a real sleep and must stay one.", Clock,
			"this sleep is a real sleep and must stay one."},
		{"uses the system clock", Clock, "uses the system clock"},
		{"must keep real time", Clock, "must keep real time"},
		{"Do not convert to virtual time.", Clock, "Do not convert to virtual time."},
		{"never use a fake clock here", Clock, "never use a fake clock here"},
		{"the real disk, on purpose", FileSystem, "the real disk, on purpose"},
		// Negated: no claim.
		{"no real time needed", Clock, ""},
		{"instead of a real socket, an in-memory pipe", Network, ""},
		{"no network access", Network, ""},
		{"This could run on virtual time.", Clock, ""},
		// Another resource, or none.
		{"a real socket", Clock, ""},
		{"wait for the server to start", Clock, ""},
		{"give the goroutine time to run", Clock, ""},
		{"wait for the server to start", Network, ""},
	} {
		if got := Uses(c.text, c.claim); got != c.want {
			t.Errorf("Uses(%q, %v) = %q, want %q", c.text, c.claim, got, c.want)
		}
	}
}

func TestCode(t *testing.T) {
	for _, c := range []struct {
		src   string
		claim Claim
		want  bool
	}{
		{`l, err := net.Listen("tcp", "127.0.0.1:0")`, Network, true},
		{`l, err := listenPipe()`, Network, false},
		{`time.Sleep(120 * time.Millisecond)`, Clock, true},
		{`b.Do(fail)`, Clock, false},
		{`f, err := os.Open(p)`, FileSystem, true},
		{`f, err := os.Open(p)`, Network, false},
	} {
		if got := Code(c.src, c.claim); got != c.want {
			t.Errorf("Code(%q, %v) = %v, want %v", c.src, c.claim, got, c.want)
		}
	}
}

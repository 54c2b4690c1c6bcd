package intent

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"testing"
)

func TestSplitName(t *testing.T) {
	for name, want := range map[string][]string{
		"TestCacheOverTCP":    {"test", "cache", "over", "tcp"},
		"TestHTTPCache":       {"test", "http", "cache"},
		"TestTcpDial":         {"test", "tcp", "dial"},
		"TestTCPServer":       {"test", "tcp", "server"},
		"TestUDP4":            {"test", "udp", "4"},
		"test_real_clock":     {"test", "real", "clock"},
		"TestX/over a socket": {"test", "x", "over", "a", "socket"},
		"":                    nil,
	} {
		var got []string
		for _, w := range splitName(name) {
			got = append(got, w.lower)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("splitName(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestName(t *testing.T) {
	for _, c := range []struct {
		name  string
		claim Claim
		want  string
	}{
		{"TestCacheOverTCP", Network, "TCP"},
		{"TestTcpDial", Network, "Tcp"},
		{"testConnTCP", Network, "TCP"},
		{"TestUnixSocket", Network, "Socket"},
		{"TestCache/over loopback", Network, "loopback"},
		{"TestOnRealNetwork", Network, "RealNetwork"},
		{"TestWithRealClock", Clock, "RealClock"},
		{"TestWallClockBudget", Clock, "WallClock"},
		{"TestRealDisk", FileSystem, "RealDisk"},
		// A word inside a longer one is not the word.
		{"TestHTTPCache", Network, ""},
		{"TestStcpish", Network, ""},
		{"TestSocketless", Network, ""},
		{"TestNetworkPartition", Network, ""},
		// Live updates, not the clock.
		{"TestRealTimeUpdates", Clock, ""},
		{"TestCacheOverTCP", Clock, ""},
		{"TestRefillSystemClock", Clock, "SystemClock"},
		// A negation before the words says the opposite.
		{"TestPoolExpiryNoTCP", Network, ""},
		{"TestPoolExpiryWithoutSockets", Network, ""},
		{"TestPoolTCPKeepAliveOff", Network, "TCP"},
		{"TestWebsocketPool", Network, ""},
	} {
		if got := Name(c.name, c.claim); got != c.want {
			t.Errorf("Name(%q, %v) = %q, want %q", c.name, c.claim, got, c.want)
		}
	}
}

func TestComment(t *testing.T) {
	const socket = "The cache is served over a real socket here, so this test must keep real time."
	for _, c := range []struct {
		text  string
		claim Claim
		want  string
	}{
		{socket, Network, "real socket"},
		{socket, Clock, "must keep real time"},
		{socket, FileSystem, ""},
		{"This test needs a real TCP connection.", Network, "needs a real TCP connection"},
		{"It must use TCP: pipes hide the bug.", Network, "must use TCP"},
		{"Deliberately over loopback.", Network, "Deliberately over loopback"},
		{"Times the call with the wall-clock.", Clock, "wall-clock"},
		{"Writes to the real disk, not memory.", FileSystem, "real disk"},
		{"Uses the OS temp dir.", FileSystem, "OS temp dir"},
		// A mention is not a claim: the comment describes the code.
		{"The server answers over TCP.", Network, ""},
		{"Dial the listener's address.", Network, ""},
		{"Wait for the goroutine; time passes.", Clock, ""},
		// A negation cancels the phrase.
		{"The test needs no real network.", Network, ""},
		{"In memory instead of the real network.", Network, ""},
		{"Faster than real time.", Clock, ""},
		{"A bubble cannot hold the real network.", Network, ""},
		// Not across a sentence.
		{"It must be quick. TCP is slow.", Network, ""},
		{"It is real. Time passes.", Clock, ""},
		// Refusing what a fix would put in its place claims the real one.
		{"Intentionally not using synctest: Allow reads time.Now directly.", Clock, "not using synctest"},
		{"Not a synctest candidate.", Clock, "Not a synctest"},
		{"Do not convert to virtual time.", Clock, "not convert to virtual time"},
		{"Don't use a fake clock here.", Clock, "Don't use a fake clock"},
		{"Unlike TestC16, this one could run on virtual time; it is not about the real clock.", Clock, ""},
		{"Runs under synctest.", Clock, ""},
		// The clock of the system, by any name.
		{"The clock here is the system clock, on purpose.", Clock, "system clock"},
		{"Refill is time-based; it is tested against the clock the OS provides.", Clock, "clock the OS provides"},
		{"Wait out the cooldown; this sleep is a real sleep and must stay one.", Clock, "real sleep"},
		{"It blocks for 350ms of real, physical time.", Clock, "physical time"},
		{"The monitor in production compares beats with the wall clock.", Clock, ""},
		{"MUST USE THE WALL CLOCK.", Clock, "MUST USE THE WALL CLOCK"},
		// A second red team's wordings.
		{"Needs real elapsed time.", Clock, "Needs real elapsed time"},
		{"Measures genuine elapsed time.", Clock, "genuine elapsed time"},
		{"Runs against the kernel clock.", Clock, "kernel clock"},
		{"Uses the operating system's clock.", Clock, "operating system's clock"},
		{"Keep this on the monotonic clock.", Clock, "monotonic clock"},
		{"Do not fake the clock here.", Clock, "not fake the clock"},
		{"Faking the clock defeats this test.", Clock, "Faking the clock defeats"},
		{"A fake clock is not what production sees.", Clock, "fake clock is not what"},
		{"Leave this subtest on genuine elapsed time; faking the clock defeats it.", Clock, "genuine elapsed time"},
		{"A fake clock drives the scheduler.", Clock, ""},
		{"The elapsed time is logged.", Clock, ""},
		// Said of something else, or of no need.
		{"Unlike a real TCP peer, the pipe never buffers.", Network, ""},
		{"In production the cache runs on the real clock; here any clock will do.", Clock, ""},
		{"We used to need real time here, but not any more.", Clock, ""},
		{"The cache uses the real clock in production.", Clock, ""},
		{"The real time taken is irrelevant.", Clock, ""},
		{"See https://example.com/real-time-guarantees for the design.", Clock, ""},
		{"It needs real time; the exact value is irrelevant.", Clock, "needs real time"},
	} {
		if got := Comment(c.text, c.claim); got != c.want {
			t.Errorf("Comment(%q, %v) = %q, want %q", c.text, c.claim, got, c.want)
		}
	}
}

func TestOf(t *testing.T) {
	const src = `package p

// TestCache checks the cache.
func TestCache(t *testing.T) {
	// The cache is served over a real socket here, so this test must
	// keep real time.
	x := 1 // trailing
	_ = x
}

// Unrelated.
func helper() {}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	fd := f.Decls[0].(*ast.FuncDecl)
	groups := Comments(fset, f, fd)
	if len(groups) != 3 {
		t.Fatalf("Comments: %d groups, want 3 (doc, body, trailing)", len(groups))
	}
	s, ok := Of(Network, []string{fd.Name.Name}, groups)
	if want := `the test says it exercises the real network (a comment says "real socket"), which net.Pipe would replace; left as is`; !ok || s.Reason("the test", "net.Pipe") != want {
		t.Errorf("Of(Network) = %q, %v", s.Reason("the test", "net.Pipe"), ok)
	}
	s, ok = Of(Clock, []string{fd.Name.Name}, groups)
	if !ok || s.Where != `a comment says "must keep real time"` {
		t.Errorf("Of(Clock) = %+v, %v", s, ok)
	}
	if s, ok := Of(Network, []string{"TestCacheOverTCP"}, nil); !ok || s.Where != "its name says TCP" {
		t.Errorf("Of(Network, TestCacheOverTCP) = %+v, %v", s, ok)
	}
	// A phrase cut from a quotation prints without its marks.
	if got := quote("must keep the “real time"); got != `"must keep the real time"` {
		t.Errorf("quote = %s", got)
	}
	helper := f.Decls[1].(*ast.FuncDecl)
	if groups := Comments(fset, f, helper); len(groups) != 1 || groups[0].Text() != "Unrelated.\n" {
		t.Errorf("Comments(helper) = %v", groups)
	}
	// A statement's comment above it and its trailing one.
	stmt := fd.Body.List[0]
	if groups := Comments(fset, f, stmt); len(groups) != 2 {
		t.Errorf("Comments(stmt): %d groups, want 2", len(groups))
	}
}

func TestProseDropsAnalysistestExpectations(t *testing.T) {
	g := &ast.CommentGroup{List: []*ast.Comment{{Text: "// want `waits on the real clock`"}}}
	if got := Prose(g); got != "" {
		t.Errorf("Prose(want directive) = %q, want none", got)
	}
	g = &ast.CommentGroup{List: []*ast.Comment{{Text: "// want to keep the real clock here"}}}
	if Comment(Prose(g), Clock) == "" {
		t.Errorf("a sentence starting with want is prose, and claims the clock")
	}
}

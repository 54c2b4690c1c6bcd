package freeport

import "testing"

func TestHasPort(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"localhost:8080", true},
		{"8080", true},
		{"http://x:8080/a", true},
		{"18080", false},
		{"80801", false},
		{"18080 and 8080", true},
		{"", false},
	} {
		if got := hasPort(c.s, "8080"); got != c.want {
			t.Errorf("hasPort(%q) = %v, want %v", c.s, got, c.want)
		}
	}
}

func TestSplitURL(t *testing.T) {
	for _, c := range []struct {
		v, addr        string
		prefix, suffix string
		ok             bool
	}{
		{"http://localhost:8080/path", "localhost:8080", "http://", "/path", true},
		{"http://localhost:8080", "localhost:8080", "http://", "", true},
		{"http://localhost:8080?q=1", "localhost:8080", "http://", "?q=1", true},
		{"http://localhost:8080/?port=8080", "localhost:8080", "", "", false}, // the port again
		{"http://localhost:8080", ":8080", "", "", false},                     // another host
		{"localhost:8080", "localhost:8080", "", "", false},                   // not a URL
		{"http://localhost:80801", "localhost:8080", "", "", false},
	} {
		p, s, ok := splitURL(c.v, c.addr, "8080")
		if p != c.prefix || s != c.suffix || ok != c.ok {
			t.Errorf("splitURL(%q, %q) = %q, %q, %v; want %q, %q, %v", c.v, c.addr, p, s, ok, c.prefix, c.suffix, c.ok)
		}
	}
}

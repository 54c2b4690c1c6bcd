package cli

import "testing"

func TestGitHubEscaping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, data, property string }{
		{"plain text", "plain text", "plain text"},
		{"100% done", "100%25 done", "100%25 done"},
		{"a\r\nb\nc", "a%0D%0Ab%0Ac", "a%0D%0Ab%0Ac"},
		{"x: a, b", "x: a, b", "x%3A a%2C b"},
		{"%0A", "%250A", "%250A"},
		{"::warning ::x", "::warning ::x", "%3A%3Awarning %3A%3Ax"},
	} {
		if got := githubData(tc.in); got != tc.data {
			t.Errorf("githubData(%q) = %q, want %q", tc.in, got, tc.data)
		}
		if got := githubProperty(tc.in); got != tc.property {
			t.Errorf("githubProperty(%q) = %q, want %q", tc.in, got, tc.property)
		}
	}
}

func TestSARIFURI(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"m_test.go":           "m_test.go",
		"a/b/c_test.go":       "a/b/c_test.go",
		"dir with space/x.go": "dir%20with%20space/x.go",
		"c:/x.go":             "c%3A/x.go",
		"100%/x.go":           "100%25/x.go",
		"../other/x_test.go":  "../other/x_test.go",
	} {
		if got := sarifURI(in); got != want {
			t.Errorf("sarifURI(%q) = %q, want %q", in, got, want)
		}
	}
}

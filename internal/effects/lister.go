package effects

import "sort"

// A Listing is what the load listed of one package: its compiled Go files
// (those cgo wrote live in the build cache, without a .go suffix) and the
// package paths it imports.
type Listing struct {
	Files   []string
	Imports []string // sorted
	Std     bool     // of the standard library
}

// A Lister knows the packages of the load and their imports: what a rule
// needs to walk every package a test binary links (an external test
// package's dependencies included), which the pass's types do not hold.
// Loader and the Source Local returns implement it.
type Lister interface {
	// Listed returns the listing of the package path (an import path, or
	// "p_test" for the external tests of p), and false when the load did
	// not list it.
	Listed(path string) (Listing, bool)
}

// Listed returns what src's Listed does, or false when src lists nothing.
func Listed(src Source, path string) (Listing, bool) {
	if l, ok := src.(Lister); ok {
		return l.Listed(path)
	}
	return Listing{}, false
}

// Listed implements Lister.
func (l *Loader) Listed(path string) (Listing, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls := l.listed[path]
	if ls == nil {
		return Listing{}, false
	}
	out := Listing{Files: append([]string(nil), ls.files...), Std: ls.std}
	for _, q := range ls.imports {
		out.Imports = append(out.Imports, q)
	}
	sort.Strings(out.Imports)
	return out, true
}

// Listed implements Lister with the Source the local one defers to.
func (l *local) Listed(path string) (Listing, bool) {
	return Listed(l.other, path)
}

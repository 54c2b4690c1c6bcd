package rewrite

import (
	"bytes"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
)

// keepImportLayout returns fixed with the import block of src, changed
// only by the imports the fixes added or removed. When dst's restorer
// manages a file's imports (a fix imports "sync"), it regroups the whole
// block: standard library first, everything else after. A file whose
// groups are laid out otherwise (a module's own imports beside the
// standard library, third-party ones in a group of their own) would see
// every import line move. Here each added import joins the first group
// that holds an import of its kind (standard library or not), or a new
// group at the end; a removed one leaves its line. A block this cannot
// edit line by line (an import spanning lines, several import
// declarations, an import with a comment on it) keeps dst's layout.
func keepImportLayout(src, fixed []byte) []byte {
	old, ok := importBlock(src)
	if !ok {
		return fixed
	}
	nu, ok := importBlock(fixed)
	if !ok || bytes.Equal(src[old.start:old.end], fixed[nu.start:nu.end]) {
		return fixed
	}
	want := map[string]bool{}
	for _, s := range nu.specs {
		want[s.key] = true
	}
	have := map[string]bool{}
	for _, s := range old.specs {
		have[s.key] = true
	}
	// The old block's lines, without the removed imports.
	lines := strings.Split(string(src[old.start:old.end]), "\n")
	specAt := map[int]importSpec{}
	for _, s := range old.specs {
		specAt[s.line-old.line] = s
	}
	var kept []string
	var kinds []int // per kept line: 0 not an import, 1 std, 2 other
	for i, l := range lines {
		s, isSpec := specAt[i]
		if isSpec && !want[s.key] {
			continue
		}
		kept = append(kept, l)
		switch {
		case !isSpec:
			kinds = append(kinds, 0)
		case s.std:
			kinds = append(kinds, 1)
		default:
			kinds = append(kinds, 2)
		}
	}
	// Added imports go after the last import of their kind in the first
	// group that has one; the group is sorted by gofmt below.
	for _, s := range nu.specs {
		if have[s.key] {
			continue
		}
		kind := 2
		if s.std {
			kind = 1
		}
		at := -1
		for i, k := range kinds {
			if k == kind {
				at = i
				for at+1 < len(kinds) && kinds[at+1] != 0 {
					at++
				}
				break
			}
		}
		line := "\t" + s.text
		if at < 0 {
			// No group of its kind: a group of its own, before the
			// closing parenthesis.
			end := len(kept) - 1
			kept = slices.Insert(kept, end, "", line)
			kinds = slices.Insert(kinds, end, 0, kind)
			continue
		}
		kept = slices.Insert(kept, at+1, line)
		kinds = slices.Insert(kinds, at+1, kind)
	}
	var out bytes.Buffer
	out.Write(fixed[:nu.start])
	out.WriteString(strings.Join(kept, "\n"))
	out.Write(fixed[nu.end:])
	formatted, err := format.Source(out.Bytes())
	if err != nil {
		return fixed
	}
	// The result must import exactly what dst's output imports.
	check, ok := importBlock(formatted)
	if !ok || len(check.specs) != len(nu.specs) {
		return fixed
	}
	for _, s := range check.specs {
		if !want[s.key] {
			return fixed
		}
	}
	return formatted
}

// imports is a file's one parenthesised import declaration.
type imports struct {
	start, end int // byte offsets of "import (" and just after ")"
	line       int // line of "import ("
	specs      []importSpec
}

type importSpec struct {
	key  string // name and path: what the import is
	text string // as written: `name "path"`
	line int
	std  bool
}

func importBlock(src []byte) (imports, bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ImportsOnly|parser.ParseComments)
	if err != nil {
		return imports{}, false
	}
	var decl *ast.GenDecl
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT {
			continue
		}
		if decl != nil || !g.Lparen.IsValid() {
			return imports{}, false
		}
		decl = g
	}
	if decl == nil {
		return imports{}, false
	}
	b := imports{
		start: fset.Position(decl.Pos()).Offset,
		end:   fset.Position(decl.End()).Offset,
		line:  fset.Position(decl.Pos()).Line,
	}
	seen := map[int]bool{}
	for _, sp := range decl.Specs {
		is := sp.(*ast.ImportSpec)
		start, end := fset.Position(is.Pos()), fset.Position(is.End())
		if start.Line != end.Line || seen[start.Line] || is.Doc != nil || is.Comment != nil {
			return imports{}, false
		}
		seen[start.Line] = true
		path, err := strconv.Unquote(is.Path.Value)
		if err != nil {
			return imports{}, false
		}
		name := ""
		if is.Name != nil {
			name = is.Name.Name
		}
		first, _, _ := strings.Cut(path, "/")
		b.specs = append(b.specs, importSpec{
			key:  name + " " + path,
			text: string(src[start.Offset:end.Offset]),
			line: start.Line,
			std:  !strings.Contains(first, "."),
		})
	}
	// Comments between specs stay where they are, as lines of their own;
	// a comment on a spec's line was refused above.
	return b, true
}

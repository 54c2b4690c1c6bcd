package bubble

import (
	"go/ast"
	"go/token"
	"go/types"
	"sort"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// A reading of the clock can be coarsened through text or a number as
// well as by Truncate: formatted with a layout that keeps less than its
// nanoseconds (http.TimeFormat for a Last-Modified header, time.RFC3339,
// "15:04:05.000") and parsed back (http.ParseTime of an If-Modified-Since
// header the client echoes, time.Parse), or made a count of seconds,
// milliseconds or microseconds (now.Unix(), a token's exp) and rebuilt
// (time.Unix(exp, 0)), it comes back without its fraction. A bubble's
// clock starts at 2000-01-01 00:00:00.000000000 and moves only by the
// waits, so a reading taken before the first wait has no fraction (and
// one after waits of whole milliseconds nothing below the millisecond),
// and the round trip loses nothing there; in real time it always drops
// some. A bug that compares the
// parsed time with the reading it came from (a blob "newer" than its own
// header by its fraction, so If-Modified-Since never matches) fails the
// original and passes the bubble; the correct code (comparing the text,
// or the reading truncated to the second) passes either way, so running
// cannot tell: not fixed, as coarsened's coarsenings are (red team batch
// 18, lastmodified). Both halves are read by syntax in every build of
// the package, the parse in its test files too (a test may parse the
// header and hand the time back), since the comparison that matters may
// be only a bug's.

// coarseLayouts are the layouts of package time that keep less than a
// reading's nanoseconds (all but RFC3339Nano and StampNano).
var coarseLayouts = []string{"ANSIC", "UnixDate", "RubyDate", "RFC822", "RFC822Z", "RFC850", "RFC1123", "RFC1123Z", "RFC3339", "Kitchen", "Stamp", "StampMilli", "StampMicro", "DateTime", "DateOnly", "TimeOnly"}

// textCoarsened names a reading made text or a count coarser than its
// nanoseconds in files and a time parsed or rebuilt from one in files or
// tests, "x at file:line, turned back into a time by y at file:line", or
// "".
func textCoarsened(files, tests []*lockFile) string {
	timeOf, tn := fileTimeNames(files)
	var formats, parses []string
	for _, lf := range files {
		tm, imports := timeOf[lf], match.ImportNames(lf.f)
		ast.Inspect(lf.f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
			if !ok {
				return true
			}
			layout := -1
			switch sel.Sel.Name {
			case "Format":
				layout = 0
			case "AppendFormat":
				layout = 1
			case "Unix", "UnixMilli", "UnixMicro":
				// A count of whole units: a Unix time in a token, a
				// header, a column.
				if len(call.Args) == 0 && tn.isTime(sel.X, tm) {
					formats = append(formats, types.ExprString(call)+" at "+lf.at(call.Pos()))
				}
			}
			if layout >= 0 && len(call.Args) == layout+1 && tn.isTime(sel.X, tm) && coarseLayout(call.Args[layout], tm, imports) {
				formats = append(formats, types.ExprString(call)+" at "+lf.at(call.Pos()))
			}
			return true
		})
	}
	for _, lf := range append(append([]*lockFile(nil), files...), tests...) {
		tm, imports := timeName(lf.f), match.ImportNames(lf.f)
		ast.Inspect(lf.f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
			switch {
			case !ok:
			case parsesTime(sel, tm, imports):
				parses = append(parses, types.ExprString(call.Fun)+" at "+lf.at(call.Pos()))
			case rebuildsTime(sel, call, tm):
				parses = append(parses, types.ExprString(call)+" at "+lf.at(call.Pos()))
			}
			return true
		})
	}
	if len(formats) == 0 || len(parses) == 0 {
		return ""
	}
	sort.Strings(formats)
	sort.Strings(parses)
	return formats[0] + ", turned back into a time by " + parses[0]
}

// rebuildsTime reports whether call, sel its function, makes a time of a
// count that is not a constant: time.Unix(n, 0), time.UnixMilli(n),
// time.UnixMicro(n).
func rebuildsTime(sel *ast.SelectorExpr, call *ast.CallExpr, tm string) bool {
	if len(call.Args) == 0 {
		return false
	}
	if _, lit := ast.Unparen(call.Args[0]).(*ast.BasicLit); lit {
		return false
	}
	switch {
	case isPkgSel(sel, tm, "Unix"):
		return len(call.Args) == 2 && zeroLit(call.Args[1])
	case isPkgSel(sel, tm, "UnixMilli", "UnixMicro"):
		return len(call.Args) == 1
	}
	return false
}

// coarseLayout reports whether e, a Format layout, keeps less than a
// reading's nanoseconds: a layout constant of package time that does,
// http.TimeFormat, or a string literal without nine fractional digits
// after its seconds (05.000000000, 05,999999999).
func coarseLayout(e ast.Expr, tm string, imports map[string]string) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.SelectorExpr:
		if isPkgSel(e, tm, coarseLayouts...) {
			return true
		}
		x, ok := e.X.(*ast.Ident)
		return ok && imports[x.Name] == "net/http" && e.Sel.Name == "TimeFormat"
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return false
		}
		s, err := strconv.Unquote(e.Value)
		if err != nil {
			return false
		}
		for _, frac := range []string{"05.000000000", "05.999999999", "05,000000000", "05,999999999"} {
			if strings.Contains(s, frac) {
				return false
			}
		}
		return true
	}
	return false
}

// parsesTime reports whether sel names a function that parses a time
// from text: time.Parse, time.ParseInLocation, http.ParseTime,
// mail.ParseDate.
func parsesTime(sel *ast.SelectorExpr, tm string, imports map[string]string) bool {
	if isPkgSel(sel, tm, "Parse", "ParseInLocation") {
		return true
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	switch imports[x.Name] {
	case "net/http":
		return sel.Sel.Name == "ParseTime"
	case "net/mail":
		return sel.Sel.Name == "ParseDate"
	}
	return false
}

// textCoarseHazard says where the code under test, in some build, makes
// a reading text or a count coarser than its nanoseconds and a time is
// parsed or rebuilt from one, or "" (textCoarsened).
func (a *Analysis) textCoarseHazard() string {
	at := textCoarsened(a.codeFiles(), a.testFiles())
	if at == "" {
		return ""
	}
	return "the code under test, in some build, makes a reading of the clock text or a count coarser than its nanoseconds (" + at + "): a synctest bubble's clock starts at 2000-01-01 00:00:00.000000000 UTC, on a whole second, and moves only by the waits, so a reading taken before the first wait has no fraction (and one after waits of whole milliseconds nothing below them) and the round trip loses nothing there, where in real time it drops the rest; a bug that compares the time turned back with the reading it came from (a time a fraction newer than its own header, If-Modified-Since never matching) fails the original and passes the bubble, and running the correct build cannot tell"
}

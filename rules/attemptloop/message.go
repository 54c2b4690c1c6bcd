package attemptloop

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
	"strings"
	"time"

	"github.com/unflake/unflake/internal/match"
)

// count returns the constant attempt count of l, if it is one.
func (c *checker) count(l *loop) (int64, bool) {
	if l.lo == nil || l.hi == nil {
		return 0, false
	}
	lo, ok1 := c.constBound(l.lo)
	hi, ok2 := c.constBound(l.hi)
	if !ok1 || !ok2 {
		return 0, false
	}
	n := hi - lo
	if (hi >= lo) != (n >= 0) {
		return 0, false // overflow
	}
	if l.incl {
		n++
	}
	return n, true
}

// constWaits splits the waits into the sum of the constant ones and the
// others.
func (c *checker) constWaits(waits []wait) (sum time.Duration, others []ast.Expr, ok bool) {
	for _, w := range waits {
		d, isConst := match.ConstDuration(c.info, w.d)
		if !isConst {
			others = append(others, w.d)
			continue
		}
		s, overflow := match.AddDuration(sum, d)
		if overflow {
			return 0, nil, false
		}
		sum = s
	}
	return sum, others, true
}

// message says what the poll is: "poll bounded by 20 attempts of 5ms
// (100ms) runs out under load".
func (c *checker) message(l *loop, waits []wait) string {
	n, constCount := c.count(l)
	sum, others, ok := c.constWaits(waits)
	for _, w := range waits {
		ok = ok && !w.nested // the time a pass takes is not known
	}
	switch {
	case !ok && constCount:
		return fmt.Sprintf("poll bounded by %s runs out under load", plural(n, "attempt"))
	case !ok || l.lo == nil || l.hi == nil:
		return "poll bounded by an attempt count runs out under load"
	case !constCount:
		return fmt.Sprintf("poll bounded by an attempt count (%s × %s) runs out under load", parenText(l.hi, c.countText(l)), waitText(sum, others))
	case len(others) > 0:
		return fmt.Sprintf("poll bounded by %s of %s runs out under load", plural(n, "attempt"), waitText(sum, others))
	}
	if total, overflow := match.MulDuration(sum, n); !overflow {
		return fmt.Sprintf("poll bounded by %s of %s (%s) runs out under load", plural(n, "attempt"), match.FormatDuration(sum), match.FormatDuration(total))
	}
	return fmt.Sprintf("poll bounded by %s of %s runs out under load", plural(n, "attempt"), match.FormatDuration(sum))
}

func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.FormatInt(n, 10) + " " + word + "s"
}

// countText writes the attempt count of l as an expression.
func (c *checker) countText(l *loop) string {
	if n, ok := c.count(l); ok {
		return strconv.FormatInt(n, 10)
	}
	lo, loConst := c.constBound(l.lo)
	hi, hiConst := c.constBound(l.hi)
	inc := int64(0)
	if l.incl {
		inc = 1
	}
	switch {
	case loConst:
		return types.ExprString(l.hi) + offsetText(inc-lo)
	case hiConst:
		return strconv.FormatInt(hi+inc, 10) + "-" + exprText(l.lo, true)
	default:
		return types.ExprString(l.hi) + "-" + exprText(l.lo, true) + offsetText(inc)
	}
}

// zero is the start of a range loop's counter.
var zero = &ast.BasicLit{Kind: token.INT, Value: "0"}

// constBound returns the value of a loop bound if it is constant.
func (c *checker) constBound(e ast.Expr) (int64, bool) {
	if e == zero {
		return 0, true
	}
	return match.ConstInt(c.info, e)
}

func offsetText(k int64) string {
	switch {
	case k > 0:
		return "+" + strconv.FormatInt(k, 10)
	case k < 0:
		return strconv.FormatInt(k, 10)
	}
	return ""
}

// exprText writes e, in parentheses if paren and it is a binary expression.
func exprText(e ast.Expr, paren bool) string {
	if _, ok := ast.Unparen(e).(*ast.BinaryExpr); ok && paren {
		return "(" + types.ExprString(e) + ")"
	}
	return types.ExprString(e)
}

// parenText returns text, the rendering of a count whose upper bound is
// hi, in parentheses if it is more than hi: "n+1" gives "(n+1)".
func parenText(hi ast.Expr, text string) string {
	if text != types.ExprString(hi) {
		return "(" + text + ")"
	}
	return text
}

func waitText(sum time.Duration, others []ast.Expr) string {
	var each []string
	for _, o := range others {
		each = append(each, exprText(o, len(others) > 1 || sum != 0))
	}
	if sum != 0 || len(others) == 0 {
		each = append(each, match.FormatDuration(sum))
	}
	if len(each) == 1 {
		return each[0]
	}
	return "(" + strings.Join(each, " + ") + ")"
}

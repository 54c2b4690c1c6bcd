package rewrite

import "testing"

func TestKeepImportLayout(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, src, fixed, want string }{{
		name: "std import joins the group holding the standard library",
		src: `package p

import (
	"fmt"
	"example.com/m/own"

	"github.com/x/y"
)
`,
		fixed: `package p

import (
	"fmt"
	"sync"

	"example.com/m/own"
	"github.com/x/y"
)
`,
		want: `package p

import (
	"example.com/m/own"
	"fmt"
	"sync"

	"github.com/x/y"
)
`,
	}, {
		name: "removed import leaves its line only",
		src: `package p

import (
	"fmt"
	"time"

	x "github.com/x/y"
	"example.com/z"
)
`,
		fixed: `package p

import (
	"fmt"

	"example.com/z"
	x "github.com/x/y"
)
`,
		want: `package p

import (
	"fmt"

	"example.com/z"
	x "github.com/x/y"
)
`,
	}, {
		name: "a kind with no group gets one",
		src: `package p

import (
	"fmt"
)
`,
		fixed: `package p

import (
	"fmt"

	"golang.org/x/sync/errgroup"
)
`,
		want: `package p

import (
	"fmt"

	"golang.org/x/sync/errgroup"
)
`,
	}, {
		name: "a commented import keeps dst's layout",
		src: `package p

import (
	"fmt" // printing
	"example.com/m/own"
)
`,
		fixed: `package p

import (
	"fmt" // printing
	"sync"

	"example.com/m/own"
)
`,
		want: `package p

import (
	"fmt" // printing
	"sync"

	"example.com/m/own"
)
`,
	}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := string(keepImportLayout([]byte(c.src), []byte(c.fixed)))
			if got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

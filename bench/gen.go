package main

import (
	"bytes"
	"fmt"
	"go/format"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// genConfig describes the synthetic module.
type genConfig struct {
	Packages  int     // number of packages
	TestFiles int     // _test.go files per package
	SrcFiles  int     // non-test files per package (at least 2 are always written)
	Flaky     float64 // probability that a test file holds flaky patterns
	Layer     int     // packages per layer of the import DAG
	Seed      uint64
}

// genStats summarizes what was generated.
type genStats struct {
	Packages       int
	Files          int
	TestFiles      int
	Lines          int
	Bytes          int64
	FlakyFiles     int // test files with at least one flaky pattern
	FlakyPackages  int // packages with at least one flaky test file
	FlakySites     int // flaky patterns (one poll loop or one bare sleep each)
	PollSites      int // of which attempt-count polls
	ImportEdges    int // intra-module imports between non-test packages
	MaxDepth       int // longest import chain, in packages
	ExternalTestPk int // packages with an external (_test) test package
}

const modPath = "example.com/synth"

func pkgName(i int) string { return fmt.Sprintf("p%04d", i) }
func pkgPath(i int) string { return modPath + "/pkg/" + pkgName(i) }

// generate writes the module into dir, which must be empty or absent.
//
// Package i is a pure function of (Seed, i), so the first N packages of a
// larger module are byte-identical to a module of N packages: the scaling
// runs measure the same code growing, not different code.
func generate(dir string, c genConfig) (genStats, error) {
	var st genStats
	if c.Packages < 1 || c.TestFiles < 1 {
		return st, fmt.Errorf("need at least one package and one test file per package")
	}
	if c.SrcFiles < 2 {
		c.SrcFiles = 2
	}
	if c.Layer < 1 {
		c.Layer = 50
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return st, err
	}
	gomod := "module " + modPath + "\n\ngo 1.22\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return st, err
	}
	depth := make([]int, c.Packages)
	for i := 0; i < c.Packages; i++ {
		p := newPkgGen(i, c)
		files := p.files()
		pdir := filepath.Join(dir, "pkg", p.name)
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return st, err
		}
		names := make([]string, 0, len(files))
		for name := range files {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			src, err := format.Source(files[name])
			if err != nil {
				return st, fmt.Errorf("generated %s/%s does not parse: %v\n%s", p.name, name, err, files[name])
			}
			if err := os.WriteFile(filepath.Join(pdir, name), src, 0o644); err != nil {
				return st, err
			}
			st.Files++
			st.Bytes += int64(len(src))
			st.Lines += bytes.Count(src, []byte("\n"))
			if strings.HasSuffix(name, "_test.go") {
				st.TestFiles++
			}
		}
		st.Packages++
		st.FlakyFiles += p.flakyFiles
		st.FlakySites += p.flakySites
		st.PollSites += p.pollSites
		if p.flakyFiles > 0 {
			st.FlakyPackages++
		}
		if p.external {
			st.ExternalTestPk++
		}
		st.ImportEdges += len(p.deps)
		depth[i] = 1
		for _, d := range p.deps {
			depth[i] = max(depth[i], depth[d]+1)
		}
		st.MaxDepth = max(st.MaxDepth, depth[i])
	}
	return st, nil
}

// pkgGen generates one package.
type pkgGen struct {
	idx      int
	name     string
	cfg      genConfig
	rng      *rand.Rand
	deps     []int // indices of imported packages, all lower than idx
	external bool  // has an external test package

	flakyFiles, flakySites, pollSites int
}

func newPkgGen(i int, c genConfig) *pkgGen {
	p := &pkgGen{
		idx:  i,
		name: pkgName(i),
		cfg:  c,
		rng:  rand.New(rand.NewPCG(c.Seed, uint64(i)*0x9e3779b97f4a7c15+1)),
	}
	// Layered DAG: a package of layer L > 0 imports one to three packages,
	// the first always from layer L-1 (so chains are as deep as the layers),
	// the others from any lower layer.
	layer := i / c.Layer
	if layer > 0 {
		seen := map[int]bool{}
		prevLo := (layer - 1) * c.Layer
		first := prevLo + p.rng.IntN(c.Layer)
		p.deps = append(p.deps, first)
		seen[first] = true
		for n := p.rng.IntN(3); n > 0; n-- {
			d := p.rng.IntN(layer * c.Layer)
			if !seen[d] {
				seen[d] = true
				p.deps = append(p.deps, d)
			}
		}
	}
	return p
}

// files returns the package's files by name, unformatted.
func (p *pkgGen) files() map[string][]byte {
	out := map[string][]byte{
		"store.go": p.storeFile(),
		"text.go":  p.textFile(),
	}
	for k := 2; k < p.cfg.SrcFiles; k++ {
		out[fmt.Sprintf("extra%d.go", k)] = p.extraFile(k)
	}
	kinds := []string{"store", "text", "service", "api"}
	for j := 0; j < p.cfg.TestFiles; j++ {
		kind := kinds[j%len(kinds)]
		flaky := p.rng.Float64() < p.cfg.Flaky
		var name string
		if j < len(kinds) {
			name = kind + "_test.go"
		} else {
			name = fmt.Sprintf("%s%d_test.go", kind, j)
		}
		out[name] = p.testFile(kind, j, flaky)
	}
	return out
}

// imports renders an import block; std paths first, then module paths.
func imports(std map[string]bool, local []string) string {
	var b strings.Builder
	b.WriteString("import (\n")
	paths := make([]string, 0, len(std))
	for s := range std {
		paths = append(paths, s)
	}
	sort.Strings(paths)
	for _, s := range paths {
		fmt.Fprintf(&b, "\t%q\n", s)
	}
	if len(local) > 0 {
		b.WriteString("\n")
		for _, l := range local {
			b.WriteString("\t" + l + "\n")
		}
	}
	b.WriteString(")\n")
	return b.String()
}

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

func (p *pkgGen) storeFile() []byte {
	var b strings.Builder
	n := p.name
	fmt.Fprintf(&b, "// Package %s is synthetic code generated by unflake's benchmark (bench/gen.go).\npackage %s\n\n", n, n)
	var local []string
	for k, d := range p.deps {
		local = append(local, fmt.Sprintf("d%d %q", k, pkgPath(d)))
	}
	b.WriteString(imports(set("errors", "fmt", "sort", "sync"), local))
	fmt.Fprintf(&b, `
// ErrNotFound is returned when an item is missing.
var ErrNotFound = errors.New("%[1]s: not found")

// Item is a stored record.
type Item struct {
	ID    int
	Name  string
	Tags  []string
	Score float64
}

// String implements fmt.Stringer.
func (it Item) String() string {
	return fmt.Sprintf("%%d:%%s%%v", it.ID, it.Name, it.Tags)
}

// Store is a map of items safe for concurrent use.
type Store struct {
	mu    sync.RWMutex
	items map[int]Item
	hooks []func(Item)
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{items: make(map[int]Item)}
}

// OnPut registers h to be called after each Put.
func (s *Store) OnPut(h func(Item)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks = append(s.hooks, h)
}

// Put adds or replaces an item and runs the hooks.
func (s *Store) Put(it Item) {
	s.mu.Lock()
	s.items[it.ID] = it
	hooks := make([]func(Item), len(s.hooks))
	copy(hooks, s.hooks)
	s.mu.Unlock()
	for _, h := range hooks {
		h(it)
	}
}

// Get returns the item with the given id.
func (s *Store) Get(id int) (Item, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	it, ok := s.items[id]
	if !ok {
		return Item{}, fmt.Errorf("get %%d: %%w", id, ErrNotFound)
	}
	return it, nil
}

// Delete removes the item with the given id.
func (s *Store) Delete(id int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.items[id]; !ok {
		return fmt.Errorf("delete %%d: %%w", id, ErrNotFound)
	}
	delete(s.items, id)
	return nil
}

// Len returns the number of items.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.items)
}

// Names returns the items' names, sorted.
func (s *Store) Names() []string {
	s.mu.RLock()
	names := make([]string, 0, len(s.items))
	for _, it := range s.items {
		names = append(names, it.Name)
	}
	s.mu.RUnlock()
	sort.Strings(names)
	return names
}

// Top returns the n items with the highest score, best first.
func (s *Store) Top(n int) []Item {
	s.mu.RLock()
	items := make([]Item, 0, len(s.items))
	for _, it := range s.items {
		items = append(items, it)
	}
	s.mu.RUnlock()
	sort.Slice(items, func(i, j int) bool {
		if items[i].Score != items[j].Score {
			return items[i].Score > items[j].Score
		}
		return items[i].ID < items[j].ID
	})
	if n > len(items) {
		n = len(items)
	}
	return items[:n]
}
`, n)
	for k, d := range p.deps {
		fmt.Fprintf(&b, `
// FromD%[1]d converts an item of package %[2]s.
func FromD%[1]d(x d%[1]d.Item) Item {
	tags := make([]string, 0, len(x.Tags))
	for _, t := range x.Tags {
		tags = append(tags, d%[1]d.Normalize(t))
	}
	return Item{ID: x.ID + %[3]d, Name: d%[1]d.Normalize(x.Name), Tags: tags, Score: x.Score * 1.5}
}

// ImportD%[1]d copies the n best items of src into s and returns how many it copied.
func (s *Store) ImportD%[1]d(src *d%[1]d.Store, n int) int {
	items := src.Top(n)
	for _, it := range items {
		s.Put(FromD%[1]d(it))
	}
	return len(items)
}
`, k, pkgName(d), (p.idx+1)*1000+k)
	}
	b.WriteString(`
// Describe summarizes it, normalizing its name with every dependency.
func Describe(it Item) string {
	name := Normalize(it.Name)
`)
	for k := range p.deps {
		fmt.Fprintf(&b, "\tname = d%d.Normalize(name)\n", k)
	}
	b.WriteString("\treturn fmt.Sprintf(\"%s (%d tags)\", name, len(it.Tags))\n}\n")
	return []byte(b.String())
}

func (p *pkgGen) textFile() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\n", p.name)
	b.WriteString(imports(set("context", "errors", "strings", "sync", "sync/atomic", "unicode"), nil))
	fmt.Fprintf(&b, `
// ErrStopped is returned by a Process callback to stop early.
var ErrStopped = errors.New("%[1]s: stopped")

// Normalize lower-cases s, trims it and collapses inner white space.
func Normalize(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// Tokenize splits s at commas and white space, dropping empty words.
func Tokenize(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		out = append(out, w)
	}
	return out
}

// Title upper-cases the first letter of each word of s.
func Title(s string) string {
	words := Tokenize(s)
	for i, w := range words {
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		words[i] = string(r)
	}
	return strings.Join(words, " ")
}

// Map returns f applied to each element of xs.
func Map[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, 0, len(xs))
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

// Filter returns the elements of xs for which keep returns true.
func Filter[T any](xs []T, keep func(T) bool) []T {
	var out []T
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// Process applies f to each word until ctx is done. Words for which f
// returns ErrNotFound are skipped; ErrStopped ends the walk without error.
func Process(ctx context.Context, words []string, f func(string) (string, error)) ([]string, error) {
	out := make([]string, 0, len(words))
	for _, w := range words {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		r, err := f(w)
		switch {
		case errors.Is(err, ErrNotFound):
			continue
		case errors.Is(err, ErrStopped):
			return out, nil
		case err != nil:
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Service fills a store from background workers.
type Service struct {
	store   *Store
	workers int
	ready   atomic.Bool
	started atomic.Int64
	wg      sync.WaitGroup
	once    sync.Once
}

// NewService returns a service that writes to s with n workers.
func NewService(s *Store, n int) *Service {
	if n <= 0 {
		n = 1
	}
	return &Service{store: s, workers: n}
}

// Start launches the workers, once. Ready reports true after all are done.
func (svc *Service) Start(ctx context.Context) {
	svc.once.Do(func() {
		for i := 0; i < svc.workers; i++ {
			svc.wg.Add(1)
			go func(id int) {
				defer svc.wg.Done()
				svc.started.Add(1)
				if ctx.Err() != nil {
					return
				}
				svc.store.Put(Item{ID: id, Name: "worker", Score: float64(id)})
			}(i)
		}
		go func() {
			svc.wg.Wait()
			svc.ready.Store(true)
		}()
	})
}

// Ready reports whether all workers have finished.
func (svc *Service) Ready() bool { return svc.ready.Load() }

// Wait blocks until all workers have finished.
func (svc *Service) Wait() { svc.wg.Wait() }

// Started returns how many workers have started.
func (svc *Service) Started() int { return int(svc.started.Load()) }
`, p.name)
	return []byte(b.String())
}

func (p *pkgGen) extraFile(k int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\n", p.name)
	b.WriteString(imports(set("sort", "strings"), nil))
	fmt.Fprintf(&b, `
// Sum%[1]d returns the sum of xs.
func Sum%[1]d(xs []int) int {
	total := 0
	for _, x := range xs {
		total += x
	}
	return total
}

// Median%[1]d returns the median of xs, or 0 for an empty slice.
func Median%[1]d(xs []int) float64 {
	if len(xs) == 0 {
		return 0
	}
	c := append([]int(nil), xs...)
	sort.Ints(c)
	if len(c)%%2 == 1 {
		return float64(c[len(c)/2])
	}
	return float64(c[len(c)/2-1]+c[len(c)/2]) / 2
}

// Join%[1]d joins the non-empty parts with sep.
func Join%[1]d(sep string, parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(sep)
		}
		b.WriteString(p)
	}
	return b.String()
}
`, k)
	return []byte(b.String())
}

// testFile returns test file number j of the given kind. q is the
// qualifier for the package under test ("" or "pNNNN.").
func (p *pkgGen) testFile(kind string, j int, flaky bool) []byte {
	pkg, q := p.name, ""
	var local []string
	if kind == "api" {
		pkg, q = p.name+"_test", p.name+"."
		local = []string{fmt.Sprintf("%q", pkgPath(p.idx))}
		p.external = true
	}
	std := set("testing")
	var body strings.Builder
	switch kind {
	case "store":
		p.storeTests(&body, std, j)
	case "text":
		p.textTests(&body, std, j)
	case "service":
		p.serviceTests(&body, std, j)
	case "api":
		p.apiTests(&body, std, j)
	}
	if flaky {
		p.flakyFiles++
		n := 1 + p.rng.IntN(2)
		for k := 0; k < n; k++ {
			p.flakySites++
			p.flakyTest(&body, std, q, j, k, p.rng.IntN(4))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\n", pkg)
	b.WriteString(imports(std, local))
	b.WriteString(body.String())
	return []byte(b.String())
}

func (p *pkgGen) storeTests(b *strings.Builder, std map[string]bool, j int) {
	std["errors"], std["strconv"] = true, true
	fmt.Fprintf(b, `
// newTestStore%[1]d returns a store holding items 0..n-1.
func newTestStore%[1]d(t *testing.T, n int) *Store {
	t.Helper()
	s := NewStore()
	for i := 0; i < n; i++ {
		s.Put(Item{ID: i, Name: "item " + strconv.Itoa(i), Score: float64(i %% 7)})
	}
	t.Cleanup(func() {
		if s.Len() < 0 {
			t.Error("negative length")
		}
	})
	return s
}

func TestStoreGet%[1]d(t *testing.T) {
	s := newTestStore%[1]d(t, 5)
	tests := []struct {
		name    string
		id      int
		wantErr error
	}{
		{"first", 0, nil},
		{"last", 4, nil},
		{"missing", 99, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, err := s.Get(tt.id)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Get(%%d) error = %%v, want %%v", tt.id, err, tt.wantErr)
			}
			if err == nil && it.ID != tt.id {
				t.Errorf("Get(%%d).ID = %%d", tt.id, it.ID)
			}
		})
	}
}

func TestStoreTop%[1]d(t *testing.T) {
	s := newTestStore%[1]d(t, 10)
	top := s.Top(3)
	if len(top) != 3 {
		t.Fatalf("len(Top(3)) = %%d, want 3", len(top))
	}
	for i := 1; i < len(top); i++ {
		if top[i-1].Score < top[i].Score {
			t.Errorf("Top not sorted at %%d: %%v", i, top)
		}
	}
	if got := s.Top(100); len(got) != 10 {
		t.Errorf("len(Top(100)) = %%d, want 10", len(got))
	}
}

func TestStoreDelete%[1]d(t *testing.T) {
	s := newTestStore%[1]d(t, 2)
	if err := s.Delete(1); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Delete: %%v, want ErrNotFound", err)
	}
	if got := s.Names(); len(got) != 1 {
		t.Errorf("Names() = %%v, want one name", got)
	}
}

func TestStoreHooks%[1]d(t *testing.T) {
	s := NewStore()
	var seen []int
	s.OnPut(func(it Item) { seen = append(seen, it.ID) })
	for _, id := range []int{3, 1, 2} {
		s.Put(Item{ID: id})
	}
	if len(seen) != 3 || seen[0] != 3 {
		t.Errorf("hooks saw %%v", seen)
	}
}

func BenchmarkStorePut%[1]d(b *testing.B) {
	s := NewStore()
	for i := 0; i < b.N; i++ {
		s.Put(Item{ID: i %% 128})
	}
}
`, j)
}

func (p *pkgGen) textTests(b *strings.Builder, std map[string]bool, j int) {
	std["strings"] = true
	fmt.Fprintf(b, `
func TestNormalize%[1]d(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"spaces", "  Hello   World ", "hello world"},
		{"upper", "ALREADY", "already"},
		{"controls", "tab\tand\nnewline", "tab and newline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Normalize(tt.in); got != tt.want {
				t.Errorf("Normalize(%%q) = %%q, want %%q", tt.in, got, tt.want)
			}
		})
	}
}

// assertWords%[1]d fails t unless got equals want.
func assertWords%[1]d(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %%q, want %%q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("word %%d = %%q, want %%q", i, got[i], want[i])
		}
	}
}

func TestTokenize%[1]d(t *testing.T) {
	assertWords%[1]d(t, Tokenize("a, b,,c  d"), "a", "b", "c", "d")
	assertWords%[1]d(t, Tokenize(""))
}

func TestTitle%[1]d(t *testing.T) {
	for in, want := range map[string]string{
		"go vet":   "Go Vet",
		"a,b":      "A B",
		"élan vif": "Élan Vif",
	} {
		if got := Title(in); got != want {
			t.Errorf("Title(%%q) = %%q, want %%q", in, got, want)
		}
	}
}

func TestDescribe%[1]d(t *testing.T) {
	got := Describe(Item{Name: " Hello  World ", Tags: []string{"x"}})
	if !strings.HasPrefix(got, "hello world") {
		t.Errorf("Describe = %%q", got)
	}
}

func TestFilterMap%[1]d(t *testing.T) {
	words := Filter(Tokenize("go vet, go test, lint"), func(s string) bool { return s != "lint" })
	assertWords%[1]d(t, Map(words, strings.ToUpper), "GO", "VET", "GO", "TEST")
}
`, j)
}

func (p *pkgGen) serviceTests(b *strings.Builder, std map[string]bool, j int) {
	std["context"], std["errors"], std["time"] = true, true, true
	fmt.Fprintf(b, `
func TestServiceStart%[1]d(t *testing.T) {
	s := NewStore()
	svc := NewService(s, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	svc.Start(ctx)
	svc.Start(ctx) // a second call is a no-op
	svc.Wait()
	if got := s.Len(); got != 4 {
		t.Fatalf("Len = %%d, want 4", got)
	}
	if got := svc.Started(); got != 4 {
		t.Errorf("Started = %%d, want 4", got)
	}
}

func TestProcess%[1]d(t *testing.T) {
	cases := []struct {
		name    string
		words   []string
		f       func(string) (string, error)
		want    int
		wantErr bool
	}{
		{"all", []string{"a", "b"}, func(s string) (string, error) { return s + s, nil }, 2, false},
		{"skip missing", []string{"a", "b"}, func(s string) (string, error) {
			if s == "a" {
				return "", ErrNotFound
			}
			return s, nil
		}, 1, false},
		{"stop", []string{"a", "b", "c"}, func(s string) (string, error) {
			if s == "b" {
				return "", ErrStopped
			}
			return s, nil
		}, 1, false},
		{"fail", []string{"a"}, func(string) (string, error) { return "", errors.New("boom") }, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Process(context.Background(), c.words, c.f)
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %%v, wantErr %%v", err, c.wantErr)
			}
			if len(got) != c.want {
				t.Errorf("got %%q, want %%d results", got, c.want)
			}
		})
	}
}

func TestProcessCanceled%[1]d(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Process(ctx, []string{"a"}, func(s string) (string, error) { return s, nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %%v, want context.Canceled", err)
	}
}

func TestProcessDeadline%[1]d(t *testing.T) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := Process(ctx, []string{"a"}, func(s string) (string, error) { return s, nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %%v, want context.DeadlineExceeded", err)
	}
}
`, j)
}

func (p *pkgGen) apiTests(b *strings.Builder, std map[string]bool, j int) {
	std["sort"] = true
	q := p.name + "."
	if j < 4 {
		std["fmt"] = true
		fmt.Fprintf(b, `
func ExampleNormalize() {
	fmt.Println(%[1]sNormalize("  Hello   World "))
	// Output: hello world
}
`, q)
	}
	fmt.Fprintf(b, `
func TestAPIRoundTrip%[2]d(t *testing.T) {
	s := %[1]sNewStore()
	for i, name := range []string{"c", "a", "b"} {
		s.Put(%[1]sItem{ID: i, Name: name})
	}
	if names := s.Names(); !sort.StringsAreSorted(names) {
		t.Errorf("Names() = %%q, not sorted", names)
	}
	it, err := s.Get(1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := it.String(), "1:a[]"; got != want {
		t.Errorf("String() = %%q, want %%q", got, want)
	}
}

func TestAPIDescribe%[2]d(t *testing.T) {
	tests := map[string]struct {
		item %[1]sItem
		want string
	}{
		"plain": {%[1]sItem{Name: "x"}, "x (0 tags)"},
		"tags":  {%[1]sItem{Name: " Y ", Tags: []string{"a", "b"}}, "y (2 tags)"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := %[1]sDescribe(tt.item); got != tt.want {
				t.Errorf("Describe = %%q, want %%q", got, tt.want)
			}
		})
	}
}
`, q, j)
}

// flakyTest appends one flaky test: variant 0 and 2 are attempt-count polls
// with time.Sleep, 1 and 3 are bare time.Sleep calls.
func (p *pkgGen) flakyTest(b *strings.Builder, std map[string]bool, q string, j, k, variant int) {
	std["time"] = true
	if variant == 0 || variant == 2 {
		p.pollSites++
	}
	switch variant {
	case 0:
		std["sync/atomic"] = true
		fmt.Fprintf(b, `
func TestAsyncPutReady%[2]d_%[3]d(t *testing.T) {
	s := %[1]sNewStore()
	var ready atomic.Bool
	go func() {
		s.Put(%[1]sItem{ID: 1, Name: "async"})
		ready.Store(true)
	}()
	for i := 0; i < 20; i++ {
		if ready.Load() {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !ready.Load() {
		t.Fatal("store not ready after 100ms")
	}
}
`, q, j, k)
	case 1:
		fmt.Fprintf(b, `
func TestAsyncPutSleep%[2]d_%[3]d(t *testing.T) {
	s := %[1]sNewStore()
	go s.Put(%[1]sItem{ID: 7, Name: "late"})
	time.Sleep(10 * time.Millisecond)
	if _, err := s.Get(7); err != nil {
		t.Fatalf("Get after sleep: %%v", err)
	}
}
`, q, j, k)
	case 2:
		std["context"] = true
		fmt.Fprintf(b, `
func TestServiceReadyPoll%[2]d_%[3]d(t *testing.T) {
	svc := %[1]sNewService(%[1]sNewStore(), 3)
	svc.Start(context.Background())
	for attempt := 0; attempt < 50; attempt++ {
		if svc.Ready() {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if !svc.Ready() {
		t.Fatal("service not ready after 50 attempts")
	}
}
`, q, j, k)
	default:
		std["context"], std["strconv"] = true, true
		fmt.Fprintf(b, `
func TestServiceWorkersSleep%[2]d_%[3]d(t *testing.T) {
	for _, n := range []int{1, 2, 4} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			svc := %[1]sNewService(%[1]sNewStore(), n)
			svc.Start(context.Background())
			time.Sleep(10 * time.Millisecond)
			if got := svc.Started(); got != n {
				t.Errorf("Started = %%d, want %%d", got, n)
			}
		})
	}
}
`, q, j, k)
	}
}

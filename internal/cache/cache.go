// Package cache is unflake's result cache: a run's result stored under a
// key that hashes everything it can depend on. It stores and returns an
// opaque value (rewrite's result); it never runs the engine.
package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The result cache lets a repeated run over unchanged code skip loading,
// type-checking and the rules: a run's result is stored under a key that
// hashes everything the result can depend on, and a later run with the
// same key returns it.
//
// The key covers
//   - the unflake binary (a hash of the executable's content), so a new
//     build never sees an old build's results;
//   - the run's options: directory, patterns, build tags, -run, the rules
//     in order with every flag of each, the prefilter switch;
//   - the environment that can change what the go command lists or how it
//     builds (GO*, CGO_*, CC, CXX, PKG_CONFIG, PATH, HOME) and unflake's own
//     UNFLAKE_* variables;
//   - the package graph as `go list -deps -test` prints it (every package
//     the patterns reach, with its directory, module and file lists), and
//     the content of every file of it: the packages' own files and every
//     dependency's, since a rule may judge a call by what the callee does.
//     Files of a module in the module cache are immutable (the module path
//     and version, part of the listing, name them); files of the standard
//     library are keyed by size and modification time; all others, the
//     main modules', replaced directories' and vendored ones, by content,
//     with their mode (fix refuses to write a symbolic link or a read-only
//     file);
//   - go.mod, go.sum, vendor/modules.txt of each main module, go.work, and
//     the go command's own settings file (go env -w).
//
// Only runs that ended without errors or refused files are stored, and
// only runs without Only (which is a function) or Decide (verification
// runs tests, whose outcome no key covers). An entry that cannot be read,
// fails its checksum or does not decode is a miss: the run is done again,
// so the cache never changes a result. Entries are written to a temporary
// file in the cache directory and renamed into place.
//
// A file that changes while a run reads it can leave an entry whose key
// hashes one version and whose result comes from another; a later run of
// the first version would then get the second's result. The go command's
// build cache has the same window.

// Version changes when the layout of an entry or key changes.
const Version = "unflake-result-cache-1"

// cacheTrimAge is how long an entry lives unused; cacheTrimEvery how often
// a run looks for such entries.
const (
	cacheTrimAge   = 5 * 24 * time.Hour
	cacheTrimEvery = 24 * time.Hour
)

// Config says what a run's key holds besides the package graph and its
// files.
type Config struct {
	Dir      string   // the directory the run loads from
	Patterns []string // its patterns
	Tags     []string // its build tags
	Env      []string // the go command's environment; nil means os.Environ()
	Cache    string   // the cache directory
	// Fields are the run's other options (rules, their flags), hashed
	// into the key in order.
	Fields []Field
}

// A Field is one option of a run, by name, with its values.
type Field struct {
	Name string
	Vals []string
}

// An Entry is the cache of one run: its directory and key.
type Entry struct {
	dir string
	key [sha256.Size]byte
	man *manifest // the files behind the key, by their stat; nil: none
}

// Open returns the cache for cfg's run, or nil when its key cannot be
// computed (the run then goes ahead without the cache and reports
// whatever made listing fail).
func (cfg *Config) Open() *Entry {
	key, m, err := cfg.cacheKey()
	if err != nil {
		return nil
	}
	return &Entry{dir: cfg.Cache, key: key, man: m}
}

func (c *Entry) path() string { return entryPath(c.dir, c.key, "-r") }

func entryPath(dir string, key [sha256.Size]byte, suffix string) string {
	h := hex.EncodeToString(key[:])
	return filepath.Join(dir, h[:2], h+suffix)
}

// Load decodes the stored result into v, a pointer, and reports whether
// there was one that valid accepts; false is a miss.
func (c *Entry) Load(v any, valid func() bool) bool {
	path := c.path()
	if !readChecked(path, v) || !valid() {
		return false
	}
	// Mark the entry used, coarsely, so that trimming keeps it.
	if fi, err := os.Stat(path); err == nil && time.Since(fi.ModTime()) > time.Hour {
		now := time.Now()
		_ = os.Chtimes(path, now, now)
	}
	c.man.store(c.dir)
	return true
}

// readChecked decodes the checksummed gob file at path into v.
func readChecked(path string, v any) bool {
	data, err := os.ReadFile(path)
	if err != nil || len(data) < sha256.Size {
		return false
	}
	if sum := sha256.Sum256(data[sha256.Size:]); !bytes.Equal(sum[:], data[:sha256.Size]) {
		return false
	}
	return gob.NewDecoder(bytes.NewReader(data[sha256.Size:])).Decode(v) == nil
}

// writeChecked writes v to path as a checksummed gob, atomically.
func writeChecked(path string, v any) error {
	var buf bytes.Buffer
	buf.Write(make([]byte, sha256.Size))
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return err
	}
	data := buf.Bytes()
	sum := sha256.Sum256(data[sha256.Size:])
	copy(data, sum[:])
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return err
	}
	return writeAtomic(path, data)
}

// Store writes v, a result, under the run's key. Failing to store is not
// an error of the run.
func (c *Entry) Store(v any) {
	if writeChecked(c.path(), v) != nil {
		return
	}
	c.man.store(c.dir)
	c.trim()
}

// writeAtomic writes data to path through a temporary file in the same
// directory, renamed into place; the temporary file never stays behind.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// trim removes entries unused for cacheTrimAge, at most once every
// cacheTrimEvery (the mtime of the file "trim" in the cache says when).
func (c *Entry) trim() {
	mark := filepath.Join(c.dir, "trim")
	if fi, err := os.Stat(mark); err == nil && time.Since(fi.ModTime()) < cacheTrimEvery {
		return
	}
	if writeAtomic(mark, nil) != nil {
		return
	}
	old := time.Now().Add(-cacheTrimAge)
	subs, _ := os.ReadDir(c.dir)
	for _, s := range subs {
		if !s.IsDir() || len(s.Name()) != 2 {
			continue
		}
		sub := filepath.Join(c.dir, s.Name())
		ents, _ := os.ReadDir(sub)
		for _, e := range ents {
			if fi, err := e.Info(); err == nil && fi.ModTime().Before(old) {
				os.Remove(filepath.Join(sub, e.Name()))
			}
		}
	}
}

// cacheKey hashes everything a run's result depends on (see above).
func (cfg *Config) cacheKey() ([sha256.Size]byte, *manifest, error) {
	start := time.Now()
	opts, err := cfg.optionsKey()
	if err != nil {
		return [sha256.Size]byte{}, nil, err
	}
	h := sha256.New()
	h.Write(opts[:])
	env := cfg.env()
	listing, pkgs, err := cfg.listGraph(env)
	if err != nil {
		return [sha256.Size]byte{}, nil, err
	}
	fmt.Fprintf(h, "listing %d\n%s", len(listing), listing)
	m := &manifest{opts: opts, start: start}
	if err := hashInputs(h, pkgs, cfg.Dir, env, m); err != nil {
		return [sha256.Size]byte{}, nil, err
	}
	if !cfg.addTree(m) {
		m = nil
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	if m != nil {
		m.Key = key
	}
	return key, m, nil
}

func (cfg *Config) env() []string {
	if cfg.Env == nil {
		return os.Environ()
	}
	return cfg.Env
}

// optionsKey hashes what the key holds besides the package graph and
// its files: the binary, the options and the environment.
func (cfg *Config) optionsKey() ([sha256.Size]byte, error) {
	h := sha256.New()
	field := func(name string, vals ...string) {
		fmt.Fprintf(h, "%s %d\n", name, len(vals))
		for _, v := range vals {
			fmt.Fprintf(h, "%d %s\n", len(v), v)
		}
	}
	field("version", Version)
	exe, err := executableHash()
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	field("exe", exe)
	field("dir", cfg.Dir)
	field("patterns", cfg.Patterns...)
	field("tags", cfg.Tags...)
	for _, f := range cfg.Fields {
		field(f.Name, f.Vals...)
	}
	field("env", keyEnv(cfg.env())...)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key, nil
}

// keyEnv returns the variables of env that can change a result, sorted.
func keyEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "UNFLAKE_CACHE":
		case strings.HasPrefix(name, "GO"), strings.HasPrefix(name, "CGO_"), strings.HasPrefix(name, "UNFLAKE_"),
			name == "CC", name == "CXX", name == "PKG_CONFIG", name == "PATH", name == "HOME":
			out = append(out, kv)
		}
	}
	sort.Strings(out)
	return out
}

// listedPackage is what the key needs of a package of `go list -json`.
type listedPackage struct {
	Dir        string
	ImportPath string
	Standard   bool
	Module     *struct {
		Path, Version, Dir, GoMod string
		Main                      bool
		Replace                   *struct{ Path, Version, Dir string }
	}
	GoFiles, CgoFiles, CFiles, CXXFiles, HFiles, SFiles, SysoFiles, SwigFiles, EmbedFiles []string
	// IgnoredGoFiles are the directory's files the build constraints
	// leave out: rules read them too (setenv looks for writes of its
	// variable in every variant of the package), so an edit of one must
	// change the key.
	IgnoredGoFiles []string
}

// listFields are the fields listedPackage reads, and all the listing
// hashed into the key holds.
const listFields = "Dir,ImportPath,Standard,Module,GoFiles,CgoFiles,CFiles,CXXFiles,HFiles,SFiles,SysoFiles,SwigFiles,EmbedFiles,IgnoredGoFiles,Error,DepsErrors"

// graphListings counts the runs of listGraph, for the tests of the
// manifest's fast path.
var graphListings atomic.Int64

// GraphListings is how many times a run listed the package graph for its
// key, for the tests of the manifest's fast path.
func GraphListings() int64 { return graphListings.Load() }

// listGraph lists every package the patterns reach, with its tests.
func (cfg *Config) listGraph(env []string) ([]byte, []*listedPackage, error) {
	graphListings.Add(1)
	args := []string{"list", "-e", "-deps", "-test", "-find=false", "-buildvcs=false", "-json=" + listFields}
	if len(cfg.Tags) > 0 {
		args = append(args, "-tags="+strings.Join(cfg.Tags, ","))
	}
	args = append(args, "--")
	args = append(args, cfg.Patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = cfg.Dir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go list: %v: %s", err, stderr.Bytes())
	}
	var pkgs []*listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := new(listedPackage)
		if err := dec.Decode(p); err == io.EOF {
			break
		} else if err != nil {
			return nil, nil, err
		}
		pkgs = append(pkgs, p)
	}
	return out, pkgs, nil
}

// hashInputs hashes the files of pkgs, and the module and workspace files.
func hashInputs(h io.Writer, pkgs []*listedPackage, dir string, env []string, m *manifest) error {
	seen := map[string]bool{}
	var files []string // hashed by content
	var stats []string // standard library: by size and modification time
	modFiles := map[string]bool{}
	for _, p := range pkgs {
		immutable := p.Module != nil && !p.Module.Main && p.Module.Replace == nil && p.Module.Dir != "" &&
			strings.HasPrefix(p.Dir, p.Module.Dir)
		if immutable {
			continue // named by module path and version in the listing
		}
		if !seen[p.Dir] {
			seen[p.Dir] = true
			m.record(p.Dir) // a file added or removed changes it
		}
		if p.Module != nil && p.Module.Main && p.Module.GoMod != "" {
			d := filepath.Dir(p.Module.GoMod)
			modFiles[p.Module.GoMod] = true
			modFiles[filepath.Join(d, "go.sum")] = true
			modFiles[filepath.Join(d, "vendor", "modules.txt")] = true
		}
		for _, list := range [][]string{p.GoFiles, p.CgoFiles, p.CFiles, p.CXXFiles, p.HFiles, p.SFiles, p.SysoFiles, p.SwigFiles, p.EmbedFiles, p.IgnoredGoFiles} {
			for _, f := range list {
				path := f
				if !filepath.IsAbs(path) {
					path = filepath.Join(p.Dir, f)
				}
				if seen[path] {
					continue
				}
				seen[path] = true
				if p.Standard {
					stats = append(stats, path)
				} else {
					files = append(files, path)
				}
			}
		}
	}
	if w := workFile(dir, env); w != "" {
		modFiles[w] = true
		modFiles[w+".sum"] = true
	} else {
		m.noWork(dir, env)
	}
	if e := goEnvFile(env); e != "" {
		modFiles[e] = true // go env -w settings: GOFLAGS, GOPROXY, ...
	}
	for f := range modFiles {
		files = append(files, f)
	}
	sort.Strings(files)
	sort.Strings(stats)

	for _, path := range stats {
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		m.add(path, fi)
		fmt.Fprintf(h, "stat %d %s %d %d\n", len(path), path, fi.Size(), fi.ModTime().UnixNano())
	}
	for _, path := range files {
		m.record(path) // before its content is read: a change after this is seen
	}
	sums, err := hashFiles(files)
	if err != nil {
		return err
	}
	for i, path := range files {
		fmt.Fprintf(h, "file %d %s %s\n", len(path), path, sums[i])
	}
	return nil
}

// hashFiles returns, for each file, its mode and a hash of its content,
// or "absent"; a few files at a time.
func hashFiles(files []string) ([]string, error) {
	sums := make([]string, len(files))
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				sums[i], errs[i] = hashFile(files[i])
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	return sums, errors.Join(errs...)
}

func hashFile(path string) (string, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "absent", nil
	}
	if err != nil {
		return "", err
	}
	mode := fi.Mode()
	if mode&os.ModeSymlink != 0 {
		if fi, err = os.Stat(path); err != nil {
			return "", err
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return fmt.Sprintf("%v %d %x", mode, fi.Size(), sum), nil
}

// workFile returns the go.work file the go command uses in dir, or "".
func workFile(dir string, env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "GOWORK="); ok && v != "" {
			if v == "off" {
				return ""
			}
			return v
		}
	}
	if dir == "" {
		dir, _ = os.Getwd()
	}
	for d := dir; d != ""; {
		if p := filepath.Join(d, "go.work"); fileExists(p) {
			return p
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
	return ""
}

// goEnvFile returns the file `go env -w` writes, or "".
func goEnvFile(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "GOENV="); ok && v != "" {
			if v == "off" {
				return ""
			}
			return v
		}
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "go", "env")
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir()
}

var exeHash = sync.OnceValues(func() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
})

// executableHash identifies the running unflake binary by its content.
func executableHash() (string, error) { return exeHash() }

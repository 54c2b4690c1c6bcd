package cache

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A manifest is the fast way to a stored result: beside the entry of a
// run it records, under a key of the options alone (the binary, the
// options, the environment), the full key and the size, modification time
// and mode of every input the full key hashed, of every package directory
// (a file added or removed changes it), of every directory the patterns
// walk (a new package changes one), and of the go.work files that do not
// exist. When none of those changed, the full key cannot have changed
// either, and a run finds its result without running the go command.
//
// A file modified within manifestSettle of the run is not trusted to show
// its next change in its modification time (file systems with a coarse
// clock): then no manifest is written, and the next run takes the full
// key again (and writes one, once things have settled).
type manifest struct {
	Key   [sha256.Size]byte
	Stats []fileStat

	opts  [sha256.Size]byte // where it is stored
	start time.Time         // when the run began hashing
	bad   bool              // a stat is missing or too recent: write none
}

// manifestSettle is how old a modification must be to be trusted.
const manifestSettle = 2 * time.Second

// A fileStat is what a manifest knows of one path.
type fileStat struct {
	Path   string
	Follow bool // os.Stat (the target of a link), not os.Lstat
	Absent bool
	Size   int64
	Mod    int64 // modification time, in ns
	Mode   uint32
}

func statOf(path string, follow bool) (fileStat, error) {
	st := fileStat{Path: path, Follow: follow}
	var fi os.FileInfo
	var err error
	if follow {
		fi, err = os.Stat(path)
	} else {
		fi, err = os.Lstat(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		st.Absent = true
		return st, nil
	}
	if err != nil {
		return st, err
	}
	st.Size, st.Mod, st.Mode = fi.Size(), fi.ModTime().UnixNano(), uint32(fi.Mode())
	return st, nil
}

// record adds path, and the target of a link, to m. m may be nil.
func (m *manifest) record(path string) {
	if m == nil {
		return
	}
	st, err := statOf(path, false)
	m.push(st, err)
	if err == nil && os.FileMode(st.Mode)&os.ModeSymlink != 0 {
		m.push(statOf(path, true))
	}
}

// add adds a path already stat'd (following links).
func (m *manifest) add(path string, fi os.FileInfo) {
	if m == nil {
		return
	}
	m.push(fileStat{Path: path, Follow: true, Size: fi.Size(), Mod: fi.ModTime().UnixNano(), Mode: uint32(fi.Mode())}, nil)
}

func (m *manifest) push(st fileStat, err error) {
	if err != nil || !st.Absent && st.Mod > m.start.Add(-manifestSettle).UnixNano() {
		m.bad = true
	}
	m.Stats = append(m.Stats, st)
}

// noWork records that no go.work file exists in dir or above it, unless
// GOWORK names one or turns workspaces off.
func (m *manifest) noWork(dir string, env []string) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "GOWORK="); ok && v != "" {
			return
		}
	}
	if dir == "" {
		dir, _ = os.Getwd()
	}
	for d := dir; d != ""; {
		m.record(filepath.Join(d, "go.work"))
		parent := filepath.Dir(d)
		if parent == d {
			return
		}
		d = parent
	}
}

// addTree records the directories cfg's patterns walk. It returns false
// when m cannot be trusted: a pattern that is not a directory (an import
// path, all, std) could match a package that is nowhere in m, or a stat
// was missing or too recent.
func (cfg *Config) addTree(m *manifest) bool {
	for _, pat := range cfg.Patterns {
		local := pat == "." || pat == ".." || strings.HasPrefix(pat, "./") || strings.HasPrefix(pat, "../") || filepath.IsAbs(pat)
		if !local {
			return false
		}
		base, recursive := strings.CutSuffix(pat, "/...")
		if strings.Contains(base, "...") {
			return false
		}
		if !filepath.IsAbs(base) {
			base = filepath.Join(cfg.Dir, base)
		}
		if !recursive {
			m.record(base)
			continue
		}
		// The directories the go command looks into for pattern/...
		err := filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			if name := d.Name(); path != base && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			m.record(path)
			return nil
		})
		if err != nil {
			return false
		}
	}
	return !m.bad
}

// store writes m beside the cache's entries; m may be nil.
func (m *manifest) store(dir string) {
	if m == nil || m.bad {
		return
	}
	_ = writeChecked(entryPath(dir, m.opts, "-m"), m)
}

// fresh reports whether every path of m is as it was.
func (m *manifest) fresh() bool {
	for _, want := range m.Stats {
		got, err := statOf(want.Path, want.Follow)
		if err != nil || got != want {
			return false
		}
	}
	return true
}

// FastHit decodes the stored result of cfg's run into v, found through
// its manifest, and reports whether there was one that valid accepts.
func (cfg *Config) FastHit(v any, valid func() bool) bool {
	opts, err := cfg.optionsKey()
	if err != nil {
		return false
	}
	var m manifest
	if !readChecked(entryPath(cfg.Cache, opts, "-m"), &m) || !m.fresh() {
		return false
	}
	c := &Entry{dir: cfg.Cache, key: m.Key}
	return c.Load(v, valid)
}

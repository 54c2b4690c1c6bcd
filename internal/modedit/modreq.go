// Package modedit edits go.mod for the engine: it adds the requirements
// fixes need to temporary copies of go.mod and go.sum (the changes of the
// real ones come back as output.Change values), and analyses a module as
// if its go line were newer (RaiseGo).
package modedit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/version"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/unflake/unflake/internal/output"
	"golang.org/x/tools/go/packages"
)

// A fix may import a package of a module its module does not require yet
// (rule.Pass.Require, rule.Fix.Requires). The engine never touches the
// module's go.mod while it works: it adds the requirement to a temporary
// copy of go.mod and go.sum, with `go get -modfile`, type-checks the
// rewritten package against that copy, and hands back the copy's content
// as a change of go.mod and go.sum only when a fix that needs it is
// applied.

// Env is the go command's environment for the edits.
func (ms *Modules) Env() []string { return ms.env }

// maxVersionTries bounds the walk down a module's versions for one whose
// go line the module's go directive allows: each try is a query the proxy
// may have to answer.
const maxVersionTries = 32

// Modules holds, for one run, the requirements added to the main modules,
// keyed by the path of their go.mod. Jobs run concurrently, so it is
// locked; each module has its own lock, held while the go command edits
// or reads its temporary copy.
type Modules struct {
	ctx context.Context // cancels the go commands
	env []string        // the go command's environment for these edits

	mu     sync.Mutex
	tmp    string // root of the temporary copies, "" until the first
	byPath map[string]*Module
}

// New returns the requirements of a run whose go command has the
// environment env (nil: os.Environ()); cancelling ctx stops its go
// commands.
func New(ctx context.Context, env []string) *Modules {
	if env == nil {
		env = os.Environ()
	}
	// -mod=mod lets go list and go get update the temporary go.mod; the
	// user's other GOFLAGS still apply (a later flag wins). GOTOOLCHAIN=local
	// keeps the go command from switching to (and downloading) another
	// toolchain to satisfy a requirement.
	goflags := "-mod=mod"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok && strings.TrimSpace(v) != "" {
			goflags = v + " -mod=mod"
		}
	}
	env = append(env[:len(env):len(env)], "GOFLAGS="+goflags, "GOTOOLCHAIN=local")
	return &Modules{ctx: ctx, env: env, byPath: map[string]*Module{}}
}

// A Module is one main module and the requirements added to its copy.
type Module struct {
	gomod, dir string // its go.mod on disk, and the directory holding it

	mu       sync.Mutex
	once     bool       // setup ran
	edit     *goModJSON // go.mod as it is on disk
	setupErr error      // why requirements cannot be added at all
	tmpMod   string     // the temporary go.mod, "" until prepared
	origMod  []byte     // go.mod and go.sum on disk (origSum nil: no go.sum)
	origSum  []byte
	modMode  os.FileMode
	sumMode  os.FileMode
	results  map[string]error  // modPath → what Require answered
	added    map[string]string // modPath → version added to the copy
}

// goModJSON is the part of `go mod edit -json` the engine reads.
type goModJSON struct {
	Go        string
	Toolchain string
	Require   []struct{ Path string }
}

// Get returns the module of package p, or nil if p is in none.
func (ms *Modules) Get(p *packages.Package) *Module {
	if p.Module == nil || p.Module.GoMod == "" {
		return nil
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m := ms.byPath[p.Module.GoMod]
	if m == nil {
		m = &Module{gomod: p.Module.GoMod, dir: filepath.Dir(p.Module.GoMod), results: map[string]error{}, added: map[string]string{}}
		ms.byPath[p.Module.GoMod] = m
	}
	return m
}

// tempDir returns a new directory under the run's temporary root.
func (ms *Modules) tempDir() (string, error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.tmp == "" {
		tmp, err := os.MkdirTemp("", "unflake-mod-")
		if err != nil {
			return "", err
		}
		ms.tmp = tmp
	}
	return os.MkdirTemp(ms.tmp, "")
}

// Cleanup removes the temporary copies; the changes hold their content.
func (ms *Modules) Cleanup() {
	if ms.tmp != "" {
		os.RemoveAll(ms.tmp)
	}
}

// Require is Pass.Require for the package p.
func (ms *Modules) Require(p *packages.Package, modPath string) (missing bool, err error) {
	m := ms.Get(p)
	if m == nil {
		return true, fmt.Errorf("cannot add %s to go.mod: the package is not in a module", modPath)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err, ok := m.results[modPath]; ok {
		_, added := m.added[modPath]
		return added || err != nil, err
	}
	err = ms.add(m, modPath)
	m.results[modPath] = err
	_, added := m.added[modPath]
	return added || err != nil, err
}

// add makes modPath a requirement of m's temporary go.mod, unless go.mod
// already has it. It is called with m.mu held.
func (ms *Modules) add(m *Module, modPath string) error {
	if !m.once {
		m.once = true
		m.setupErr = ms.setup(m)
	}
	if m.edit != nil {
		for _, r := range m.edit.Require {
			if r.Path == modPath {
				return nil // any version will do: the fix only imports it
			}
		}
	}
	if m.setupErr != nil {
		return fmt.Errorf("cannot add %s to go.mod: %v", modPath, m.setupErr)
	}
	if m.tmpMod == "" {
		if err := ms.prepare(m); err != nil {
			return fmt.Errorf("cannot add %s to go.mod: %v", modPath, err)
		}
	}
	v, err := ms.chooseVersion(m, modPath)
	if err != nil {
		return err
	}
	// go get may fail, or raise the go line: then the copy is put back as
	// it was, since other requirements and type-checks use it.
	mod, _ := os.ReadFile(m.tmpMod)
	sum, sumErr := os.ReadFile(sumPath(m.tmpMod))
	restore := func() {
		os.WriteFile(m.tmpMod, mod, 0o644)
		if sumErr == nil {
			os.WriteFile(sumPath(m.tmpMod), sum, 0o644)
		} else {
			os.Remove(sumPath(m.tmpMod))
		}
	}
	if _, err := ms.goCmd(m.dir, "get", "-modfile="+m.tmpMod, modPath+"@"+v); err != nil {
		restore()
		return fmt.Errorf("cannot add %s to go.mod: %v", modPath, err)
	}
	after, err := ms.readGoMod(m.dir, m.tmpMod)
	if err != nil {
		restore()
		return fmt.Errorf("cannot add %s to go.mod: %v", modPath, err)
	}
	switch {
	case after.Go != m.edit.Go:
		restore()
		return fmt.Errorf("adding %s %s would raise the module's go version from %s to %s", modPath, v, goLine(m.edit.Go), after.Go)
	case after.Toolchain != m.edit.Toolchain:
		restore()
		return fmt.Errorf("adding %s %s would change the module's toolchain line to %q", modPath, v, after.Toolchain)
	}
	if err := ms.direct(m.dir, m.tmpMod, modPath, v); err != nil {
		restore()
		return fmt.Errorf("cannot add %s to go.mod: %v", modPath, err)
	}
	m.added[modPath] = v
	return nil
}

// direct rewrites the requirement go get added as "// indirect" (nothing
// imported the module yet when it ran) as a direct one: the rewritten
// test files import it, and go mod tidy would say so.
func (ms *Modules) direct(dir, tmpMod, modPath, v string) error {
	if _, err := ms.goCmd(dir, "mod", "edit", "-droprequire="+modPath, tmpMod); err != nil {
		return err
	}
	_, err := ms.goCmd(dir, "mod", "edit", "-require="+modPath+"@"+v, tmpMod)
	return err
}

// setup reads m's go.mod and says why requirements cannot be added, if
// they cannot: -modfile is refused in workspace mode, and a vendor
// directory would need vendoring the new module too.
func (ms *Modules) setup(m *Module) error {
	edit, err := ms.readGoMod(m.dir, m.gomod)
	if err != nil {
		return err
	}
	m.edit = edit
	out, err := ms.goCmd(m.dir, "env", "GOWORK")
	if err != nil {
		return err
	}
	if w := strings.TrimSpace(string(out)); w != "" && w != "off" {
		return fmt.Errorf("the module is in a workspace (%s)", w)
	}
	if fi, err := os.Stat(filepath.Join(m.dir, "vendor")); err == nil && fi.IsDir() {
		return errors.New("the module has a vendor directory")
	}
	return nil
}

// prepare copies m's go.mod and go.sum to a temporary directory.
func (ms *Modules) prepare(m *Module) error {
	fi, err := os.Stat(m.gomod)
	if err != nil {
		return err
	}
	m.modMode = fi.Mode().Perm()
	if m.origMod, err = os.ReadFile(m.gomod); err != nil {
		return err
	}
	if fi, err := os.Stat(sumPath(m.gomod)); err == nil {
		m.sumMode = fi.Mode().Perm()
		if m.origSum, err = os.ReadFile(sumPath(m.gomod)); err != nil {
			return err
		}
		if m.origSum == nil {
			m.origSum = []byte{} // an empty go.sum exists: not a new file
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	dir, err := ms.tempDir()
	if err != nil {
		return err
	}
	tmpMod, err := writeModCopy(dir, m.origMod, m.origSum)
	if err != nil {
		return err
	}
	m.tmpMod = tmpMod
	return nil
}

// writeModCopy writes go.mod and, if sum is not nil, go.sum to dir and
// returns the path of the go.mod.
func writeModCopy(dir string, mod, sum []byte) (string, error) {
	path := filepath.Join(dir, "go.mod")
	if err := os.WriteFile(path, mod, 0o644); err != nil {
		return "", err
	}
	if sum != nil {
		if err := os.WriteFile(sumPath(path), sum, 0o644); err != nil {
			return "", err
		}
	}
	return path, nil
}

// chooseVersion picks the version of modPath to require: the one the
// module graph already selects, or else the newest whose own go line the
// module's go directive allows, so that adding it never raises the
// module's go version.
func (ms *Modules) chooseVersion(m *Module, modPath string) (string, error) {
	mf := "-modfile=" + m.tmpMod
	if mods, err := ms.listModules(m.dir, mf, modPath); err == nil && len(mods) == 1 && mods[0].Error == nil && mods[0].Version != "" {
		return mods[0].Version, nil
	}
	have := goLine(m.edit.Go)
	fits := func(goVersion string) bool {
		return goVersion == "" || version.Compare("go"+goVersion, "go"+have) <= 0
	}
	latest, err := ms.listModules(m.dir, mf, modPath+"@latest")
	if err != nil {
		return "", fmt.Errorf("cannot add %s to go.mod: %v", modPath, err)
	}
	if len(latest) != 1 || latest[0].Error != nil {
		return "", fmt.Errorf("cannot add %s to go.mod: %s", modPath, listError(latest))
	}
	if fits(latest[0].GoVersion) {
		return latest[0].Version, nil
	}
	tried, oldest := latest[0].Version, latest[0].GoVersion

	// Too new: walk down the released versions below latest.
	vs, err := ms.listModules(m.dir, mf, "-versions", modPath)
	if err != nil || len(vs) != 1 {
		return "", fmt.Errorf("cannot add %s to go.mod: %v", modPath, err)
	}
	// The list is in semver order; latest is the newest release in it
	// (absent when the module has no release: then all are candidates).
	below := !slices.Contains(vs[0].Versions, latest[0].Version)
	var queries []string
	for i := len(vs[0].Versions) - 1; i >= 0 && len(queries) < maxVersionTries; i-- {
		v := vs[0].Versions[i]
		if v == latest[0].Version {
			below = true
			continue
		}
		if below && !strings.Contains(v, "-") { // not a pre-release
			queries = append(queries, modPath+"@"+v)
		}
	}
	if len(queries) > 0 {
		older, err := ms.listModules(m.dir, append([]string{mf}, queries...)...)
		if err != nil {
			return "", fmt.Errorf("cannot add %s to go.mod: %v", modPath, err)
		}
		for _, o := range older {
			if o.Error != nil {
				continue
			}
			if fits(o.GoVersion) {
				return o.Version, nil
			}
			tried, oldest = o.Version, o.GoVersion
		}
	}
	which := tried + " needs"
	if tried != latest[0].Version {
		which = tried + " and later need"
	}
	return "", fmt.Errorf("%s %s go %s, newer than the module's go %s", modPath, which, oldest, have)
}

// listedModule is the part of `go list -m -json` the engine reads.
type listedModule struct {
	Path, Version, GoVersion string
	Versions                 []string
	Error                    *struct{ Err string }
}

// listModules runs `go list -m -e -json args...` in dir.
func (ms *Modules) listModules(dir string, args ...string) ([]listedModule, error) {
	out, err := ms.goCmd(dir, append([]string{"list", "-m", "-e", "-json"}, args...)...)
	if err != nil {
		return nil, err
	}
	var mods []listedModule
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var lm listedModule
		if err := dec.Decode(&lm); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		mods = append(mods, lm)
	}
	return mods, nil
}

func listError(mods []listedModule) string {
	for _, m := range mods {
		if m.Error != nil {
			return firstLine(m.Error.Err)
		}
	}
	return "the go command found no version"
}

// readGoMod parses a go.mod file with `go mod edit -json`.
func (ms *Modules) readGoMod(dir, path string) (*goModJSON, error) {
	out, err := ms.goCmd(dir, "mod", "edit", "-json", path)
	if err != nil {
		return nil, err
	}
	var edit goModJSON
	if err := json.Unmarshal(out, &edit); err != nil {
		return nil, err
	}
	return &edit, nil
}

// goCmd runs the go command in dir and returns its standard output; its
// error is the first line of what the command printed, for a finding.
func (ms *Modules) goCmd(dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ms.ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = ms.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if line := firstLine(stderr.String()); line != "" {
			return nil, errors.New(line)
		}
		return nil, err
	}
	return stdout.Bytes(), nil
}

// Modfile returns m's temporary go.mod, or "" when nothing was added to
// it, and locks m until unlock is called, so that no go get edits the
// copy while a type-check reads it.
func (m *Module) Modfile() (path string, unlock func()) {
	m.mu.Lock()
	if len(m.added) == 0 {
		return "", m.mu.Unlock
	}
	return m.tmpMod, m.mu.Unlock
}

// Changes returns the changes of go.mod and go.sum that make the modules
// in used (those the applied fixes required) importable: none if go.mod
// already required them all. When other requirements were added for fixes
// that were not applied, the copy is made again with only these.
func (ms *Modules) Changes(m *Module, used map[string]bool) ([]output.Change, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var need []string
	for p := range used {
		if v, ok := m.added[p]; ok {
			need = append(need, p+"@"+v)
		}
	}
	if len(need) == 0 {
		return nil, nil
	}
	sort.Strings(need)
	tmpMod := m.tmpMod
	if len(need) < len(m.added) {
		// Should the fresh copy fail, the full one (a superset that the
		// type-checks used) is still right, only less tidy.
		if fresh, err := ms.freshCopy(m, need); err == nil {
			tmpMod = fresh
		}
	}
	mod, err := os.ReadFile(tmpMod)
	if err != nil {
		return nil, err
	}
	out := []output.Change{{Path: m.gomod, Old: m.origMod, New: mod, Mode: m.modMode}}
	sum, err := os.ReadFile(sumPath(tmpMod))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err == nil && !bytes.Equal(sum, m.origSum) {
		out = append(out, output.Change{Path: sumPath(m.gomod), Old: m.origSum, New: sum, Mode: m.sumMode})
	}
	return out, nil
}

// freshCopy copies m's go.mod and go.sum again and adds only the
// requirements need (path@version) to the copy; it returns its go.mod.
func (ms *Modules) freshCopy(m *Module, need []string) (string, error) {
	dir, err := ms.tempDir()
	if err != nil {
		return "", err
	}
	tmpMod, err := writeModCopy(dir, m.origMod, m.origSum)
	if err != nil {
		return "", err
	}
	if _, err := ms.goCmd(m.dir, append([]string{"get", "-modfile=" + tmpMod}, need...)...); err != nil {
		return "", err
	}
	for _, n := range need {
		path, v, _ := strings.Cut(n, "@")
		if err := ms.direct(m.dir, tmpMod, path, v); err != nil {
			return "", err
		}
	}
	return tmpMod, nil
}

// sumPath is the go.sum beside a go.mod, as -modfile reads it.
func sumPath(gomod string) string { return strings.TrimSuffix(gomod, ".mod") + ".sum" }

// goLine is the go version a go.mod declares; without a go line the go
// command assumes go 1.16.
func goLine(v string) string {
	if v == "" {
		return "1.16"
	}
	return v
}

func firstLine(s string) string {
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return strings.TrimPrefix(line, "go: ")
		}
	}
	return ""
}

// IsModFile reports whether a change is of a module's go.mod or go.sum
// rather than of a package's file.
func IsModFile(path string) bool {
	b := filepath.Base(path)
	return b == "go.mod" || b == "go.sum"
}

// RaiseGo applies goAs (rewrite.Config.GoAs) to p: when it names a go version newer than
// the one p's main module declares, p gets a copy of its Module with that
// version (so the passes and every later type-check see it), and RaiseGo
// returns the declared version ("go1.24"); otherwise "". The go.mod file
// is not touched: the caller edits it when it keeps the result.
func RaiseGo(goAs func(gomod string) string, p *packages.Package) string {
	m := p.Module
	if goAs == nil || m == nil || !m.Main || m.GoMod == "" {
		return ""
	}
	to := goAs(m.GoMod)
	declared := "go" + m.GoVersion
	if !version.IsValid(to) || (version.IsValid(declared) && version.Compare(version.Lang(to), version.Lang(declared)) <= 0) {
		return ""
	}
	raised := *m
	raised.GoVersion = strings.TrimPrefix(to, "go")
	p.Module = &raised
	if !version.IsValid(declared) {
		return "go1" // unknown: every gate is granted only by the raise
	}
	return declared
}

package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/cobra"
)

// addChangedSinceFlag adds --changed-since.
func addChangedSinceFlag(cmd *cobra.Command, opts *options) {
	cmd.Flags().StringVar(&opts.changedSince, "changed-since", "", "only the test files changed since git revision `REV` (working tree against REV, and untracked files)")
}

// changedFilter returns a filter for rewrite.Config.Only that accepts the
// files of the git repository holding dir that differ from rev in the
// working tree, or are untracked (and not ignored).
func changedFilter(dir, rev string, env []string) (func(path string) bool, error) {
	if strings.HasPrefix(rev, "-") {
		return nil, fmt.Errorf("--changed-since %s: not a revision", rev)
	}
	out, err := git(env, dir, "rev-parse", "--show-toplevel")
	if errors.Is(err, exec.ErrNotFound) {
		return nil, fmt.Errorf("--changed-since needs git: %v", err)
	}
	if err != nil {
		return nil, fmt.Errorf("--changed-since: %s is not in a git repository", dir)
	}
	root := strings.TrimSpace(string(out))
	if root == "" {
		return nil, fmt.Errorf("--changed-since: %s is not in a git work tree", dir)
	}
	root = filepath.FromSlash(root)
	if _, err := git(env, root, "rev-parse", "--verify", "--quiet", rev+"^{commit}"); err != nil {
		return nil, fmt.Errorf("--changed-since %s: unknown revision", rev)
	}
	diff, err := git(env, root, "diff", "--name-only", "--no-renames", "-z", rev, "--")
	if err != nil {
		return nil, fmt.Errorf("--changed-since %s: %v", rev, err)
	}
	untracked, err := git(env, root, "ls-files", "--others", "--exclude-standard", "--full-name", "-z")
	if err != nil {
		return nil, fmt.Errorf("--changed-since %s: listing untracked files: %v", rev, err)
	}
	realRoot := root
	if r, err := filepath.EvalSymlinks(root); err == nil {
		realRoot = r
	}
	set := map[string]bool{}
	for _, list := range [][]byte{diff, untracked} {
		for _, name := range strings.Split(string(list), "\x00") {
			if name != "" {
				set[filepath.Join(realRoot, filepath.FromSlash(name))] = true
			}
		}
	}
	return newPathFilter(set), nil
}

// newPathFilter returns a filter accepting the paths in set (absolute,
// without symbolic links): the engine's paths may reach the same file
// through a link (a temporary directory, a checkout under a linked home),
// so their directories are resolved, once each.
func newPathFilter(set map[string]bool) func(path string) bool {
	var mu sync.Mutex
	resolved := map[string]string{}
	return func(path string) bool {
		if set[path] {
			return true
		}
		dir, base := filepath.Split(path)
		mu.Lock()
		real, ok := resolved[dir]
		if !ok {
			real = dir
			if r, err := filepath.EvalSymlinks(dir); err == nil {
				real = r
			}
			resolved[dir] = real
		}
		mu.Unlock()
		return set[filepath.Join(real, base)]
	}
}

// git runs git in dir with env (nil: the process's environment) and
// returns its standard output; the error carries the first line of its
// standard error.
func git(env []string, dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			if msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n"); msg != "" {
				return nil, errors.New(msg)
			}
		}
		return nil, err
	}
	return out, nil
}

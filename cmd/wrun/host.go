package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
)

// effectiveGrant parses the requested grant and narrows it to any grant or
// ceiling an enclosing wrun exported (WRUN_GRANT, WRUN_CEILING): a nested
// wrun can only narrow. The kernel enforces that anyway, since sandboxes
// stack; narrowing here keeps what wrun says true. It returns notes on any
// narrowing.
func effectiveGrant(spec string, env []string) (grant.Grant, []string, error) {
	g, err := grant.Parse(spec)
	if err != nil {
		return grant.Grant{}, nil, fmt.Errorf("--grant: %w", err)
	}
	var notes []string
	for _, name := range []string{"WRUN_GRANT", "WRUN_CEILING"} {
		v, ok := lookupEnv(env, name)
		if !ok || v == "" {
			continue
		}
		limit, err := grant.Parse(v)
		if err != nil {
			return grant.Grant{}, nil, fmt.Errorf("%s (set by an enclosing wrun) is not a grant: %w", name, err)
		}
		if ex := g.Exceeds(limit); len(ex) > 0 {
			notes = append(notes, fmt.Sprintf("grant narrowed to the enclosing wrun's %s: %s", name, strings.Join(ex, "; ")))
			g = g.Intersect(limit)
		}
	}
	return g, notes, nil
}

func lookupEnv(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// hostFromFlags gathers the facts the policy depends on and checks every
// path the user named.
func hostFromFlags(pf *policyFlags, env []string) (policy.Host, policy.Options, error) {
	var h policy.Host
	var o policy.Options
	wd := pf.workdir
	if wd == "" {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return h, o, fmt.Errorf("finding the current directory: %w", err)
		}
	}
	dir, err := canonical(wd)
	if err != nil {
		return h, o, fmt.Errorf("--workdir %s: %w", wd, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return h, o, fmt.Errorf("--workdir %s: not a directory", wd)
	}
	h.Workdir = dir
	h.Env = env
	if home, ok := lookupEnv(env, "HOME"); ok && filepath.IsAbs(home) {
		h.Home = filepath.Clean(home)
	}
	if u, err := user.Current(); err == nil && u.HomeDir != "" && filepath.IsAbs(u.HomeDir) {
		h.AccountHome = filepath.Clean(u.HomeDir)
		if h.Home == "" {
			h.Home = h.AccountHome
		}
	}
	if self, err := os.Executable(); err == nil {
		if self, err = filepath.EvalSymlinks(self); err == nil {
			h.Self = self
		}
	}
	if cache, err := os.UserCacheDir(); err == nil {
		h.StateDir = filepath.Join(cache, "wrun")
	}
	for _, p := range pf.allowRead {
		c, err := canonical(p)
		if err != nil {
			return h, o, fmt.Errorf("--allow-read %s: %w", p, err)
		}
		o.AllowRead = append(o.AllowRead, c)
	}
	for _, p := range pf.allowWrite {
		c, err := canonical(p)
		if err != nil {
			return h, o, fmt.Errorf("--allow-write %s: %w (create it first, or allow its parent)", p, err)
		}
		o.AllowWrite = append(o.AllowWrite, c)
	}
	for _, n := range pf.keepEnv {
		if n == "" || strings.ContainsAny(n, "= ") {
			return h, o, fmt.Errorf("--keep-env %q: want a variable name", n)
		}
		o.KeepEnv = append(o.KeepEnv, n)
	}
	return h, o, nil
}

// canonical makes a path absolute with every symbolic link resolved; the
// path must exist.
func canonical(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[2:])
		}
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	c, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", errors.New("no such file or directory")
	}
	return c, err
}

// stdioPaths returns what file descriptors 0-2 are open on, when that is a
// file or a device (a terminal) rather than a pipe or socket. A directory
// is left out: a rule on it would open everything beneath it.
func stdioPaths() [3]string {
	var out [3]string
	for fd := range out {
		target, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		if err != nil || !filepath.IsAbs(target) || strings.HasSuffix(target, " (deleted)") {
			continue
		}
		if fi, err := os.Stat(target); err == nil && !fi.IsDir() {
			out[fd] = target
		}
	}
	return out
}

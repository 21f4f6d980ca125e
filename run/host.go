package run

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/envlist"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/verify"
)

// StateDir is wrun's state directory for this user: the private state of
// sandboxed runs (their build caches, verify.UseState) lies beneath it.
// It is "" when the user has no cache directory.
func StateDir() string {
	if cache, err := os.UserCacheDir(); err == nil {
		return filepath.Join(cache, "wrun")
	}
	return ""
}

// identity is who the child runs as: wrun's effective user and groups.
func identity() policy.Identity {
	id := policy.Identity{Uid: os.Geteuid(), Gids: []int{os.Getegid()}}
	if gids, err := os.Getgroups(); err == nil {
		id.Gids = append(id.Gids, gids...)
	}
	return id
}

// StartSearch starts the search for the files only this user's child may
// read (policy.ScanRoots: as root, all of /etc), for Config.Search. It is
// a launch's largest step as root; started first, it runs while the
// caller reads its settings and registers the run.
func StartSearch() *policy.PrivateSearch {
	id := identity()
	return policy.StartPrivateSearch(policy.ScanRoots(id.Uid), id)
}

// hostFacts gathers the facts the policy depends on and checks every path
// s names.
func hostFacts(s *Spec, env []string) (policy.Host, policy.Options, error) {
	var h policy.Host
	var o policy.Options
	wd := s.Workdir
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
	if home, ok := envlist.Lookup(env, "HOME"); ok && filepath.IsAbs(home) {
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
	h.Identity = identity()
	h.Scan = policy.ScanRoots(h.Identity.Uid)
	goos := s.OS
	if goos == "" {
		goos = runtime.GOOS
	}
	h.Roots = policy.SystemRoots(goos)
	h.StateDir = StateDir()
	h.Records, h.Hide = s.Records, s.Hide
	// What network=hosts reaches without --allow-host: read from the
	// repository's config and the user's own files and environment,
	// never the workspace's.
	h.NetHosts = verify.NetHosts(verify.ReadHostFiles(verify.Input{Workdir: h.Workdir, Home: h.Home,
		Getenv: func(k string) string { v, _ := envlist.Lookup(env, k); return v }}))
	for _, p := range s.AllowRead {
		c, err := canonical(p)
		if err != nil {
			return h, o, fmt.Errorf("--allow-read %s: %w", p, err)
		}
		o.AllowRead = append(o.AllowRead, c)
	}
	for _, p := range s.AllowWrite {
		c, err := canonical(p)
		if err != nil {
			return h, o, fmt.Errorf("--allow-write %s: %w (create it first, or allow its parent)", p, err)
		}
		o.AllowWrite = append(o.AllowWrite, c)
	}
	for _, p := range s.AllowUnix {
		// A socket may not exist yet (its server starts later): the
		// path must be absolute, and is resolved when the child connects.
		if !filepath.IsAbs(p) {
			abs, err := filepath.Abs(p)
			if err != nil {
				return h, o, fmt.Errorf("--allow-unix %s: %w", p, err)
			}
			p = abs
		}
		o.AllowUnix = append(o.AllowUnix, canonicalSocket(filepath.Clean(p)))
	}
	for _, v := range s.AllowHost {
		hst, err := grant.ParseHost(v)
		if err != nil {
			return h, o, err
		}
		if !slices.Contains(o.AllowHost, hst) {
			o.AllowHost = append(o.AllowHost, hst)
		}
	}
	for _, n := range s.KeepEnv {
		if n == "" || strings.ContainsAny(n, "= ") {
			return h, o, fmt.Errorf("--keep-env %q: want a variable name", n)
		}
		o.KeepEnv = append(o.KeepEnv, n)
	}
	return h, o, nil
}

// commandPath is the program argv names when it names it by a path
// (relative ones from the workspace, where the command starts), symbolic
// links resolved; "" when argv names it by name alone (found on PATH) or
// it does not exist.
func commandPath(argv []string, workdir string) string {
	if len(argv) == 0 || !strings.Contains(argv[0], "/") {
		return ""
	}
	p := argv[0]
	if !filepath.IsAbs(p) {
		p = filepath.Join(workdir, p)
	}
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return c
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

// canonicalSocket is the absolute path p of an --allow-unix socket with
// the symbolic links of its directory resolved now. A link at the
// socket's own name is not followed (the socket need not exist yet, and
// such a link may have been planted by an earlier sandboxed run): name
// the socket it leads to. The sandbox follows no link at that path (the
// mediation opens it with RESOLVE_NO_SYMLINKS), so a link the child plants
// there later leads nowhere.
func canonicalSocket(p string) string {
	if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		return filepath.Join(d, filepath.Base(p))
	}
	return p
}

// stdioPaths returns what the command's stdin, stdout and stderr are open
// on, when that is a file or a device (a terminal) rather than a pipe or
// socket. A directory is left out: a rule on it would open everything
// beneath it.
func stdioPaths(files [3]*os.File) [3]string {
	var out [3]string
	for i, f := range files {
		target := openPath(f)
		if target == "" || !filepath.IsAbs(target) || strings.HasSuffix(target, " (deleted)") {
			continue
		}
		if fi, err := os.Stat(target); err == nil && !fi.IsDir() {
			out[i] = target
		}
	}
	return out
}

// openPath returns what f is open on, as /proc/self/fd names it; "" when
// that cannot be read. It reads the descriptor through SyscallConn rather
// than Fd, which would switch f to blocking mode.
func openPath(f *os.File) string {
	if f == nil {
		return ""
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return ""
	}
	var target string
	_ = rc.Control(func(fd uintptr) {
		target, _ = os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	})
	return target
}

//go:build linux

package linux

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Resolving a path of the command's as its call would, for a call wrun
// performs. The path is wrun's own copy (read once from the command's
// memory), so nothing the command does afterwards changes it; what it
// names is found by the kernel, component by component, from a directory
// descriptor of the command's (its working directory, the call's dirfd)
// or the root: every component but the last is followed as the call
// follows it (symbolic links included; magic links of /proc refused), and
// the last is resolved by wrun, link by link, so that the entry the call
// acts on is always a name in a directory wrun holds open: the call is
// then made on that directory's descriptor, never on a path again.

// devIno identifies a file: its device and inode number.
type devIno struct{ dev, ino uint64 }

func idOf(st *unix.Stat_t) devIno { return devIno{st.Dev, st.Ino} }

// entry is one directory entry named exactly: an O_PATH descriptor of the
// directory that holds it, and its name there (one component, never "."
// or "..").
type entry struct {
	dir  int
	name string
	// dirPath is the directory's path now (the kernel's, through
	// /proc/self/fd): the one the policy's rules are judged on.
	dirPath string
	dirID   devIno
	// mustDir: the path ended in a slash, so the entry must be (or, made,
	// be made as) a directory.
	mustDir bool
}

// path is the entry's path, for the model and for denials.
func (e entry) path() string { return filepath.Join(e.dirPath, e.name) }

func (e entry) close() {
	if e.dir >= 0 {
		unix.Close(e.dir)
	}
}

// maxLinks is how many symbolic links one resolution follows (the
// kernel's MAXSYMLINKS).
const maxLinks = 40

// errNotPlain is returned for a path wrun does not resolve itself: one
// whose last component is "." or "..", or that goes through a magic link
// of /proc. Such a call is left to the kernel, or refused where it cannot
// be.
var errNotPlain = errors.New("not a plain path")

// resolveEntry resolves path from start (a directory descriptor of the
// command's; an absolute path starts at the root) to an entry. follow:
// a symbolic link at the last component is followed, as by open without
// O_NOFOLLOW. The caller closes the entry; start stays the caller's.
func resolveEntry(start int, path string, follow bool) (entry, error) {
	return resolveFrom(start, path, follow, 0)
}

// resolveFrom is resolveEntry after links symbolic links.
func resolveFrom(start int, path string, follow bool, links int) (entry, error) {
	if path == "" {
		return entry{dir: -1}, unix.ENOENT
	}
	if links > maxLinks {
		return entry{dir: -1}, unix.ELOOP
	}
	mustDir := strings.HasSuffix(path, "/")
	trimmed := strings.TrimRight(path, "/")
	if trimmed == "" {
		return entry{dir: -1}, errNotPlain // the root itself
	}
	dirPart, name := filepath.Split(trimmed)
	if name == "." || name == ".." {
		return entry{dir: -1}, errNotPlain
	}
	from := start
	if filepath.IsAbs(trimmed) {
		from = unix.AT_FDCWD
	}
	if dirPart == "" {
		dirPart = "."
	}
	dir, err := openDirAt(from, dirPart)
	if err != nil {
		return entry{dir: -1}, err
	}
	var fs unix.Statfs_t
	if unix.Fstatfs(dir, &fs) != nil || fs.Type == unix.PROC_SUPER_MAGIC {
		// /proc: what its names mean depends on who resolves them
		// (/proc/self is wrun here, and its fd/N wrun's descriptors),
		// and nothing there is the mediation's to make. Left to the
		// kernel, before a link there is followed.
		unix.Close(dir)
		return entry{dir: -1}, errNotPlain
	}
	var st unix.Stat_t
	err = unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK && (follow || mustDir) {
		target, rerr := readlinkat(dir, name)
		if rerr != nil {
			unix.Close(dir)
			return entry{dir: -1}, rerr
		}
		if mustDir {
			target += "/"
		}
		// A relative target is resolved from the link's directory.
		next, nerr := resolveFrom(dir, target, follow, links+1)
		unix.Close(dir)
		return next, nerr
	}
	if err != nil && !errors.Is(err, unix.ENOENT) {
		unix.Close(dir)
		return entry{dir: -1}, err
	}
	e := entry{dir: dir, name: name, mustDir: mustDir}
	if err := e.fill(); err != nil {
		unix.Close(dir)
		return entry{dir: -1}, err
	}
	return e, nil
}

// openDirAt opens path (a directory) from dir, following symbolic links
// as the kernel's path walk does but no magic link of /proc (those name
// the files of whichever process resolves them: wrun's here, not the
// command's).
func openDirAt(dir int, path string) (int, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := unix.Openat2(dir, path, &how)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ELOOP) && strings.HasPrefix(path, "/proc/") {
			return -1, errNotPlain
		}
		return fd, err
	}
}

// fill reads the entry's directory's identity and path.
func (e *entry) fill() error {
	var st unix.Stat_t
	if err := unix.Fstat(e.dir, &st); err != nil {
		return err
	}
	e.dirID = idOf(&st)
	p, err := fdPath(e.dir)
	if err != nil {
		return err
	}
	e.dirPath = p
	return nil
}

// fdPath is the path the kernel gives a descriptor of wrun's.
func fdPath(fd int) (string, error) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", err
	}
	return p, nil
}

// readlinkat reads the symbolic link name in dir.
func readlinkat(dir int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	for {
		n, err := unix.Readlinkat(dir, name, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return "", err
		}
		if n >= len(buf) {
			return "", unix.ENAMETOOLONG
		}
		return string(buf[:n]), nil
	}
}

// stat is the entry's file, not followed: its identity and type, or ok
// false when there is none.
func (e entry) stat() (st unix.Stat_t, ok bool, err error) {
	err = unix.Fstatat(e.dir, e.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return st, false, nil
	}
	return st, err == nil, err
}

// selfFD is the path of one of wrun's descriptors, which the kernel
// follows to its file (never to a path again).
func selfFD(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// procFDPath reports the descriptor a path names when it is one of the
// caller's through /proc or /dev/fd (the magic links a call can name its
// own descriptors by): /proc/self/fd/N, /proc/thread-self/fd/N,
// /proc/PID/fd/N for the caller's own PID, /dev/fd/N, /dev/stdin,
// /dev/stdout, /dev/stderr.
func procFDPath(path string, pid, tgid int) (int, bool) {
	switch path {
	case "/dev/stdin":
		return 0, true
	case "/dev/stdout":
		return 1, true
	case "/dev/stderr":
		return 2, true
	}
	rest, ok := strings.CutPrefix(path, "/dev/fd/")
	if !ok {
		for _, pre := range []string{"/proc/self/fd/", "/proc/thread-self/fd/",
			"/proc/" + strconv.Itoa(tgid) + "/fd/", "/proc/" + strconv.Itoa(pid) + "/fd/",
			"/proc/" + strconv.Itoa(tgid) + "/task/" + strconv.Itoa(pid) + "/fd/"} {
			if r, ok2 := strings.CutPrefix(path, pre); ok2 {
				rest, ok = r, true
				break
			}
		}
	}
	if !ok {
		return -1, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return -1, false
	}
	return n, true
}

// readTruncates reports whether an open with flags truncates a file it
// opens only for reading (O_RDONLY|O_TRUNC), which no Landlock write
// right checks below ABI 3.
func readTruncates(flags uint64) bool {
	return flags&unix.O_TRUNC != 0 && flags&unix.O_ACCMODE == unix.O_RDONLY
}

// procFile is the path of a file of /proc that path names through
// /proc/self or /proc/thread-self (the caller's process tgid, thread
// tid), for the kernel model to predict; false for any other path, and
// for one through a magic link (fd/, cwd, root, exe, map_files/, ns/),
// which names whatever it leads to.
func procFile(path string, tgid, tid int) (string, bool) {
	var rest, base string
	switch {
	case strings.HasPrefix(path, "/proc/self/"):
		rest, base = strings.TrimPrefix(path, "/proc/self/"), "/proc/"+strconv.Itoa(tgid)+"/"
	case strings.HasPrefix(path, "/proc/thread-self/"):
		rest, base = strings.TrimPrefix(path, "/proc/thread-self/"), "/proc/"+strconv.Itoa(tgid)+"/task/"+strconv.Itoa(tid)+"/"
	default:
		return "", false
	}
	first, _, _ := strings.Cut(rest, "/")
	switch first {
	case "", ".", "..", "fd", "cwd", "root", "exe", "map_files", "ns", "task":
		return "", false
	}
	if tgid <= 0 || strings.Contains(rest, "/..") || strings.Contains(rest, "//") {
		return "", false
	}
	return base + rest, true
}

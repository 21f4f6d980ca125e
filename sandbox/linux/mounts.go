//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/policy"
)

// enterMountNS gives the calling thread a private mount namespace whose
// changes do not propagate back to the host: a new one with unshare, else
// the one the process was started in. Call it on a locked thread that is
// discarded afterwards, or in a process that becomes the command.
func enterMountNS(unshare bool) error {
	if unshare {
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("creating a mount namespace: %w", err)
		}
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("making mounts private to the sandbox: %w", err)
	}
	return nil
}

// openProtected opens a protected path as O_PATH, reached from its
// writable root without following symbolic links.
func openProtected(pr policy.Protected) (int, error) {
	if pr.Path == pr.Within || pr.Within == "" {
		return unix.Open(pr.Path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	rel, err := filepath.Rel(pr.Within, pr.Path)
	if err != nil {
		return -1, err
	}
	return openBeneath(pr.Within, rel, unix.O_PATH|unix.O_NOFOLLOW)
}

// protectPath bind-mounts a path onto itself: read-only, or for a pinned
// directory read-write, which is enough to make it a mount point that
// cannot be renamed, removed or replaced. It uses the new mount API on file
// descriptors so no path is resolved twice.
func protectPath(pr policy.Protected) error {
	fd, err := openProtected(pr)
	if err != nil {
		return fmt.Errorf("protecting %s: %w", pr.Path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("protecting %s: %w", pr.Path, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return fmt.Errorf("protecting %s: it is a symbolic link; a link cannot be protected in place (replace it with the file it points to)", pr.Path)
	}
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("protecting %s: open_tree: %w", pr.Path, err)
	}
	defer unix.Close(tree)
	if !pr.Pin {
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
			return fmt.Errorf("protecting %s: mount_setattr: %w", pr.Path, err)
		}
	}
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("protecting %s: move_mount: %w", pr.Path, err)
	}
	return nil
}

// create makes a path the plan needs before the child starts: a missing
// directory (with its parents) or an empty file. Beneath the workspace it
// never follows a symbolic link.
func create(c creation) error {
	if c.Beneath == "" || c.Path == c.Beneath {
		if c.Dir {
			return os.MkdirAll(c.Path, 0o755)
		}
		f, err := os.OpenFile(c.Path, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	}
	rel, err := filepath.Rel(c.Beneath, c.Path)
	if err != nil {
		return err
	}
	parent, base := filepath.Split(rel)
	if parent != "" {
		if err := create(creation{Path: filepath.Join(c.Beneath, parent), Dir: true, Beneath: c.Beneath}); err != nil {
			return err
		}
	}
	dfd, err := openBeneath(c.Beneath, filepath.Clean("./"+parent), unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return fmt.Errorf("creating %s: %w", c.Path, err)
	}
	defer unix.Close(dfd)
	if c.Dir {
		err = unix.Mkdirat(dfd, base, 0o755)
	} else {
		var fd int
		fd, err = unix.Openat(dfd, base, unix.O_CREAT|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err == nil {
			unix.Close(fd)
		}
	}
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("creating %s: %w", c.Path, err)
	}
	return nil
}

// sweep removes a path that must not exist, if the child created it. The
// parent is reached without following symbolic links.
func sweep(pr policy.Protected) (bool, error) {
	within := pr.Within
	if within == "" {
		within = "/"
	}
	rel, err := filepath.Rel(within, filepath.Dir(pr.Path))
	if err != nil {
		return false, err
	}
	dfd, err := openBeneath(within, rel, unix.O_PATH|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("checking %s: %w", pr.Path, err)
	}
	defer unix.Close(dfd)
	base := filepath.Base(pr.Path)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("checking %s: %w", pr.Path, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		// A directory the child made: remove it with its contents, from
		// the real path now that nothing sandboxed runs.
		return true, os.RemoveAll(pr.Path)
	}
	return true, unix.Unlinkat(dfd, base, 0)
}

// maskHidden covers each of paths (hidden paths, none inside another) with
// an empty file or directory of mode 000 on a read-only tmpfs: the child,
// which holds no capability, can neither read nor list it (EACCES, owner
// or not), nor change, remove or unmount it (a read-only mount, a mount
// point, no CAP_SYS_ADMIN, and seccomp refuses the mount calls). A path is
// reached from / without following any symbolic link; one that no longer
// exists hides nothing and is skipped. The tmpfs is attached at /proc
// while the masks are cloned from it (a detached mount cannot be cloned
// before Linux 6.15), then detached: call it before /proc is mounted.
func maskHidden(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("masking hidden paths: fsopen tmpfs: %w", err)
	}
	defer unix.Close(fsfd)
	if err := unix.FsconfigSetString(fsfd, "size", "4k"); err != nil {
		return fmt.Errorf("masking hidden paths: fsconfig: %w", err)
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return fmt.Errorf("masking hidden paths: fsconfig create: %w", err)
	}
	mnt, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return fmt.Errorf("masking hidden paths: fsmount: %w", err)
	}
	defer unix.Close(mnt)
	if err := unix.Mkdirat(mnt, "d", 0); err != nil {
		return fmt.Errorf("masking hidden paths: %w", err)
	}
	f, err := unix.Openat(mnt, "f", unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("masking hidden paths: %w", err)
	}
	unix.Close(f)
	for _, name := range []string{".", "d", "f"} {
		mode := uint32(0)
		if name == "." {
			mode = 0o755
		}
		if err := unix.Fchmodat(mnt, name, mode, 0); err != nil {
			return fmt.Errorf("masking hidden paths: %w", err)
		}
	}
	ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(mnt, "", unix.AT_EMPTY_PATH, &ro); err != nil {
		return fmt.Errorf("masking hidden paths: mount_setattr: %w", err)
	}
	if err := unix.MoveMount(mnt, "", unix.AT_FDCWD, "/proc", unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("masking hidden paths: attaching the masks' tmpfs: %w", err)
	}
	defer unix.Unmount("/proc", unix.MNT_DETACH)
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("masking hidden paths: %w", err)
	}
	defer unix.Close(root)
	for _, p := range paths {
		if err := maskPath(root, p); err != nil {
			return err
		}
	}
	if err := unix.Unmount("/proc", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("masking hidden paths: detaching the masks' tmpfs: %w", err)
	}
	return nil
}

// maskPath binds the empty directory or file of the masks' tmpfs (at
// /proc) over path, reached from root (a descriptor of /) without
// following any symbolic link.
func maskPath(root int, path string) error {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || path == "/" {
		return fmt.Errorf("hiding %s: not a clean absolute path", path)
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH}
	fd, err := unix.Openat2(root, path[1:], &how)
	if errors.Is(err, unix.ENOENT) {
		return nil // gone: nothing to hide
	}
	if errors.Is(err, unix.ELOOP) {
		// None lay on the way when the plan was made: refuse rather than
		// hide the wrong thing.
		return fmt.Errorf("hiding %s: a symbolic link now lies on the way; refusing to follow it", path)
	}
	if err != nil {
		return fmt.Errorf("hiding %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("hiding %s: %w", path, err)
	}
	src := "/proc/f"
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		src = "/proc/d"
	case unix.S_IFLNK:
		// It was no link when the plan was made: refuse rather than hide
		// the wrong thing.
		return fmt.Errorf("hiding %s: it became a symbolic link", path)
	}
	tree, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("hiding %s: open_tree: %w", path, err)
	}
	defer unix.Close(tree)
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("hiding %s: move_mount: %w", path, err)
	}
	return nil
}

// holeView is a hidden directory that rules reach into (the home directory
// with the places toolchains read, /dev with the devices the child may
// use), where no Landlock rule can carve it: the stage covers it with a
// read-only tmpfs that holds only what Keep names, bound back from where
// it lies, and the directory's own symbolic links.
type holeView struct {
	Path string `json:"path"`
	// Keep are the rules beneath Path (opened as their Landlock rules are)
	// and the views inside it, none inside another.
	Keep []fsRule `json:"keep"`
}

// makeHoleView covers v.Path with its view. The kept paths are cloned
// (with every mount beneath them: writable binds, protected binds, masks,
// inner views) before the tmpfs hides them. A hidden directory that no
// longer exists hides nothing.
func makeHoleView(v holeView) error {
	if !filepath.IsAbs(v.Path) || filepath.Clean(v.Path) != v.Path || v.Path == "/" {
		return fmt.Errorf("hiding %s: not a clean absolute path", v.Path)
	}
	hfd, err := openBeneath("/", v.Path[1:], unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("hiding %s: %w", v.Path, err)
	}
	defer unix.Close(hfd)
	type kept struct {
		rel  string
		tree int
		dir  bool
	}
	var keep []kept
	defer func() {
		for _, k := range keep {
			unix.Close(k.tree)
		}
	}()
	for _, r := range v.Keep {
		rel, err := filepath.Rel(v.Path, r.Path)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("hiding %s: %s is not beneath it", v.Path, r.Path)
		}
		fd, err := openRulePath(r)
		if err != nil {
			if r.Optional || errors.Is(err, unix.ENOENT) {
				continue // it gets no rule either
			}
			return fmt.Errorf("hiding %s: keeping %s: %w", v.Path, r.Path, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		var tree int
		if err == nil {
			tree, err = unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
		}
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("hiding %s: keeping %s: %w", v.Path, r.Path, err)
		}
		keep = append(keep, kept{rel: rel, tree: tree, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR})
	}
	// The directory's own symbolic links: a link holds nothing (its target
	// is judged where it lies), and tools find their files through them.
	links := map[string]string{}
	if dfd, err := unix.Openat(hfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		d := os.NewFile(uintptr(dfd), v.Path)
		ents, _ := d.ReadDir(-1)
		for _, e := range ents {
			if e.Type()&os.ModeSymlink == 0 {
				continue
			}
			buf := make([]byte, unix.PathMax)
			if n, err := unix.Readlinkat(hfd, e.Name(), buf); err == nil {
				links[e.Name()] = string(buf[:n])
			}
		}
		d.Close()
	}
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("hiding %s: fsopen tmpfs: %w", v.Path, err)
	}
	defer unix.Close(fsfd)
	if err := unix.FsconfigSetString(fsfd, "mode", "0755"); err != nil {
		return fmt.Errorf("hiding %s: fsconfig: %w", v.Path, err)
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return fmt.Errorf("hiding %s: fsconfig create: %w", v.Path, err)
	}
	mnt, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return fmt.Errorf("hiding %s: fsmount: %w", v.Path, err)
	}
	defer unix.Close(mnt)
	// Attached first: a mount can be moved onto a mount point of this
	// namespace only (before Linux 6.15).
	if err := unix.MoveMount(mnt, "", hfd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("hiding %s: move_mount: %w", v.Path, err)
	}
	for _, k := range keep {
		// The stub: its parents, then a directory or an empty file.
		parts := strings.Split(k.rel, "/")
		for i := 1; i < len(parts); i++ {
			if err := unix.Mkdirat(mnt, strings.Join(parts[:i], "/"), 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				return fmt.Errorf("hiding %s: keeping %s: %w", v.Path, k.rel, err)
			}
		}
		if k.dir {
			err = unix.Mkdirat(mnt, k.rel, 0o755)
		} else {
			var f int
			f, err = unix.Openat(mnt, k.rel, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
			if err == nil {
				unix.Close(f)
			}
		}
		if err != nil {
			return fmt.Errorf("hiding %s: keeping %s: %w", v.Path, k.rel, err)
		}
		how := unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH}
		stub, err := unix.Openat2(mnt, k.rel, &how)
		if err != nil {
			return fmt.Errorf("hiding %s: keeping %s: %w", v.Path, k.rel, err)
		}
		err = unix.MoveMount(k.tree, "", stub, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
		unix.Close(stub)
		if err != nil {
			return fmt.Errorf("hiding %s: keeping %s: move_mount: %w", v.Path, k.rel, err)
		}
	}
	for name, target := range links {
		if err := unix.Symlinkat(target, mnt, name); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("hiding %s: recreating the link %s: %w", v.Path, name, err)
		}
	}
	ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(mnt, "", unix.AT_EMPTY_PATH, &ro); err != nil {
		return fmt.Errorf("hiding %s: mount_setattr: %w", v.Path, err)
	}
	return nil
}

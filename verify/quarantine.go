package verify

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pjbgf/sha1cd"
)

// A git quarantine is a directory that receives every object a sandboxed
// child writes (GIT_OBJECT_DIRECTORY), with the repository's own objects
// readable as an alternate. The child cannot touch an existing object, and
// wrun copies new objects in only after checking each against its name.
//
// It lives in the repository's common dir, as wrun-quarantine/ID/. Two
// flock(2) locks order everything, so no lock file is ever left behind:
//
//   - the common dir itself, held exclusively while wrun changes
//     quarantines or objects/info/alternates;
//   - the quarantine directory, held shared by wrun and by the child, which
//     inherits it, for as long as anything of the run may write into it. A
//     quarantine is settled only under an exclusive lock on it, so never
//     while a process of its run (one that outlived a killed wrun
//     included) may still add an object a ref will name.
//
// The quarantine is listed in objects/info/alternates from before the child
// starts until after its objects have been copied in, so a ref that names
// a quarantined object is valid at every moment, whenever wrun stops.
const (
	quarantineDirName = "wrun-quarantine"
	alternatesFile    = "objects/info/alternates"
	alternatePrefix   = "../" + quarantineDirName + "/"
)

// openQuarantine creates and registers the quarantine q of the repository
// whose common dir is common, first settling any that earlier runs left
// behind. It returns the quarantine directory, locked shared, for the child
// to inherit.
func openQuarantine(common, q string) (*os.File, error) {
	id, err := quarantineID(common, q)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(common)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	admin, err := adminLock(root)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	// Leftovers are settled on a best-effort basis: one that cannot be
	// settled stays registered, which keeps the repository consistent.
	_ = settleStale(root, id)

	dir := quarantineDirName + "/" + id
	for _, d := range []string{quarantineDirName, dir} {
		if err := ensureDir(root, d); err != nil {
			return nil, err
		}
	}
	lock, err := lockDir(root, dir, syscall.LOCK_SH)
	if err != nil {
		return nil, err
	}
	if err := saveRefSnapshot(root, id); err != nil {
		lock.Close()
		return nil, fmt.Errorf("noting the refs before the run: %w", err)
	}
	err = editAlternates(root, func(lines []string) []string {
		if slices.Contains(lines, alternatePrefix+id) {
			return lines
		}
		return append(lines, alternatePrefix+id)
	})
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("registering the quarantine: %w", err)
	}
	return lock, nil
}

// closeQuarantine settles the quarantine q after the run: held is the lock
// Prepare returned (nil when it failed). It returns warnings. Whether every
// process of the run has ended does not matter to what it trusts: objects
// are always copied and checked on wrun's copy.
func closeQuarantine(common, q string, held *os.File) []error {
	if held != nil {
		held.Close()
	}
	id, err := quarantineID(common, q)
	if err != nil {
		return []error{err}
	}
	root, err := os.OpenRoot(common)
	if err != nil {
		return []error{fmt.Errorf("settling the git quarantine: %w", err)}
	}
	defer root.Close()
	admin, err := adminLock(root)
	if err != nil {
		return []error{fmt.Errorf("%w; the git quarantine %s stays registered, and a later run moves its objects in", err, q)}
	}
	defer admin.Close()
	dir := quarantineDirName + "/" + id
	lock, err := lockDir(root, dir, syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case isNotExist(err):
		// Never created, or settled already; drop a registration left by
		// a failed Prepare.
		return settle(root, id)
	case errors.Is(err, syscall.EWOULDBLOCK):
		return []error{Notice(fmt.Sprintf("the git quarantine %s is still in use by processes the command left running: it stays registered as an alternate object directory, and a later wrun run in this repository moves its objects in", q))}
	case err != nil:
		return []error{fmt.Errorf("settling the git quarantine %s (it stays registered): %w", q, err)}
	}
	defer lock.Close()
	return settle(root, id)
}

// settleStale settles every quarantine but keep that no live run holds.
// The caller holds the admin lock.
func settleStale(root *os.Root, keep string) []error {
	ids := map[string]bool{}
	if ents, err := readDirRoot(root, quarantineDirName); err == nil {
		for _, e := range ents {
			if validID(e.Name()) {
				ids[e.Name()] = true
			}
		}
	}
	if b, err := root.ReadFile(alternatesFile); err == nil {
		for _, l := range splitLines(b) {
			if id, ok := strings.CutPrefix(l, alternatePrefix); ok && validID(id) {
				ids[id] = true
			}
		}
	}
	for _, id := range snapshotIDs(root) {
		ids[id] = true // settled but for its refs (a wrun killed meanwhile)
	}
	var errs []error
	for id := range ids {
		if id == keep {
			continue
		}
		lock, err := lockDir(root, quarantineDirName+"/"+id, syscall.LOCK_EX|syscall.LOCK_NB)
		if err != nil && !isNotExist(err) {
			continue // a live run, or what it left running, holds it
		}
		// Its wrun was killed: processes it left behind may still run
		// (without the lock, if they dropped it); objects are copied and
		// checked on the copy, as always.
		errs = append(errs, settle(root, id)...)
		if lock != nil {
			lock.Close()
		}
	}
	return errs
}

// settle copies the good objects of quarantine id into the repository and,
// when that worked, unregisters the quarantine, restores or removes the
// refs the run wrote that name nothing the repository has (repairRefs),
// and removes the quarantine. The caller holds
// the quarantine's lock exclusively and the admin lock.
func settle(root *os.Root, id string) []error {
	algo := objectFormat(root)
	dir := quarantineDirName + "/" + id
	warnings, err := migrate(root, dir, algo)
	if err != nil {
		return append(warnings, fmt.Errorf("moving objects out of the git quarantine %s (it stays registered and is retried by the next run): %w", dir, err))
	}
	err = editAlternates(root, func(lines []string) []string {
		out := lines[:0:0]
		for _, l := range lines {
			if l != alternatePrefix+id {
				out = append(out, l)
			}
		}
		return out
	})
	if err != nil {
		return append(warnings, fmt.Errorf("unregistering the git quarantine %s: %w", dir, err))
	}
	// No longer an alternate: a ref the run wrote counts only if the
	// repository itself has what it names.
	warnings = append(warnings, repairRefs(root, id, algo)...)
	if err := removeAll(root, dir); err != nil {
		warnings = append(warnings, fmt.Errorf("removing the git quarantine: %w", err))
	}
	_ = root.Remove(quarantineDirName) // only once it is empty
	return warnings
}

// Bounds on what wrun copies out of one quarantine. Every byte is read from
// a file the child made, and the child chooses its size: a sparse file
// costs it nothing on disk but wrun a real block for every byte copied, and
// hard links give one file many names. A sparse file (git never writes
// one), a file larger than MaxQuarantineFile, or one that would take the
// quarantine past MaxQuarantineTotal, is refused and reported, not copied;
// a file is counted (and copied) once, whatever its number of names. What
// wrun copies has thus cost the child as much disk as it costs wrun. A fetch that
// needs more goes under a grant that writes the repository.
var (
	MaxQuarantineFile  int64 = 2 << 30 // 2 GiB: one pack or loose object
	MaxQuarantineTotal int64 = 4 << 30 // 4 GiB: all of one quarantine
)

// migration copies the good objects of one quarantine into the
// repository.
type migration struct {
	root *os.Root // the common dir
	q    *os.Root // the quarantine
	dir  string   // the quarantine, relative to root
	algo string
	// seen holds every file taken so far, by device and inode: a file
	// with several names is copied once.
	seen     map[[2]uint64]bool
	total    int64 // bytes copied so far
	rejected []string
	refused  []string // beyond the bounds
}

// migrate copies every object of the quarantine dir that matches its name
// into the repository's objects. The check runs on wrun's own copy, in a
// file the child never had a name or a descriptor for, so nothing the
// child left running (an open descriptor, a second link, a process that
// outlived the run) can change it after the check. Objects that do not
// match, or that exceed the bounds, are left out and reported as warnings;
// err is set only when copying itself failed (then nothing may be
// unregistered).
func migrate(root *os.Root, dir, algo string) (warnings []error, err error) {
	q, err := root.OpenRoot(dir)
	if errors.Is(err, os.ErrPermission) && root.Chmod(dir, 0o755) == nil {
		q, err = root.OpenRoot(dir)
	}
	if isNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer q.Close()
	ents, err := readDirRoot(q, ".")
	if err != nil {
		return nil, err
	}
	m := &migration{root: root, q: q, dir: dir, algo: algo, seen: map[[2]uint64]bool{}}
	for _, e := range ents {
		switch {
		case len(e.Name()) == 2 && isHex(e.Name()) && e.IsDir():
			err = m.fanout(e.Name())
		case e.Name() == "pack" && e.IsDir():
			err = m.packs()
		}
		if err != nil {
			return nil, err
		}
	}
	if len(m.rejected) > 0 {
		warnings = append(warnings, Notice(fmt.Sprintf("discarded %d object(s) from the git quarantine that are not what their names say: %s", len(m.rejected), strings.Join(m.rejected, ", "))))
	}
	if len(m.refused) > 0 {
		warnings = append(warnings, Notice(fmt.Sprintf("refused %d file(s) of the git quarantine beyond wrun's bounds (%d MiB a file, %d MiB in all, each file once): %s",
			len(m.refused), MaxQuarantineFile>>20, MaxQuarantineTotal>>20, strings.Join(m.refused, ", "))))
	}
	return warnings, nil
}

// take decides whether wrun copies src, the quarantine's file name: not a
// second name of a file taken already, and within the bounds. It counts
// what it accepts.
func (m *migration) take(src *os.File, name string) (int64, bool) {
	fi, err := src.Stat()
	if err != nil {
		m.refused = append(m.refused, name+" (unreadable)")
		return 0, false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id := [2]uint64{uint64(st.Dev), uint64(st.Ino)}
		if m.seen[id] {
			m.refused = append(m.refused, name+" (another name of a file already taken)")
			return 0, false
		}
		m.seen[id] = true
	}
	size := fi.Size()
	switch {
	case size > MaxQuarantineFile:
		m.refused = append(m.refused, fmt.Sprintf("%s (%d bytes)", name, size))
		return 0, false
	case sparse(src, fi):
		m.refused = append(m.refused, fmt.Sprintf("%s (%d bytes with holes: git never writes a sparse file)", name, size))
		return 0, false
	case m.total+size > MaxQuarantineTotal:
		m.refused = append(m.refused, fmt.Sprintf("%s (%d bytes past the total)", name, size))
		return 0, false
	}
	m.total += size
	return size, true
}

// copyBounded copies exactly size bytes of src to dst; a file that grew or
// shrank meanwhile is an error (errChanged).
func copyBounded(dst io.Writer, src io.Reader, size int64) error {
	n, err := io.Copy(dst, io.LimitReader(src, size+1))
	if err != nil {
		return err
	}
	if n != size {
		return errChanged
	}
	return nil
}

// errChanged: a quarantined file changed size while wrun copied it.
var errChanged = errors.New("changed while being copied")

// fanout handles the loose objects of one fan-out directory, xx/.
func (m *migration) fanout(xx string) error {
	objs, err := readDirRoot(m.q, xx)
	if err != nil {
		return err
	}
	hexLen := 40
	if m.algo == "sha256" {
		hexLen = 64
	}
	for _, o := range objs {
		name := xx + o.Name()
		switch {
		case len(name) != hexLen || !isHex(name):
			// git's temporary files, or anything else: not an object
		case exists(m.root, "objects/"+xx+"/"+o.Name()):
			// git never replaces an object it has
		default:
			ok, err := m.copyLoose(name)
			if err != nil {
				return err
			}
			if !ok {
				m.rejected = append(m.rejected, name)
			}
		}
	}
	return nil
}

// packs handles the packs in pack/.
func (m *migration) packs() error {
	packs, err := readDirRoot(m.q, "pack")
	if err != nil {
		return err
	}
	for _, p := range packs {
		if !strings.HasSuffix(p.Name(), ".pack") {
			continue
		}
		why, err := m.pack(p.Name())
		if err != nil {
			return err
		}
		if why != "" {
			m.rejected = append(m.rejected, "pack/"+p.Name()+" ("+why+")")
		}
	}
	return nil
}

func exists(root *os.Root, name string) bool {
	_, err := root.Lstat(name)
	return err == nil
}

// openUntrusted opens a file the child may have made: never through a
// symbolic link, never blocking on a FIFO, and only a regular file.
func openUntrusted(q *os.Root, name string) (*os.File, bool) {
	f, err := q.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, false
	}
	return f, true
}

// copyLoose copies the loose object name (hex) from the quarantine into
// the repository if its content hashes to its name. The check runs on
// wrun's own copy, a new file in the repository's objects (which no
// process of the sandbox may write), so nothing can change the bytes after
// the check. It reports whether the object was good; one beyond the bounds
// is reported by take and counts as good here.
func (m *migration) copyLoose(name string) (bool, error) {
	root := m.root
	final := "objects/" + name[:2] + "/" + name[2:]
	src, ok := openUntrusted(m.q, name[:2]+"/"+name[2:])
	if !ok {
		return false, nil
	}
	defer src.Close()
	size, ok := m.take(src, name)
	if !ok {
		return true, nil
	}
	if err := ensureDir(root, "objects/"+name[:2]); err != nil {
		return false, err
	}
	tmp := "objects/" + name[:2] + "/tmp_obj_wrun_" + randomID()
	dst, err := root.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return false, err
	}
	defer root.Remove(tmp)
	defer dst.Close()
	if err := copyBounded(dst, src, size); err != nil {
		if errors.Is(err, errChanged) {
			return false, nil
		}
		return false, err
	}
	if _, err := dst.Seek(0, io.SeekStart); err != nil {
		return false, err
	}
	if !looseObjectMatches(dst, name, m.algo) {
		return false, nil
	}
	if err := dst.Close(); err != nil {
		return false, err
	}
	if err := root.Link(tmp, final); err != nil && !errors.Is(err, os.ErrExist) {
		return false, err
	}
	return true, nil
}

// looseObjectMatches reports whether r is a well-formed loose object (zlib
// of "TYPE SIZE\x00CONTENT", nothing after it) whose hash is name.
func looseObjectMatches(r io.Reader, name, algo string) bool {
	br := bufio.NewReader(r)
	zr, err := zlib.NewReader(br)
	if err != nil {
		return false
	}
	zb := bufio.NewReader(zr)
	hdr, err := zb.ReadSlice(0)
	if err != nil || len(hdr) > 32 {
		return false
	}
	typ, sizeStr, ok := strings.Cut(string(hdr[:len(hdr)-1]), " ")
	size, err := strconv.ParseInt(sizeStr, 10, 64)
	if !ok || err != nil || size < 0 || (typ != "blob" && typ != "tree" && typ != "commit" && typ != "tag") {
		return false
	}
	var h hash.Hash = sha256.New()
	if algo != "sha256" {
		h = sha1cd.New()
	}
	h.Write(hdr)
	if n, err := io.Copy(h, io.LimitReader(zb, size)); err != nil || n != size {
		return false
	}
	if _, err := zb.ReadByte(); err != io.EOF {
		return false // content longer than the header says, or a bad checksum
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return false // garbage after the compressed stream
	}
	var sum []byte
	if cr, ok := h.(sha1cd.CollisionResistantHash); ok {
		var collision bool
		if sum, collision = cr.CollisionResistantSum(nil); collision {
			return false
		}
	} else {
		sum = h.Sum(nil)
	}
	return hex.EncodeToString(sum) == name
}

// pack copies a pack from the quarantine into the repository with an
// index git builds afresh from wrun's copy (git index-pack hashes every
// object, SHA-1 with collision detection), so neither the child's own
// index nor its file is ever trusted. It returns why the pack was
// discarded, or "".
func (m *migration) pack(name string) (string, error) {
	q, root, algo := m.q, m.root, m.algo
	src, ok := openUntrusted(q, "pack/"+name)
	if !ok {
		return "not a regular file", nil
	}
	defer src.Close()
	size, ok := m.take(src, "pack/"+name)
	if !ok {
		return "", nil
	}
	if err := ensureDir(root, "objects/pack"); err != nil {
		return "", err
	}
	tmp := "objects/pack/tmp_wrun_" + randomID()
	defer root.Remove(tmp + ".pack")
	defer root.Remove(tmp + ".idx")
	dst, err := root.OpenFile(tmp+".pack", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return "", err
	}
	err = copyBounded(dst, src, size)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, errChanged) {
		return err.Error(), nil
	}
	if err != nil {
		return "", err
	}
	abs := filepath.Join(root.Name(), filepath.FromSlash(tmp))
	// Outside any repository (the working directory is /), so index-pack
	// neither reads the repository's config nor compares with objects
	// reachable through the quarantine itself.
	cmd := exec.Command("git", "index-pack", "--no-rev-index", "--object-format="+algo, "-o", abs+".idx", abs+".pack")
	cmd.Dir = "/"
	cmd.Env = gitFreeEnv(os.Environ())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return strings.TrimSpace(firstLine(stderr.String())), nil
		}
		return "", fmt.Errorf("running git index-pack: %w", err)
	}
	sum := strings.TrimSpace(stdout.String())
	if !isHex(sum) || (len(sum) != 40 && len(sum) != 64) {
		return "", fmt.Errorf("git index-pack printed %q, not a pack checksum", sum)
	}
	final := "objects/pack/pack-" + sum
	if _, err := root.Lstat(final + ".idx"); err == nil {
		return "", nil // the repository has this very pack
	}
	if err := root.Rename(tmp+".pack", final+".pack"); err != nil {
		return "", err
	}
	// A partial clone's pack from its promisor remote keeps that mark.
	if pf, ok := openUntrusted(q, "pack/"+strings.TrimSuffix(name, ".pack")+".promisor"); ok {
		b, _ := io.ReadAll(io.LimitReader(pf, 1<<20))
		pf.Close()
		if err := root.WriteFile(final+".promisor", b, 0o444); err != nil {
			return "", err
		}
	}
	// The index last: git finds packs by their index.
	return "", root.Rename(tmp+".idx", final+".idx")
}

// gitFreeEnv is env without the variables that point git elsewhere.
func gitFreeEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GIT_") {
			out = append(out, kv)
		}
	}
	return out
}

// editAlternates rewrites objects/info/alternates through fn, atomically.
// The caller holds the admin lock. An empty result removes the file.
func editAlternates(root *os.Root, fn func([]string) []string) error {
	b, err := root.ReadFile(alternatesFile)
	if err != nil && !isNotExist(err) {
		return err
	}
	old := splitLines(b)
	lines := fn(slices.Clone(old))
	if slices.Equal(lines, old) {
		return nil
	}
	if len(lines) == 0 {
		if err := root.Remove(alternatesFile); err != nil && !isNotExist(err) {
			return err
		}
		return nil
	}
	if err := ensureDir(root, "objects/info"); err != nil {
		return err
	}
	tmp := alternatesFile + ".wrun-" + randomID()
	if err := root.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	if err := root.Rename(tmp, alternatesFile); err != nil {
		root.Remove(tmp)
		return err
	}
	return nil
}

// adminLockWait bounds the wait for the admin lock: other runs hold it for
// milliseconds (seconds when they re-index a large pack), but a process a
// run left behind could take it on purpose and never let go.
const adminLockWait = 30 * time.Second

// adminLock takes the common dir's lock exclusively, waiting at most
// adminLockWait.
func adminLock(root *os.Root) (*os.File, error) {
	deadline := time.Now().Add(adminLockWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		f, err := lockDir(root, ".", syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return f, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s stayed locked for %v (by another wrun, or by a process one left running)", root.Name(), adminLockWait)
		}
		time.Sleep(pause)
	}
}

// lockDir opens the directory name below root and takes how
// (syscall.LOCK_SH or LOCK_EX, optionally | LOCK_NB) on it.
func lockDir(root *os.Root, name string, how int) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrPermission) && root.Chmod(name, 0o755) == nil {
		// The child may chmod what it wrote (Landlock does not restrict
		// chmod); the quarantine is the user's, as wrun is.
		f, err = root.OpenFile(name, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	}
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", filepath.Join(root.Name(), name), err)
	}
	return f, nil
}

// ensureDir makes sure name is a directory below root, not a symbolic link.
func ensureDir(root *os.Root, name string) error {
	err := root.Mkdir(name, 0o755)
	if err == nil || !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := root.Lstat(name)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", filepath.Join(root.Name(), name))
	}
	return nil
}

// readDirRoot lists a directory below root. A directory in a quarantine
// that the child made unreadable (Landlock does not restrict chmod) is made
// readable again first: it is the user's, as wrun is.
func readDirRoot(root *os.Root, name string) ([]os.DirEntry, error) {
	f, err := root.Open(name)
	if errors.Is(err, os.ErrPermission) && root.Chmod(name, 0o755) == nil {
		f, err = root.Open(name)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// removeAll removes name below root, making directories the child made
// unwritable or unreadable writable again on the way.
func removeAll(root *os.Root, name string) error {
	err := root.RemoveAll(name)
	if !errors.Is(err, os.ErrPermission) {
		return err
	}
	var fix func(string)
	fix = func(dir string) {
		if fi, err := root.Lstat(dir); err != nil || !fi.IsDir() {
			return
		}
		_ = root.Chmod(dir, 0o700)
		ents, _ := readDirRoot(root, dir)
		for _, e := range ents {
			fix(dir + "/" + e.Name())
		}
	}
	fix(name)
	return root.RemoveAll(name)
}

// objectFormat is the repository's hash algorithm, "sha1" or "sha256".
func objectFormat(root *os.Root) string {
	if v, ok := gitConfigValue(filepath.Join(root.Name(), "config"), "extensions", "objectformat"); ok && strings.EqualFold(v, "sha256") {
		return "sha256"
	}
	return "sha1"
}

// quarantineID checks that q is a quarantine of common and returns its ID.
func quarantineID(common, q string) (string, error) {
	id := filepath.Base(q)
	if filepath.Dir(q) != filepath.Join(common, quarantineDirName) || !validID(id) {
		return "", fmt.Errorf("%s is not a git quarantine of %s", q, common)
	}
	return id, nil
}

// validID accepts the names wrun gives quarantines: letters, digits, '-'
// and '_'.
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}

func splitLines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimRight(l, "\r"); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

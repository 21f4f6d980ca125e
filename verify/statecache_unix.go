//go:build unix

package verify

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// ErrStateInUse is returned for a key a live run holds.
var ErrStateInUse = errors.New("in use by a live run")

// StateUse is a run's hold on its key (see UseState).
type StateUse struct {
	root  string // ROOT, wrun's state directory
	key   string
	dirfd int      // ROOT/ws, reached without following links
	lock  *os.File // the key's lock, shared
	made  bool     // the key's directory did not exist when the run took it
	max   int64
}

// UseState holds key (the base name of verify.Input.StateDir) for a run
// under wrun's state directory root: it makes root and root/ws if they are
// missing, takes the key's lock (shared: runs with the same key may run
// together, and no key a run holds is removed), and records the run's use
// beside the key (rec: whose the key is; Created and LastUsed are filled
// in). max bounds the state of all keys (Done keeps to it). Call it before
// the run's state is made (verify.Prepare), and Done when the run ends.
func UseState(root, key string, rec StateRecord, max int64) (*StateUse, error) {
	if !validStateKey(key) {
		return nil, fmt.Errorf("state key %q is not one wrun makes", key)
	}
	if err := EnsureStateRoot(root); err != nil {
		return nil, err
	}
	dirfd, err := openStateDir(root, true)
	if err != nil {
		return nil, err
	}
	u := &StateUse{root: root, key: key, dirfd: dirfd, max: max}
	if u.lock, err = lockKey(dirfd, filepath.Join(root, "ws"), key, unix.LOCK_SH); err != nil {
		unix.Close(dirfd)
		return nil, fmt.Errorf("holding the private state %s: %w", key, err)
	}
	var st unix.Stat_t
	u.made = unix.Fstatat(dirfd, key, &st, unix.AT_SYMLINK_NOFOLLOW) != nil
	now := time.Now().UTC()
	old, ok := readRecordAt(dirfd, key)
	rec.Key, rec.LastUsed, rec.Created = key, now, now
	if ok && !u.made {
		rec.Created, rec.Size, rec.Measured = old.Created, old.Size, old.Measured
	}
	if err := writeRecordAt(dirfd, rec); err != nil {
		u.release()
		return nil, fmt.Errorf("recording the use of the private state %s: %w", key, err)
	}
	return u, nil
}

// Done measures the key's directory and records its size; then, when the
// run made the key or the keys were last measured more than
// stateEvictEvery ago, it measures every key and removes the least
// recently used ones not in use until all fit within the bound. It lets
// the key go, and returns the keys removed. A nil StateUse does nothing.
func (u *StateUse) Done() ([]string, error) {
	if u == nil || u.dirfd < 0 {
		return nil, nil // nothing held, or let go already
	}
	defer u.release()
	if rec, ok := readRecordAt(u.dirfd, u.key); ok {
		rec.Size, rec.Measured = diskUsageAt(u.dirfd, u.key), time.Now().UTC()
		if err := writeRecordAt(u.dirfd, rec); err != nil {
			return nil, fmt.Errorf("recording the size of the private state %s: %w", u.key, err)
		}
	}
	var st unix.Stat_t
	if !u.made && unix.Fstatat(u.dirfd, evictStamp, &st, unix.AT_SYMLINK_NOFOLLOW) == nil &&
		time.Since(time.Unix(st.Mtim.Unix())) < stateEvictEvery {
		return nil, nil
	}
	return evictAt(u.dirfd, filepath.Join(u.root, "ws"), u.max)
}

func (u *StateUse) release() {
	if u.lock != nil {
		u.lock.Close()
		u.lock = nil
	}
	if u.dirfd >= 0 {
		unix.Close(u.dirfd)
		u.dirfd = -1
	}
}

// evictStamp is touched in ROOT/ws each time every key is measured.
const evictStamp = ".measured"

// ListState lists every key under wrun's state directory root, measured
// now, least recently used first. A missing state directory has none.
func ListState(root string) ([]StateEntry, error) {
	dirfd, err := openStateDir(root, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	return listAt(dirfd, filepath.Join(root, "ws"))
}

// RemoveState removes key's private state and its record, unless a live
// run holds it (ErrStateInUse).
func RemoveState(root, key string) error {
	if !validStateKey(key) {
		return fmt.Errorf("%q is not a key of wrun's private state", key)
	}
	dirfd, err := openStateDir(root, false)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	var st unix.Stat_t
	if unix.Fstatat(dirfd, key, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return fmt.Errorf("%s: %w", key, os.ErrNotExist)
	}
	return removeKeyAt(dirfd, filepath.Join(root, "ws"), key)
}

// EvictState removes the least recently used keys not in use under root
// until the rest fit within max, and returns them.
func EvictState(root string, max int64) ([]string, error) {
	dirfd, err := openStateDir(root, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	return evictAt(dirfd, filepath.Join(root, "ws"), max)
}

// openStateDir opens ROOT/ws without following links, making it (0700)
// when make is set and it is missing.
func openStateDir(root string, make bool) (int, error) {
	rfd, err := openDirNoFollow(filepath.Clean(root))
	if err != nil {
		return -1, err
	}
	defer unix.Close(rfd)
	if make {
		if err := unix.Mkdirat(rfd, "ws", 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, fmt.Errorf("creating %s: %w", filepath.Join(root, "ws"), err)
		}
	}
	fd, err := unix.Openat(rfd, "ws", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return -1, os.ErrNotExist
	}
	if err != nil {
		return -1, fmt.Errorf("opening %s: %w", filepath.Join(root, "ws"), err)
	}
	return fd, nil
}

// lockKey opens KEY.lock in dirfd and locks it with how (LOCK_SH or
// LOCK_EX, with LOCK_NB or not), again if the file it locked was removed
// meanwhile (a key removed as it was taken).
func lockKey(dirfd int, dir, key string, how int) (*os.File, error) {
	name := key + ".lock"
	for range 8 {
		fd, err := unix.Openat(dirfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, err
		}
		f := os.NewFile(uintptr(fd), filepath.Join(dir, name))
		if err := unix.Flock(fd, how); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, ErrStateInUse
			}
			return nil, err
		}
		if stillNamed(dirfd, name, fd) {
			return f, nil
		}
		f.Close() // the key was removed as we took it: take the new one
	}
	return nil, fmt.Errorf("the lock of %s keeps being replaced", key)
}

// listAt lists and measures the keys in dirfd (ROOT/ws).
func listAt(dirfd int, dir string) ([]StateEntry, error) {
	names, err := readDirNames(dirfd)
	if err != nil {
		return nil, err
	}
	var out []StateEntry
	for _, n := range names {
		var st unix.Stat_t
		if !validStateKey(n) || unix.Fstatat(dirfd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		e := StateEntry{Path: filepath.Join(dir, n)}
		if rec, ok := readRecordAt(dirfd, n); ok {
			e.StateRecord, e.Recorded = rec, true
		}
		e.Key = n
		if !e.Recorded {
			e.LastUsed = time.Unix(st.Mtim.Unix()).UTC()
		}
		e.Size = diskUsageAt(dirfd, n)
		if lk, err := lockKey(dirfd, dir, n, unix.LOCK_EX|unix.LOCK_NB); err == nil {
			lk.Close()
		} else {
			e.InUse = true
		}
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b StateEntry) int { return a.LastUsed.Compare(b.LastUsed) })
	return out, nil
}

// evictAt measures every key in dirfd and removes what Evictions says,
// skipping a key a run took meanwhile.
func evictAt(dirfd int, dir string, max int64) ([]string, error) {
	keys, err := listAt(dirfd, dir)
	if err != nil {
		return nil, err
	}
	stamp, err := unix.Openat(dirfd, evictStamp, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err == nil {
		unix.Futimes(stamp, nil)
		unix.Close(stamp)
	}
	var removed []string
	var errs []error
	for _, k := range Evictions(keys, max) {
		switch err := removeKeyAt(dirfd, dir, k); {
		case err == nil:
			removed = append(removed, k)
		case errors.Is(err, ErrStateInUse):
		default:
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// removeKeyAt removes key's directory, record and lock, holding its lock
// exclusively (ErrStateInUse when a run holds it).
func removeKeyAt(dirfd int, dir, key string) error {
	lk, err := lockKey(dirfd, dir, key, unix.LOCK_EX|unix.LOCK_NB)
	if err != nil {
		return err
	}
	defer lk.Close()
	if err := removeAllAt(dirfd, key); err != nil {
		return fmt.Errorf("removing the private state %s: %w", filepath.Join(dir, key), err)
	}
	unix.Unlinkat(dirfd, key+".json", 0)
	// The lock goes too, while locked: a run that opened it meanwhile
	// sees it is no longer named and takes a new one (lockKey).
	unix.Unlinkat(dirfd, key+".lock", 0)
	return nil
}

// diskUsageAt is the disk space name in dirfd takes, blocks counted,
// following no link.
func diskUsageAt(dirfd int, name string) int64 {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return 0
	}
	n := int64(st.Blocks) * 512
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return n
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return n
	}
	defer unix.Close(fd)
	names, _ := readDirNames(fd)
	for _, c := range names {
		n += diskUsageAt(fd, c)
	}
	return n
}

// readRecordAt reads KEY.json in dirfd.
func readRecordAt(dirfd int, key string) (StateRecord, bool) {
	fd, err := unix.Openat(dirfd, key+".json", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return StateRecord{}, false
	}
	f := os.NewFile(uintptr(fd), key+".json")
	defer f.Close()
	var r StateRecord
	if err := json.NewDecoder(f).Decode(&r); err != nil || r.Key != key {
		return StateRecord{}, false
	}
	return r, true
}

// writeRecordAt replaces KEY.json in dirfd whole (a new file renamed over
// it).
func writeRecordAt(dirfd int, r StateRecord) error {
	b, err := encodeRecord(r)
	if err != nil {
		return err
	}
	var nonce [6]byte
	rand.Read(nonce[:])
	tmp := "." + r.Key + ".json." + hex.EncodeToString(nonce[:])
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dirfd, tmp, dirfd, r.Key+".json")
	}
	if err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
	}
	return err
}

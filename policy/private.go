package policy

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Files no other user may read.
//
// The child runs as the invoking user (as root: uid 0 without
// capabilities). The kernel then lets it read what every user may read,
// plus what it may read only because it is this user or in these groups: a
// root child still reads /etc/shadow (root's, mode 0640) and ssh host keys
// (0600). The second kind is hidden, found by the files' own permission
// bits when the plan is made, not by their names: a file whose mode lets
// its owner (the child) or its group (one of the child's) read it but not
// others; a directory others may not list or enter. Empty files are left
// alone (nothing to read, and the child cannot write them).

// ScanRoot is a tree searched, completely, for such files.
type ScanRoot struct {
	Path string
}

// Identity is who the child runs as, for the file permission checks.
type Identity struct {
	Uid  int
	Gids []int
}

// ScanRoots returns the trees searched for a child running as uid. As
// root, /etc, completely: it is the one system directory the child reads
// where private files live by design (/etc/shadow, ssh host keys, TLS
// private keys, stored network secrets), and a root child reads every
// file root owns whatever its mode. Nothing else is searched: the other
// readable system directories are assumed to hold nothing private
// (roots.go), and nothing outside them is readable at all. Another user's
// child reads in /etc only what that user may read anyway; a file of /etc
// readable through one of the user's groups (ssl-cert, shadow) stays so.
func ScanRoots(uid int) []ScanRoot {
	if uid != 0 {
		return nil
	}
	return []ScanRoot{{Path: "/etc"}}
}

// PrivateSearch is a search for private files (the holes Compute adds)
// started before Compute, so that it runs while the launch does other
// work: it is the largest single step of a launch as root.
type PrivateSearch struct {
	roots []ScanRoot
	id    Identity
	done  chan struct{}
	found []Hole
}

// StartPrivateSearch starts searching roots for the files only id may
// read, as Compute does for Host.Scan and Host.Identity. Give the result
// to one launch only (Host.Search), started just before it: what is
// hidden is what the search found then.
func StartPrivateSearch(roots []ScanRoot, id Identity) *PrivateSearch {
	s := &PrivateSearch{roots: slices.Clone(roots), id: Identity{Uid: id.Uid, Gids: slices.Clone(id.Gids)}, done: make(chan struct{})}
	if len(roots) == 0 {
		close(s.done) // nothing to search (not root)
		return s
	}
	go func() {
		defer close(s.done)
		s.found, _ = privateHoles(s.roots, s.id)
	}()
	return s
}

// holes waits for the search and returns what it found when it searched
// roots for id; otherwise (or with no search, s nil) it searches now.
func (s *PrivateSearch) holes(roots []ScanRoot, id Identity) []Hole {
	if s != nil && slices.Equal(s.roots, roots) && s.id.Uid == id.Uid && slices.Equal(s.id.Gids, id.Gids) {
		<-s.done
		return slices.Clone(s.found)
	}
	holes, _ := privateHoles(roots, id)
	return holes
}

// entryKind is what a directory entry is, as far as the search cares.
type entryKind uint8

const (
	kindUnknown entryKind = iota // the entry does not say: stat it
	kindDir
	kindRegular
	kindSymlink
	kindOther // devices, sockets, FIFOs
)

// scanEntry is one entry of a directory being searched.
type scanEntry struct {
	name string
	kind entryKind
}

// scanDir is a directory open for the search (listDir): its entries are
// stat'ed relative to it, one path component each.
type scanDir interface {
	stat(name string) (fileStat, bool)
	close()
}

// ScanStats says what a scan cost.
type ScanStats struct {
	Entries, Dirs int
	Elapsed       time.Duration
}

// scanWorkers is how many goroutines search at once: the search is one
// fstatat per entry, system calls that a second core runs as fast, and it
// runs at every launch of root's.
const scanWorkers = 2

// privateHoles finds, in roots, what id may read and other users may not,
// searching each completely (no bound: what is hidden must not depend on
// where a search stopped). The directories are shared out among
// scanWorkers goroutines; the holes come sorted by path.
func privateHoles(roots []ScanRoot, id Identity) ([]Hole, ScanStats) {
	start := time.Now()
	sc := &scan{id: id}
	sc.more = sync.NewCond(&sc.mu)
	for _, r := range roots {
		p, err := filepath.EvalSymlinks(r.Path)
		if err != nil || slices.Contains(sc.roots, p) {
			continue
		}
		sc.roots = append(sc.roots, p)
	}
	for _, r := range sc.roots {
		sc.push(r)
	}
	var wg sync.WaitGroup
	results := make([]scanResult, scanWorkers)
	for w := range scanWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[w] = sc.work()
		}()
	}
	wg.Wait()
	var st ScanStats
	var holes []Hole
	for _, r := range results {
		holes = append(holes, r.holes...)
		st.Entries += r.entries
		st.Dirs += r.dirs
	}
	slices.SortFunc(holes, func(a, b Hole) int { return strings.Compare(a.Path, b.Path) })
	st.Elapsed = time.Since(start)
	return holes, st
}

// scan is one search: the directories still to list, shared by the
// workers.
type scan struct {
	id      Identity
	roots   []string
	mu      sync.Mutex
	more    *sync.Cond
	queue   []string
	pending int // directories queued or being listed
}

// scanResult is what one worker found.
type scanResult struct {
	holes         []Hole
	entries, dirs int
}

func (sc *scan) push(dir string) {
	sc.mu.Lock()
	sc.queue = append(sc.queue, dir)
	sc.pending++
	sc.mu.Unlock()
	sc.more.Signal()
}

// pop takes a directory to list; false when the search is over.
func (sc *scan) pop() (string, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for len(sc.queue) == 0 && sc.pending > 0 {
		sc.more.Wait()
	}
	if len(sc.queue) == 0 {
		return "", false
	}
	dir := sc.queue[len(sc.queue)-1]
	sc.queue = sc.queue[:len(sc.queue)-1]
	return dir, true
}

func (sc *scan) finished() {
	sc.mu.Lock()
	sc.pending--
	done := sc.pending == 0
	sc.mu.Unlock()
	if done {
		sc.more.Broadcast()
	}
}

// work lists directories until none is left, judging each entry by its
// mode: a file whose owner class (the child is its owner) or group class
// (one of the child's groups) may read it while others may not, and a
// directory others may not list or enter, are holes; other directories
// the child may enter are searched in turn.
func (sc *scan) work() scanResult {
	var res scanResult
	why := func(fi fileStat) string {
		return fmt.Sprintf("no other user may read it (mode %#o): only its owner or group can, and the child runs as them", fi.perm)
	}
	// One buffer for every getdents64 call and one slice of entries for
	// every directory: the search allocates little.
	buf := make([]byte, 32<<10)
	var ents []scanEntry
	for {
		dir, ok := sc.pop()
		if !ok {
			return res
		}
		d, list, err := listDir(dir, buf, ents)
		if err != nil {
			sc.finished()
			continue
		}
		ents = list
		res.dirs++
		res.entries += len(ents)
		for _, e := range ents {
			var fi fileStat
			statted := false
			if e.kind == kindUnknown {
				// The file system does not say in the entry.
				if fi, statted = d.stat(e.name); !statted {
					continue
				}
				e.kind = fi.kind
			}
			if e.kind != kindDir && e.kind != kindRegular {
				continue // links are judged where they lead; devices, sockets, FIFOs store nothing
			}
			if !statted {
				var ok bool
				if fi, ok = d.stat(e.name); !ok {
					continue
				}
			}
			// Replaced since it was listed: judged by what it is now.
			isDir := fi.kind == kindDir
			if !isDir && fi.kind != kindRegular {
				continue
			}
			class := sc.id.class(fi.uid, fi.gid) // the child's permission bits
			mine := fi.perm >> class & 0o7
			other := fi.perm & 0o7
			if isDir {
				full := joinName(dir, e.name)
				if slices.Contains(sc.roots, full) {
					continue // another root, searched on its own
				}
				// Others cannot list or enter it, the child can.
				if class != 0 && mine&0o5 != 0 && other&0o5 != 0o5 {
					res.holes = append(res.holes, Hole{Path: full, Withheld: All &^ ReadDir, Why: why(fi)})
					continue
				}
				if mine&0o1 != 0 {
					sc.push(full)
				}
				continue
			}
			if class != 0 && mine&0o4 != 0 && other&0o4 == 0 && fi.size > 0 {
				res.holes = append(res.holes, Hole{Path: joinName(dir, e.name), Withheld: All &^ ReadDir, Why: why(fi)})
			}
		}
		d.close()
		sc.finished()
	}
}

// joinName is filepath.Join for a clean directory and one name, without
// cleaning the result again.
func joinName(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// class returns the shift of the permission bits that apply to id for a
// file owned by uid and gid: 6 (owner), 3 (group) or 0 (others). The
// child has no capabilities, so none of them is bypassed.
func (id Identity) class(uid, gid int) uint {
	switch {
	case uid == id.Uid:
		return 6
	case slices.Contains(id.Gids, gid):
		return 3
	}
	return 0
}

package policy

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

// ScanRoot is a tree searched for such files.
type ScanRoot struct {
	Path string
	// Depth is how many levels below Path are searched: 1 searches Path's
	// entries only; 0 has no limit.
	Depth int
	// FilesOnly leaves directories alone (temporary directories, where
	// programs hand each other files in directories of their own).
	FilesOnly bool
}

// Identity is who the child runs as, for the file permission checks.
type Identity struct {
	Uid  int
	Gids []int
}

// ScanRoots returns the trees searched for a child running as uid: as
// root, the system's configuration and state (/etc, /var, /run, /srv,
// /boot); as anyone, the shared temporary directories, where the files
// found are the user's own (a Kerberos ticket cache in /tmp, mail).
func ScanRoots(uid int) []ScanRoot {
	common := []ScanRoot{
		{Path: "/tmp", Depth: 1, FilesOnly: true},
		{Path: "/var/tmp", Depth: 1, FilesOnly: true},
		{Path: "/dev/shm", Depth: 1, FilesOnly: true},
	}
	if uid != 0 {
		return append(common, ScanRoot{Path: "/var/mail", Depth: 1}, ScanRoot{Path: "/run/user", Depth: 1})
	}
	// /var is searched three levels deep (/var/lib/X/Y, /var/cache/X/Y):
	// below that lie package databases and caches by the thousand, and
	// the search runs at every launch.
	return append(common,
		ScanRoot{Path: "/etc"}, ScanRoot{Path: "/var", Depth: 3}, ScanRoot{Path: "/run"},
		ScanRoot{Path: "/srv", Depth: 3}, ScanRoot{Path: "/boot", Depth: 2})
}

// ScanBudget bounds the entries one plan examines (the scan runs at every
// launch). When it runs out, the directories not yet searched are hidden
// whole (fail closed), and a note says so.
var ScanBudget = 20000

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
	Exhausted     bool
}

// privateHoles finds, in roots, what id may read and other users may not.
// The roots are searched at once, each by a goroutine of its own (the
// search runs at every launch, while the stage waits for the plan, and a
// second core is usually idle then); their holes come in the order of
// the roots, each root's in its search's order. budget bounds the entries
// examined in all roots together: where it runs out, the directories not
// yet searched are hidden whole, and the roots are searched again one
// after another, so that where it ran out does not depend on timing.
func privateHoles(roots []ScanRoot, id Identity, budget int) ([]Hole, ScanStats, []string) {
	start := time.Now()
	var st ScanStats
	var holes []Hole
	var notes []string
	// A root inside another is searched on its own terms (/var/tmp in /var).
	var real []ScanRoot
	for _, r := range roots {
		p, err := filepath.EvalSymlinks(r.Path)
		if err != nil {
			continue
		}
		r.Path = p
		real = append(real, r)
	}
	results := make([]rootScan, len(real))
	var used atomic.Int64
	var wg sync.WaitGroup
	for ri, r := range real {
		if ri > 0 && slices.ContainsFunc(real[:ri], func(o ScanRoot) bool { return o.Path == r.Path }) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[ri] = scanRoot(real, ri, id, &used, int64(budget))
		}()
	}
	wg.Wait()
	if slices.ContainsFunc(results, func(r rootScan) bool { return r.exhausted }) {
		// Where the budget ran out depended on how the searches
		// interleaved: search again one root after another, so that the
		// same machine always gives the same holes.
		used.Store(0)
		for ri := range real {
			if results[ri].entries == 0 && results[ri].dirs == 0 && !results[ri].exhausted {
				continue // a duplicate root (or one that cannot be listed)
			}
			results[ri] = scanRoot(real, ri, id, &used, int64(budget))
		}
	}
	for _, r := range results {
		holes = append(holes, r.holes...)
		st.Entries += r.entries
		st.Dirs += r.dirs
		st.Exhausted = st.Exhausted || r.exhausted
	}
	if st.Exhausted {
		notes = append(notes, fmt.Sprintf("the search for files no other user may read stopped after %d entries: the directories it did not reach are hidden whole", budget))
	}
	st.Elapsed = time.Since(start)
	return holes, st, notes
}

// rootScan is what the search of one root found.
type rootScan struct {
	holes         []Hole
	entries, dirs int
	exhausted     bool
}

// scanRoot searches roots[ri] breadth first, counting the entries it
// examines in used, and stops where used reaches budget.
func scanRoot(roots []ScanRoot, ri int, id Identity, used *atomic.Int64, budget int64) rootScan {
	r := roots[ri]
	var res rootScan
	// Another root met in the search is left to its own (dirs only: a
	// root is a directory).
	isRoot := func(p string) bool {
		for i, o := range roots {
			if i != ri && o.Path == p {
				return true
			}
		}
		return false
	}
	type item struct {
		path  string
		depth int
	}
	why := func(fi fileStat) string {
		return fmt.Sprintf("no other user may read it (mode %#o): only its owner or group can, and the child runs as them", fi.perm)
	}
	// One buffer for every getdents64 call and one slice of entries for
	// every directory: the search allocates little.
	buf := make([]byte, 32<<10)
	var ents []scanEntry
	queue := []item{{r.Path, 0}}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		if used.Load() >= budget {
			res.exhausted = true
			res.holes = append(res.holes, Hole{Path: it.path, Withheld: All &^ ReadDir,
				Why: "not searched for files no other user may read (the search's budget ran out)"})
			continue
		}
		d, list, err := listDir(it.path, buf, ents)
		if err != nil {
			continue
		}
		ents = list
		res.dirs++
		res.entries += len(ents)
		used.Add(int64(len(ents)))
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
			if e.kind == kindSymlink {
				continue // the target is judged where it lies
			}
			isDir := e.kind == kindDir
			if isDir && r.FilesOnly {
				continue
			}
			if !isDir && e.kind != kindRegular {
				continue // devices, sockets, FIFOs: nothing stored to read
			}
			if !statted {
				var ok bool
				if fi, ok = d.stat(e.name); !ok {
					continue
				}
			}
			if fi.kind != e.kind {
				// Replaced since it was listed: judged by what it is now.
				isDir = fi.kind == kindDir
				if isDir && r.FilesOnly || !isDir && fi.kind != kindRegular {
					continue
				}
			}
			perm := fi.perm
			class := id.class(fi.uid, fi.gid) // the child's permission bits
			mine := perm >> class & 0o7
			other := perm & 0o7
			if isDir {
				full := joinName(it.path, e.name)
				if isRoot(full) {
					continue
				}
				// Others cannot list or enter it, the child can.
				if class != 0 && mine&0o5 != 0 && other&0o5 != 0o5 {
					res.holes = append(res.holes, Hole{Path: full, Withheld: All &^ ReadDir, Why: why(fi)})
					continue
				}
				if mine&0o1 != 0 && (r.Depth == 0 || it.depth+1 < r.Depth) {
					queue = append(queue, item{full, it.depth + 1})
				}
				continue
			}
			if class != 0 && mine&0o4 != 0 && other&0o4 == 0 && fi.size > 0 {
				res.holes = append(res.holes, Hole{Path: joinName(it.path, e.name), Withheld: All &^ ReadDir, Why: why(fi)})
			}
		}
		d.close()
	}
	return res
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

package policy

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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

// ScanStats says what a scan cost.
type ScanStats struct {
	Entries, Dirs int
	Elapsed       time.Duration
	Exhausted     bool
}

// privateHoles finds, in roots, what id may read and other users may not.
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
	isRoot := func(p string, except int) bool {
		for i, r := range real {
			if i != except && r.Path == p {
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
	for ri, r := range real {
		if ri > 0 && slices.ContainsFunc(real[:ri], func(o ScanRoot) bool { return o.Path == r.Path }) {
			continue
		}
		queue := []item{{r.Path, 0}}
		for len(queue) > 0 {
			it := queue[0]
			queue = queue[1:]
			if st.Entries >= budget {
				st.Exhausted = true
				holes = append(holes, Hole{Path: it.path, Withheld: All &^ ReadDir,
					Why: "not searched for files no other user may read (the search's budget ran out)"})
				continue
			}
			f, err := os.Open(it.path)
			if err != nil {
				continue
			}
			ents, err := f.ReadDir(-1)
			if err != nil && len(ents) == 0 {
				f.Close()
				continue
			}
			st.Dirs++
			for _, e := range ents {
				st.Entries++
				if e.Type()&fs.ModeSymlink != 0 {
					continue // the target is judged where it lies
				}
				full := filepath.Join(it.path, e.Name())
				isDir := e.IsDir()
				if isDir && r.FilesOnly {
					continue
				}
				if !isDir && !e.Type().IsRegular() {
					continue // devices, sockets, FIFOs: nothing stored to read
				}
				if isRoot(full, ri) {
					continue
				}
				fi, ok := statAt(f, e.Name())
				if !ok {
					continue
				}
				perm := fi.perm
				class := id.class(fi.uid, fi.gid) // the child's permission bits
				mine := perm >> class & 0o7
				other := perm & 0o7
				if isDir {
					// Others cannot list or enter it, the child can.
					if class != 0 && mine&0o5 != 0 && other&0o5 != 0o5 {
						holes = append(holes, Hole{Path: full, Withheld: All &^ ReadDir, Why: why(fi)})
						continue
					}
					if mine&0o1 != 0 && (r.Depth == 0 || it.depth+1 < r.Depth) {
						queue = append(queue, item{full, it.depth + 1})
					}
					continue
				}
				if class != 0 && mine&0o4 != 0 && other&0o4 == 0 && fi.size > 0 {
					holes = append(holes, Hole{Path: full, Withheld: All &^ ReadDir, Why: why(fi)})
				}
			}
			f.Close()
		}
	}
	if st.Exhausted {
		notes = append(notes, fmt.Sprintf("the search for files no other user may read stopped after %d entries: the directories it did not reach are hidden whole", budget))
	}
	st.Elapsed = time.Since(start)
	return holes, st, notes
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

//go:build linux

package policy

import (
	"io/fs"
	"os"
	"slices"
	"testing"
)

// TestListDirMatchesReadDir checks the search's own directory reader
// against os.ReadDir on real directories with every kind of entry (and
// with a getdents64 buffer small enough to need several calls).
func TestListDirMatchesReadDir(t *testing.T) {
	for _, dir := range []string{"/etc", "/dev", "/proc/self", t.TempDir()} {
		for _, size := range []int{32 << 10, 512} {
			des, err := os.ReadDir(dir)
			if err != nil {
				t.Skipf("%s: %v", dir, err)
			}
			d, ents, err := listDir(dir, make([]byte, size), nil)
			if err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			var want, got []string
			for _, e := range des {
				k := "other"
				switch t := e.Type(); {
				case t&fs.ModeSymlink != 0:
					k = "link"
				case t.IsDir():
					k = "dir"
				case t.IsRegular():
					k = "file"
				}
				want = append(want, e.Name()+" "+k)
			}
			for _, e := range ents {
				k := map[entryKind]string{kindDir: "dir", kindRegular: "file", kindSymlink: "link", kindOther: "other"}[e.kind]
				if e.kind == kindUnknown {
					fi, ok := d.stat(e.name)
					if !ok {
						continue
					}
					k = map[entryKind]string{kindDir: "dir", kindRegular: "file", kindSymlink: "link", kindOther: "other"}[fi.kind]
				}
				got = append(got, e.name+" "+k)
			}
			d.close()
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s (buffer %d): listDir\n%q\nos.ReadDir\n%q", dir, size, got, want)
			}
		}
	}
}

//go:build !linux

package policy

import (
	"io/fs"
	"os"
)

// osDir is a directory open for the search, through os.File.
type osDir struct{ f *os.File }

// listDir opens path and reads its entries into ents (reused); buf is
// unused here.
func listDir(path string, _ []byte, ents []scanEntry) (scanDir, []scanEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	des, err := f.ReadDir(-1)
	if err != nil && len(des) == 0 {
		f.Close()
		return nil, nil, err
	}
	ents = ents[:0]
	for _, e := range des {
		k := kindOther
		switch t := e.Type(); {
		case t&fs.ModeSymlink != 0:
			k = kindSymlink
		case t.IsDir():
			k = kindDir
		case t.IsRegular():
			k = kindRegular
		}
		ents = append(ents, scanEntry{name: e.Name(), kind: k})
	}
	return osDir{f}, ents, nil
}

func (d osDir) stat(name string) (fileStat, bool) { return statAt(int(d.f.Fd()), name) }

func (d osDir) close() { d.f.Close() }

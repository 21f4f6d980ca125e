//go:build !unix

package verify

import "os"

// TempDir is a run's private temp dir, held until Close.
type TempDir struct {
	// Path is the directory, absolute.
	Path string
	// Stable is set when Path is the same for the next run (never here).
	Stable bool
}

// OpenTempDir makes a temp dir of this run only.
func OpenTempDir(string) (*TempDir, error) {
	dir, err := os.MkdirTemp("", "wrun-")
	if err != nil {
		return nil, err
	}
	return &TempDir{Path: dir}, nil
}

// Close removes the temp dir.
func (t *TempDir) Close() error { return os.RemoveAll(t.Path) }

// Keep leaves the temp dir in place.
func (t *TempDir) Keep() {}

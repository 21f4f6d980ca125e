package darwin

import (
	"os"
	"path/filepath"
)

// ResolveExisting resolves the symbolic links of path's longest existing
// prefix and keeps the rest as it is: a path wrun will create still gets
// the name the sandbox will match once it exists. It reads the disk but
// calls nothing specific to macOS.
func ResolveExisting(path string) string {
	path = filepath.Clean(path)
	rest := ""
	for cur := path; ; cur = filepath.Dir(cur) {
		if _, err := os.Lstat(cur); err == nil {
			if r, err := filepath.EvalSymlinks(cur); err == nil {
				return filepath.Join(r, rest)
			}
			return path
		}
		if cur == "/" || cur == "." {
			return path
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

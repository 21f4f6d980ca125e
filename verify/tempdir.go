package verify

import (
	"path/filepath"
	"strings"
)

// tempRootPrefix starts the name of the per-user directory that holds the
// private temp dirs of a user's runs ($TMPDIR/wrun-UID).
const tempRootPrefix = "wrun-"

// TempRoot returns the directory holding tempDir and the private temp
// dirs of the user's other runs (wrun-UID, see OpenTempDir) when tempDir
// is one of its slots, "" otherwise. A run's child must read its own temp
// dir only: a secret another run was allowed and copied into its own temp
// dir would otherwise be read by every other sandbox of the same user.
func TempRoot(tempDir string) string {
	if tempDir == "" {
		return ""
	}
	dir := filepath.Dir(filepath.Clean(tempDir))
	uid, ok := strings.CutPrefix(filepath.Base(dir), tempRootPrefix)
	if !ok || uid == "" || strings.Trim(uid, "0123456789") != "" {
		return ""
	}
	return dir
}

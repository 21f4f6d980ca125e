package darwin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ShapeKey names the shape of a profile for the compile check: its text
// with the run's tag taken out (the only part that changes from run to
// run of one grant in one workspace), and the macOS build that compiles
// it. Whether sandbox-exec accepts a profile depends on nothing else: the
// parameters are strings it substitutes, whatever their values.
func ShapeKey(text, runID, osBuild string) string {
	h := sha256.New()
	h.Write([]byte(strings.ReplaceAll(text, Tag(runID), "wrun-RUNID")))
	h.Write([]byte{0})
	h.Write([]byte(osBuild))
	return hex.EncodeToString(h.Sum(nil))
}

// shapeDir is where the shapes sandbox-exec accepted are recorded, in
// wrun's state directory (which no sandboxed run may write: policy
// protects it wherever a grant reaches it).
func shapeDir(stateDir string) string { return filepath.Join(stateDir, "seatbelt-shapes") }

// compiledBefore reports whether a profile of shape key was accepted on
// this Mac before. A record that is missing, or anything but a regular
// file, means no. A forged record could only skip the check, never the
// profile: sandbox-exec still refuses a profile it cannot compile, and
// the command then does not run.
func compiledBefore(stateDir, key string) bool {
	if stateDir == "" {
		return false
	}
	fi, err := os.Lstat(filepath.Join(shapeDir(stateDir), key))
	return err == nil && fi.Mode().IsRegular()
}

// recordCompiled records that a profile of shape key was accepted.
func recordCompiled(stateDir, key string) error {
	if stateDir == "" {
		return nil
	}
	dir := shapeDir(stateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("recording a checked profile: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, key), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("recording a checked profile: %w", err)
	}
	return f.Close()
}

package verify

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/wrun-dev/wrun/internal/envlist"
)

// A push the git shim or the refusing remote helper refused is reported
// by them, not only printed: the command may send git's stderr to
// /dev/null, and then nothing in its output says why the push failed. Each
// refusal leaves a file in the git shim's directory (PushReportDir of the
// run's private temp dir), which wrun reads after the run
// (ReadPushRefusals) and turns into a git-push denial.
//
// The shim and the helper run inside the sandbox, as the command's own
// descendants: anything they can write the command can write, and it can
// write their memory too (it is their ancestor, in the same Landlock
// domain). No channel from them can be unforgeable. What wrun reads is
// therefore held to the one thing they say: a push to a destination was
// refused. A file the command made itself says no more than a real `git
// push` refused by the helper would, which the command can always cause:
// wrun reads at most maxPushReports files of at most maxPushReport bytes,
// regular files only, keeps the destination's printable characters, and
// asks for nothing else from them. The command can also keep a report
// from being made (as it can keep from pushing); it cannot make wrun
// report anything but a refused push.

// EnvGitReport names the directory where the shim and the helper record
// a refused push (PushReportDir).
const EnvGitReport = "WRUN_GIT_REPORT"

const (
	maxPushReports = 16
	maxPushReport  = 1024
)

// PushReportDir is where the refused pushes of a run whose git shim
// lies in shimDir are recorded.
func PushReportDir(shimDir string) string { return filepath.Join(shimDir, "refused") }

// RecordPushRefusal records, for wrun, that a push to dest was refused,
// in the directory env's EnvGitReport names; it does nothing without one.
// It never fails the refusal itself: a report that cannot be written is
// only missing.
func RecordPushRefusal(env []string, dest string) {
	dir, _ := envlist.Lookup(env, EnvGitReport)
	if !filepath.IsAbs(dir) {
		return
	}
	if len(dest) > maxPushReport {
		dest = dest[:maxPushReport]
	}
	name := filepath.Join(dir, "push-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) // O_EXCL: no link followed
	if err != nil {
		return
	}
	_, _ = f.WriteString(dest)
	_ = f.Close()
}

// ReadPushRefusals returns the destinations of the pushes refused in the
// run whose preparation steps are prep (its git shim's, if any), at most
// maxPushReports, each as the shim or helper recorded it with its
// unprintable characters dropped ("" for a push that named none).
func ReadPushRefusals(prep []Step) ([]string, error) {
	dir := ""
	for _, st := range prep {
		if st.Kind == StepGitShim {
			dir = PushReportDir(st.Dir)
		}
	}
	if dir == "" {
		return nil, nil
	}
	root, err := os.OpenRoot(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the refused pushes: %w", err)
	}
	defer root.Close()
	ents, err := readDirRoot(root, ".")
	if err != nil {
		return nil, fmt.Errorf("reading the refused pushes: %w", err)
	}
	var out []string
	for _, e := range ents {
		if len(out) == maxPushReports {
			break
		}
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), "push-") {
			continue
		}
		f, ok := openUntrusted(root, e.Name())
		if !ok {
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(f, maxPushReport))
		f.Close()
		out = append(out, strings.Map(func(r rune) rune {
			if unicode.IsPrint(r) && r != unicode.ReplacementChar {
				return r
			}
			return -1
		}, string(b)))
	}
	return out, nil
}

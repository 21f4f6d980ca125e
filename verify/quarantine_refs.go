package verify

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// Refs the child wrote must name objects the repository has once its
// quarantine is settled. Under verify the child writes the loose refs
// under writableRefDirs in place (a fetch updates them); one that names
// an object the quarantine held but wrun refused, or that the child never
// wrote at all, or that is not a ref, breaks every later plain git log
// --all, git gc and git fetch ("fatal: bad object"). So when a quarantine
// opens, wrun notes beside it (wrun-quarantine/ID.refs, where the child
// cannot write) the loose refs there; when it is settled, every ref that
// changed and names no object the repository has is restored to what it
// was, or removed when it is new (a packed ref of that name shows again).
// A later run settles what a killed one left, snapshot included.

// writableRefDirs are the ref directories verify lets the child write
// (gitScope): those a fetch updates.
var writableRefDirs = []string{"refs/remotes", "refs/tags"}

// Bounds on the snapshot: a ref beyond them is taken as new (removed, not
// restored, if it names nothing).
const (
	maxSnapshotRefs = 100000
	maxRefFile      = 4096
)

// refSnapshot is the loose refs under writableRefDirs: name -> content.
type refSnapshot struct {
	Refs     map[string]string `json:"refs"`
	Complete bool              `json:"complete"`
}

func refsSnapshotName(id string) string { return quarantineDirName + "/" + id + ".refs" }

// readLooseRefs reads the loose refs under writableRefDirs (regular files
// only, lock files left out, each up to maxRefFile bytes), following no
// link; complete is false when the bound stopped it.
func readLooseRefs(root *os.Root) refSnapshot {
	s := refSnapshot{Refs: map[string]string{}, Complete: true}
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if depth > 32 || !s.Complete {
			s.Complete = false
			return
		}
		ents, err := readDirRoot(root, dir)
		if err != nil {
			return
		}
		for _, e := range ents {
			name := dir + "/" + e.Name()
			switch {
			case e.IsDir():
				walk(name, depth+1)
			case e.Type().IsRegular() && !strings.HasSuffix(e.Name(), ".lock"):
				if len(s.Refs) >= maxSnapshotRefs {
					s.Complete = false
					return
				}
				f, ok := openUntrusted(root, name)
				if !ok {
					continue
				}
				b, _ := io.ReadAll(io.LimitReader(f, maxRefFile+1))
				f.Close()
				s.Refs[name] = string(b)
			}
		}
	}
	for _, d := range writableRefDirs {
		walk(d, 0)
	}
	return s
}

// saveRefSnapshot notes the loose refs beside quarantine id. The caller
// holds the admin lock.
func saveRefSnapshot(root *os.Root, id string) error {
	b, err := json.Marshal(readLooseRefs(root))
	if err != nil {
		return err
	}
	name := refsSnapshotName(id)
	tmp := name + ".wrun-" + randomID()
	if err := root.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := root.Rename(tmp, name); err != nil {
		root.Remove(tmp)
		return err
	}
	return nil
}

// repairRefs restores or removes the refs that changed since quarantine
// id's snapshot and name no object the repository has; then it removes the
// snapshot. Run it once the quarantine is no longer an alternate, so that
// only what the repository itself holds counts. The caller holds the admin
// lock. A quarantine without a snapshot (of an older wrun) is left as is.
func repairRefs(root *os.Root, id, algo string) []error {
	name := refsSnapshotName(id)
	b, err := root.ReadFile(name)
	if isNotExist(err) {
		return nil
	}
	if err != nil {
		return []error{fmt.Errorf("reading the refs noted before the run: %w", err)}
	}
	var before refSnapshot
	if err := json.Unmarshal(b, &before); err != nil {
		before = refSnapshot{} // unreadable: every ref counts as new
	}
	now := readLooseRefs(root)
	var changed []string
	for ref, v := range now.Refs {
		if old, ok := before.Refs[ref]; !ok || old != v {
			changed = append(changed, ref)
		}
	}
	sort.Strings(changed)
	hexLen := 40
	if algo == "sha256" {
		hexLen = 64
	}
	// What each changed ref names: a symbolic ref is left to git (a
	// broken one is ignored); a hash must be an object the repository has.
	var ask []string
	bad := map[string]string{} // ref -> why
	for _, ref := range changed {
		v := strings.TrimRight(now.Refs[ref], "\n")
		switch {
		case strings.HasPrefix(v, "ref: "):
		case len(v) == hexLen && isHex(v):
			ask = append(ask, v)
		default:
			bad[ref] = "not a ref"
		}
	}
	missing, err := missingObjects(root, algo, ask)
	if err != nil {
		return []error{fmt.Errorf("checking the refs the run wrote (left as they are): %w", err)}
	}
	for _, ref := range changed {
		if missing[strings.TrimRight(now.Refs[ref], "\n")] {
			bad[ref] = "names an object the repository does not have"
		}
	}
	var done, errs []string
	for _, ref := range changed {
		why, ok := bad[ref]
		if !ok {
			continue
		}
		if old, had := before.Refs[ref]; had {
			tmp := ref + ".wrun-" + randomID()
			err = root.WriteFile(tmp, []byte(old), 0o644)
			if err == nil {
				err = root.Rename(tmp, ref)
			}
			if err != nil {
				root.Remove(tmp)
				errs = append(errs, ref+": "+err.Error())
				continue
			}
			done = append(done, ref+" ("+why+"; restored)")
			continue
		}
		if err := root.Remove(ref); err != nil && !isNotExist(err) {
			errs = append(errs, ref+": "+err.Error())
			continue
		}
		done = append(done, ref+" ("+why+"; removed)")
	}
	var out []error
	if len(done) > 0 {
		out = append(out, Notice(fmt.Sprintf("%d ref(s) the run wrote named no object the repository has after its quarantine was settled, and would break git log --all, git gc and git fetch: %s",
			len(done), strings.Join(done, ", "))))
	}
	if len(errs) > 0 {
		out = append(out, fmt.Errorf("repairing refs the run wrote: %s", strings.Join(errs, "; ")))
		return out // the snapshot stays, so that a later run tries again
	}
	if err := root.Remove(name); err != nil && !isNotExist(err) {
		out = append(out, fmt.Errorf("removing the refs noted before the run: %w", err))
	}
	return out
}

// missingObjects says which of hashes the repository (the common dir
// root) has no object for, asking git cat-file --batch-check once, with
// no lazy fetch from a promisor remote.
func missingObjects(root *os.Root, algo string, hashes []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(hashes) == 0 {
		return out, nil
	}
	cmd := exec.Command("git", "--git-dir="+root.Name(), "cat-file", "--batch-check=%(objectname)")
	cmd.Dir = "/"
	cmd.Env = append(gitFreeEnv(os.Environ()), "GIT_NO_LAZY_FETCH=1", "GIT_CONFIG_NOSYSTEM=1")
	cmd.Stdin = strings.NewReader(strings.Join(hashes, "\n") + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("git cat-file: %s", strings.TrimSpace(firstLine(stderr.String())))
		}
		return nil, fmt.Errorf("running git cat-file: %w", err)
	}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if h, ok := strings.CutSuffix(sc.Text(), " missing"); ok {
			out[h] = true
		}
	}
	return out, nil
}

// snapshotIDs are the quarantines whose snapshot is still beside them.
func snapshotIDs(root *os.Root) []string {
	var out []string
	ents, err := readDirRoot(root, quarantineDirName)
	if err != nil {
		return nil
	}
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".refs"); ok && e.Type().IsRegular() && validID(id) {
			out = append(out, id)
		}
	}
	return out
}

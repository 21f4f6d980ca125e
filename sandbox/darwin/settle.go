package darwin

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/wrun-dev/wrun/policy"
)

// Settle returns p with its rules as they hold on this disk, as the Linux
// backend installs them: a rule whose path is missing, or is reached from
// its Beneath directory through a symbolic link (planted in the
// workspace, it would redirect the grant; a Seatbelt rule names the
// resolved path), gets no rule when it is optional, and is an error
// otherwise; a NoFollow rule on a symbolic link gets none (the link's
// target has rules of its own). A rule wrun creates before the run
// (Create) may be missing. The skipped paths are returned; p is not
// changed. lstat is os.Lstat outside tests.
func Settle(p *policy.Policy, lstat func(string) (fs.FileInfo, error)) (*policy.Policy, []string, error) {
	c := *p
	c.Rules = nil
	var skipped []string
	for _, r := range p.Rules {
		err := reach(r, lstat)
		switch {
		case err == nil:
			c.Rules = append(c.Rules, r)
		case errors.Is(err, errSkip) || r.Optional:
			skipped = append(skipped, r.Path)
		default:
			return nil, nil, fmt.Errorf("sandbox rule for %s: %w", r.Path, err)
		}
	}
	return &c, skipped, nil
}

// errSkip marks a rule that holds nothing: a NoFollow rule on a link.
var errSkip = errors.New("a symbolic link: no rule")

// reach checks that r.Path can be reached as the rule requires.
func reach(r policy.Rule, lstat func(string) (fs.FileInfo, error)) error {
	base, rel := filepath.Dir(r.Path), filepath.Base(r.Path)
	if r.Beneath != "" && r.Path != r.Beneath {
		var err error
		rel, err = filepath.Rel(r.Beneath, r.Path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("%s is not beneath %s", r.Path, r.Beneath)
		}
		base = r.Beneath
	} else if !r.NoFollow {
		// Followed like any path: it must exist (or be created).
		if _, err := lstat(r.Path); err != nil && r.Create == policy.CreateNone {
			return err
		}
		return nil
	}
	cur := base
	parts := strings.Split(rel, string(filepath.Separator))
	for _, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist) && r.Create != policy.CreateNone:
			return nil // wrun creates the rest, refusing links on the way
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			if r.NoFollow && cur == r.Path {
				return errSkip
			}
			return fmt.Errorf("a symbolic link lies on the way from %s to %s; refusing to follow it", base, rel)
		}
	}
	return nil
}

package config

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/wrun-dev/wrun/grant"
)

// ThinkingLevels are the thinking levels a role may ask for, lowest first.
var thinkingLevels = []string{"off", "low", "medium", "high", "max"}

// ThinkingLevels returns the thinking levels there are, lowest first.
func ThinkingLevels() []string { return slices.Clone(thinkingLevels) }

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]{0,39}$`) })

// MinReceiptsMaxBytes is the smallest rotation size accepted.
const MinReceiptsMaxBytes = 64 << 10

// MinCacheMax is the smallest bound on the private build caches accepted.
const MinCacheMax = 1 << 20

// check validates what one file says on its own terms: every grant
// parses, every thinking level is one there is, every path is absolute.
func (f *File) check() error {
	d := &f.Defaults
	if d.Grant != nil {
		if _, err := grant.Parse(*d.Grant); err != nil {
			return f.errAt("defaults.grant", "%v", err)
		}
	}
	if d.Ceiling != nil {
		if _, err := grant.ParseBound(*d.Ceiling); err != nil {
			return f.errAt("defaults.ceiling", "%v", err)
		}
	}
	if d.Approver != nil && strings.TrimSpace(*d.Approver) == "" {
		return f.errAt("defaults.approver", "empty: give the approver command, or leave the setting out")
	}
	if d.ApproverTimeout != nil {
		if _, err := parseTimeout(*d.ApproverTimeout); err != nil {
			return f.errAt("defaults.approver_timeout", "%v", err)
		}
	}
	for _, n := range d.KeepEnv {
		if n == "" || strings.ContainsAny(n, "= \t") {
			return f.errAt("defaults.keep_env", "%q is not a variable name", n)
		}
	}
	for key, paths := range map[string][]string{"defaults.allow_read": d.AllowRead, "defaults.hide": d.Hide} {
		for _, p := range paths {
			if !isPath(p) {
				return f.errAt(key, "%q: want an absolute path (or ~/...)", p)
			}
		}
	}
	for _, t := range d.Tools {
		if !nameRE().MatchString(t) {
			return f.errAt("defaults.tools", "%q: a tool label is lower-case letters, digits, - and _", t)
		}
	}
	if d.ConductorDir != nil && !isPath(*d.ConductorDir) {
		return f.errAt("defaults.conductor_dir", "%q: want an absolute path (or ~/...)", *d.ConductorDir)
	}
	if d.ReceiptsMaxBytes != nil && *d.ReceiptsMaxBytes < MinReceiptsMaxBytes {
		return f.errAt("defaults.receipts_max_bytes", "%d: want at least %d", *d.ReceiptsMaxBytes, MinReceiptsMaxBytes)
	}
	if m := f.Cache.MaxSize; m != nil && int64(*m) < MinCacheMax {
		return f.errAt("cache.max_size", "%d bytes: want at least 1MiB (the caches of one workspace are often more: a go build cache of the standard library is about 100MB)", int64(*m))
	}
	for _, name := range sortedKeys(f.Models) {
		if err := checkLevels(f.Models[name].Thinking); err != nil {
			return f.errAt("models."+name+".thinking", "%v", err)
		}
	}
	for _, name := range sortedKeys(f.Roles) {
		r := f.Roles[name]
		at := "roles." + name
		if !nameRE().MatchString(name) {
			return f.errAt(at, "%q: a role name is lower-case letters, digits, - and _ (up to 40)", name)
		}
		if r.Grant != nil {
			if _, err := grant.Parse(*r.Grant); err != nil {
				return f.errAt(at+".grant", "%v", err)
			}
		}
		if r.Thinking != nil && !slices.Contains(thinkingLevels, *r.Thinking) {
			return f.errAt(at+".thinking", "%q: want one of %s", *r.Thinking, strings.Join(thinkingLevels, ", "))
		}
		if r.ThinkingLevels != nil {
			if err := checkLevels(r.ThinkingLevels); err != nil {
				return f.errAt(at+".thinking_levels", "%v", err)
			}
		}
		if r.Model != nil && strings.ContainsAny(*r.Model, " \t\n") {
			return f.errAt(at+".model", "%q: a model name has no spaces", *r.Model)
		}
	}
	return nil
}

func checkLevels(levels []string) error {
	if len(levels) == 0 {
		return fmt.Errorf("empty: list the thinking levels supported (%s), or leave the setting out", strings.Join(thinkingLevels, ", "))
	}
	for _, l := range levels {
		if !slices.Contains(thinkingLevels, l) {
			return fmt.Errorf("%q is not a thinking level; they are %s", l, strings.Join(thinkingLevels, ", "))
		}
	}
	return nil
}

func parseTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q: want a positive duration, e.g. 30s or 5m", s)
	}
	return d, nil
}

func isPath(p string) bool {
	return filepath.IsAbs(p) || strings.HasPrefix(p, "~/")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

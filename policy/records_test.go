package policy

import (
	"path/filepath"
	"testing"
)

// TestRecordsHiddenWhole: wrun's records (receipts, roster) are hidden
// with every right but listing withheld, under every grant and with the
// desktop (whose runtime directory is otherwise readable), as are the
// config's extra hidden paths.
func TestRecordsHiddenWhole(t *testing.T) {
	base := t.TempDir()
	records := []string{filepath.Join(base, "state", "wrun"), filepath.Join(base, "run", "wrun")}
	hide := filepath.Join(base, "secret")
	for _, spec := range []string{"inspect", "verify", "write", "full", "full,desktop=on"} {
		h := Host{Workdir: base, Records: records, Hide: []string{hide},
			Env: []string{"XDG_RUNTIME_DIR=" + filepath.Join(base, "run")}}
		p, err := Compute(mustGrant(t, spec), h, Options{})
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]Access{}
		for _, hl := range p.Hidden {
			found[hl.Path] = hl.Withheld
		}
		for _, r := range records {
			if found[r] != All&^ReadDir {
				t.Errorf("%s: %s withheld %v, want everything but listing", spec, r, found[r])
			}
		}
		if found[hide] != All&^ReadDir {
			t.Errorf("%s: config's hidden path withheld %v", spec, found[hide])
		}
	}
}

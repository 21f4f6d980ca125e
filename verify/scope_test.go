package verify

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestComputeBeneath: Compute decides how each writable path is reached.
// One inside the workspace is reached from the workspace root unless its
// tool names a nearer directory (the cargo workspace, the repository); one
// outside is not (the user chose it).
func TestComputeBeneath(t *testing.T) {
	top := tree(t, map[string]string{"ws/README": "", "crate/Cargo.toml": "[package]\nname = \"c\"\n"})
	ws := filepath.Join(top, "ws")
	tests := []struct {
		name, workdir string
		env           map[string]string
		path          string
		beneath       string
	}{
		{name: "no cargo workspace: the workspace root", workdir: ws,
			env: map[string]string{"CARGO_TARGET_DIR": filepath.Join(ws, "out")}, path: filepath.Join(ws, "out"), beneath: ws},
		{name: "outside the workspace: none", workdir: ws,
			env: map[string]string{"CARGO_TARGET_DIR": filepath.Join(top, "out")}, path: filepath.Join(top, "out"), beneath: ""},
		{name: "the cargo workspace names itself", workdir: filepath.Join(top, "crate"),
			path: filepath.Join(top, "crate", "target"), beneath: filepath.Join(top, "crate")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// shell=full: cargo writes its own target dir.
			s := Compute(Input{Workdir: tc.workdir, Home: filepath.Join(top, "nohome"), Getenv: envFunc(tc.env), SharedCaches: true})
			i := slices.IndexFunc(s.Writable, func(p Path) bool { return p.Path == tc.path })
			if i < 0 {
				t.Fatalf("%s is not writable: %+v", tc.path, s.Writable)
			}
			if got := s.Writable[i].Beneath; got != tc.beneath {
				t.Errorf("%s is reached beneath %q, want %q", tc.path, got, tc.beneath)
			}
		})
	}
}

// TestComputeUserCaches: shell=full (SharedCaches) makes the user's own
// tool caches writable, located as the tools locate them; nothing else does.
func TestComputeUserCaches(t *testing.T) {
	ws := t.TempDir()
	env := map[string]string{"CARGO_HOME": "/c/cargo", "GOMODCACHE": "/c/mod"}
	in := Input{Workdir: ws, Home: "/u", Getenv: envFunc(env)}
	if s := Compute(in); s.UserCaches != nil {
		t.Errorf("without SharedCaches: user caches %+v", s.UserCaches)
	}
	in.SharedCaches = true
	var got []string
	for _, c := range Compute(in).UserCaches {
		if !c.Dir || c.Create || c.Beneath != "" || c.Why == "" {
			t.Errorf("user cache %+v: want a directory, not created, reached as is, with a reason", c)
		}
		got = append(got, c.Tool+" "+c.Path)
	}
	want := []string{"xdg /u/.cache", "cargo /c/cargo/registry", "cargo /c/cargo/git", "go /u/.cache/go-build", "go /c/mod", "npm /u/.npm"}
	if !slices.Equal(got, want) {
		t.Errorf("user caches\n got %q\nwant %q", got, want)
	}
}

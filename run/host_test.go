package run

import (
	"strings"
	"testing"
)

func TestEffectiveGrant(t *testing.T) {
	tests := []struct {
		spec    string
		env     []string
		want    string
		note    string // substring of a note, "" for none
		wantErr string
	}{
		{spec: "verify", want: "files=read,shell=verify,network=on,desktop=off"},
		{spec: "full", env: []string{"WRUN_GRANT=files=read,shell=inspect,network=off,desktop=off"},
			want: "files=read,shell=inspect,network=off,desktop=off", note: "narrowed to the enclosing wrun's WRUN_GRANT"},
		{spec: "verify", env: []string{"WRUN_CEILING=verify,network=off"},
			want: "files=read,shell=verify,network=off,desktop=off", note: "network=on exceeds"},
		{spec: "inspect", env: []string{"WRUN_GRANT=full"}, want: "files=read,shell=inspect,network=off,desktop=off"},
		{spec: "bogus", wantErr: "--grant: bad grant"},
		{spec: "verify", env: []string{"WRUN_GRANT=nonsense"}, wantErr: "WRUN_GRANT (set by an enclosing wrun) is not a grant"},
	}
	for _, tc := range tests {
		g, notes, err := effectiveGrant(tc.spec, tc.env)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s %v: error %v, want %q", tc.spec, tc.env, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %v: %v", tc.spec, tc.env, err)
			continue
		}
		if g.String() != tc.want {
			t.Errorf("%s %v = %s, want %s", tc.spec, tc.env, g, tc.want)
		}
		joined := strings.Join(notes, "|")
		if (tc.note == "") != (joined == "") || !strings.Contains(joined, tc.note) {
			t.Errorf("%s %v: notes %q, want %q", tc.spec, tc.env, notes, tc.note)
		}
	}
}

func TestCanonical(t *testing.T) {
	dir := t.TempDir()
	if _, err := canonical(dir + "/missing"); err == nil || err.Error() != "no such file or directory" {
		t.Errorf("missing path: %v", err)
	}
	if _, err := canonical(""); err == nil {
		t.Error("empty path accepted")
	}
	got, err := canonical(dir + "/./")
	if err != nil || strings.HasSuffix(got, "/") || strings.Contains(got, "/./") {
		t.Errorf("canonical(%q) = %q, %v", dir+"/./", got, err)
	}
}

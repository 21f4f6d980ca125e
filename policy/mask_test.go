package policy

import "testing"

// TestMaskable: a hole is maskable when no rule lies at or beneath it.
func TestMaskable(t *testing.T) {
	rules := []Rule{{Path: "/"}, {Path: "/dev/null"}, {Path: "/home/u/.cargo/bin"}}
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/home/u/.ssh", true},
		{"/home/u", false},
		{"/home/u/.cargo", false},
		{"/home/u/.cargo/bin", false},
		{"/home/u/.cargo/binx", true},
		{"/dev", false},
		{"/etc/shadow", true},
	} {
		if got := Maskable(Hole{Path: tc.path, Withheld: All &^ ReadDir}, rules); got != tc.want {
			t.Errorf("Maskable(%s) = %v, want %v", tc.path, got, tc.want)
		}
	}
	if Maskable(Hole{Path: "/etc/shadow", Withheld: Write}, rules) {
		t.Error("a hole that withholds only writing is masked")
	}
}

package main

import (
	"testing"

	"github.com/wrun-dev/wrun/sandbox"
)

func TestObserverBlind(t *testing.T) {
	tests := []struct {
		right string
		want  bool
	}{
		{"read_file", true},
		{"read_dir", true},
		{"execute", true},
		{"read_file,execute", true},
		{"write_file", false},
		{"make_reg", false},
		{"read_file,write_file", false},
		{"connect_tcp", false},
		{"protected", false},
		{"", false},
	}
	for _, tc := range tests {
		if got := observerBlind(sandbox.Denial{Right: tc.right}); got != tc.want {
			t.Errorf("observerBlind(%q) = %v, want %v", tc.right, got, tc.want)
		}
	}
}

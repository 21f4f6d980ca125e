package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/sandbox"
)

func TestWriteHold(t *testing.T) {
	for _, tc := range []struct {
		observer bool
		want     []string
	}{
		{true, []string{"held, asked on --control-fd", "creates", "kept for a rerun", "reads"}},
		{false, []string{"not here", "--on-denial=retry"}},
	} {
		var b bytes.Buffer
		writeHold(&b, sandbox.Report{Observer: tc.observer})
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("observer %v: %q lacks %q", tc.observer, b.String(), w)
			}
		}
	}
}

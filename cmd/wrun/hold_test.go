package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/sandbox"
)

func TestWriteHold(t *testing.T) {
	const unixHeld = "a connect to a UNIX socket outside the sandbox"
	for _, tc := range []struct {
		name       string
		rep        sandbox.Report
		want, lack []string
	}{
		{"observer, sockets performed", sandbox.Report{Observer: true, SocketsMediated: true},
			[]string{"held, asked on --control-fd", "creates", "kept for a rerun", "reads", unixHeld}, nil},
		{"observer, sockets left to the kernel", sandbox.Report{Observer: true},
			[]string{"held, asked on --control-fd", "sockets and connects"}, []string{unixHeld}},
		{"observer, sockets confined by Landlock", sandbox.Report{Observer: true, SocketsMediated: true, UnixConfined: true},
			[]string{"held, asked on --control-fd"}, []string{unixHeld}},
		{"no observer", sandbox.Report{}, []string{"not here", "--on-denial=retry"}, []string{unixHeld}},
	} {
		var b bytes.Buffer
		writeHold(&b, tc.rep)
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, b.String(), w)
			}
		}
		for _, w := range tc.lack {
			if strings.Contains(b.String(), w) {
				t.Errorf("%s: %q says %q", tc.name, b.String(), w)
			}
		}
	}
}

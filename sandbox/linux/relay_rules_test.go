//go:build linux

package linux

import (
	"reflect"
	"testing"

	"github.com/wrun-dev/wrun/policy"
)

// TestRelayRules: under a pty relay the rules on the user's terminal name
// the relay's inner terminal instead, every other rule stays as it was,
// and wrun's binary may be read and executed (the monitor).
func TestRelayRules(t *testing.T) {
	self := policy.Rule{Path: "/proc/self/exe", Access: policy.ReadFile | policy.Execute, Source: "relay",
		Why: "wrun itself: the pty relay's monitor, which leads the command's session"}
	outer := func(p string) bool { return p == "/dev/pts/3" }
	for _, tc := range []struct {
		name  string
		rules []policy.Rule
		want  []policy.Rule
	}{
		{"no rules", nil, []policy.Rule{self}},
		{"the user's terminal",
			[]policy.Rule{{Path: "/dev/pts/3", Access: policy.Device, Source: "stdio", Why: "fd 0", Optional: true, NoFollow: true}},
			[]policy.Rule{{Path: "/dev/pts/9", Access: policy.Device, Source: "stdio", Why: "fd 0 (the pty relay's terminal, in place of the user's)", Optional: true}, self}},
		{"other rules untouched",
			[]policy.Rule{{Path: "/", Access: policy.ReadExec}, {Path: "/dev/tty", Access: policy.Device}, {Path: "/dev/pts/4", Access: policy.Device}},
			[]policy.Rule{{Path: "/", Access: policy.ReadExec}, {Path: "/dev/tty", Access: policy.Device}, {Path: "/dev/pts/4", Access: policy.Device}, self}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := relayRules(tc.rules, outer, "/dev/pts/9"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("relayRules:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

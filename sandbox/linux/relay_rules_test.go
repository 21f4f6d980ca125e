//go:build linux

package linux

import (
	"reflect"
	"testing"

	"github.com/wrun-dev/wrun/policy"
)

// TestRelayRules: under a pty relay the rules on the user's terminal go,
// every other rule stays as it was, the relay's inner terminal gets a
// terminal's rights and wrun's binary may be read and executed (the
// monitor).
func TestRelayRules(t *testing.T) {
	self := policy.Rule{Path: "/proc/self/exe", Access: policy.ReadFile | policy.Execute, Source: "relay",
		Why: "wrun itself: the pty relay's monitor, which leads the command's session"}
	inner := policy.Rule{Path: "/dev/pts/9", Access: policy.Device, Source: "relay",
		Why: "the pty relay's terminal, the command's in place of the user's: its standard streams, which it may reopen (/dev/stdout)"}
	outer := func(p string) bool { return p == "/dev/pts/3" || p == "/dev/char/136:3" }
	for _, tc := range []struct {
		name  string
		rules []policy.Rule
		want  []policy.Rule
	}{
		{"no rules", nil, []policy.Rule{inner, self}},
		{"the user's terminal, by any name",
			[]policy.Rule{{Path: "/dev/pts/3", Access: policy.Device, Source: "stdio", Why: "fd 0", Optional: true},
				{Path: "/dev/char/136:3", Access: policy.ReadFile | policy.WriteExisting, Source: "stdio", Why: "fd 1"}},
			[]policy.Rule{inner, self}},
		{"other rules untouched",
			[]policy.Rule{{Path: "/", Access: policy.ReadExec}, {Path: "/dev/tty", Access: policy.Device}, {Path: "/dev/pts/4", Access: policy.Device}},
			[]policy.Rule{{Path: "/", Access: policy.ReadExec}, {Path: "/dev/tty", Access: policy.Device}, {Path: "/dev/pts/4", Access: policy.Device}, inner, self}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := relayRules(tc.rules, outer, "/dev/pts/9"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("relayRules:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

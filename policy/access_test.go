package policy

import "testing"

func TestAccessWords(t *testing.T) {
	tests := []struct {
		a    Access
		want string
	}{
		{0, "nothing"},
		{ReadWrite, "read, write, execute"},
		{ReadWrite &^ Execute, "read, write"},
		{ReadWritePlain, "read, write (no links), execute"},
		{ReadWritePlain &^ Execute, "read, write (no links)"},
		{ReadExec, "read, execute"},
		{ReadFile | WriteExisting, "read, write (existing file)"},
	}
	for _, tc := range tests {
		if got := tc.a.Words(); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.a, got, tc.want)
		}
	}
}

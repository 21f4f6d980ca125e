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

func TestParseAccess(t *testing.T) {
	for in, want := range map[string]Access{
		"write_file":     WriteFile,
		"make_reg,refer": MakeReg | Refer,
		"connect_tcp":    0,
		"":               0,
		Write.String():   Write,
	} {
		if got := ParseAccess(in); got != want {
			t.Errorf("ParseAccess(%q) = %v, want %v", in, got, want)
		}
	}
}

package envlist

import "testing"

func TestLookup(t *testing.T) {
	tests := []struct {
		name   string
		env    []string
		lookup string
		want   string
		wantOK bool
	}{
		{name: "nil list", env: nil, lookup: "HOME"},
		{name: "set", env: []string{"PATH=/bin", "HOME=/home/u"}, lookup: "HOME", want: "/home/u", wantOK: true},
		{name: "unset", env: []string{"PATH=/bin"}, lookup: "HOME"},
		{name: "set and empty", env: []string{"HOME="}, lookup: "HOME", want: "", wantOK: true},
		{name: "the last entry wins", env: []string{"A=1", "B=2", "A=3"}, lookup: "A", want: "3", wantOK: true},
		{name: "a later empty entry wins", env: []string{"A=1", "A="}, lookup: "A", want: "", wantOK: true},
		{name: "the value keeps its =", env: []string{"GIT_CONFIG_VALUE_0=a=b"}, lookup: "GIT_CONFIG_VALUE_0", want: "a=b", wantOK: true},
		{name: "a prefix of a name is not the name", env: []string{"HOMEDIR=/x"}, lookup: "HOME"},
		{name: "a name is not a prefix of the entry's", env: []string{"HOME=/x"}, lookup: "HOM"},
		{name: "names are case-sensitive", env: []string{"home=/x"}, lookup: "HOME"},
		{name: "an entry without = is ignored", env: []string{"HOME", "PATH=/bin"}, lookup: "HOME"},
		{name: "an entry without = does not hide an earlier one", env: []string{"HOME=/x", "HOME"}, lookup: "HOME", want: "/x", wantOK: true},
		{name: "the name ends at the first =", env: []string{"A=B=c"}, lookup: "A=B"},
		{name: "an empty name", env: []string{"=x", "A=1"}, lookup: "", want: "x", wantOK: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Lookup(tc.env, tc.lookup)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("Lookup(%q, %q) = %q, %v, want %q, %v", tc.env, tc.lookup, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

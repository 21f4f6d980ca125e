package grant

import (
	"slices"
	"strings"
	"testing"
)

func TestParseBound(t *testing.T) {
	tests := []struct {
		spec, want string
		write      []string
		err        string
	}{
		{spec: "write", want: "files=write,shell=verify,network=off,desktop=off"},
		{spec: "write,network=on,allow-write=/src:/tmp", want: "files=write,shell=verify,network=on,desktop=off,allow-write=/src:/tmp", write: []string{"/src", "/tmp"}},
		{spec: "verify, allow-write=/a/b:/a:/c/", want: "files=read,shell=verify,network=on,desktop=off,allow-write=/a:/c", write: []string{"/a", "/c"}},
		{spec: "inspect,allow-write=", want: "files=read,shell=inspect,network=off,desktop=off,allow-write=", write: []string{}},
		{spec: "verify,network=loopback", want: "files=read,shell=verify,network=loopback,desktop=off"},
		{spec: "write,network=hosts,allow-write=/src", want: "files=write,shell=verify,network=hosts,desktop=off,allow-write=/src", write: []string{"/src"}},
		{spec: "allow-write=/x", err: "a grant spec first"},
		{spec: "write,allow-write=src", err: "not an absolute directory"},
		{spec: "write,allow-write=/a,allow-write=/b", err: "given twice"},
		{spec: "write,paths=/a", err: "paths"},
	}
	for _, tc := range tests {
		b, err := ParseBound(tc.spec)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseBound(%q) = %v, want an error with %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseBound(%q): %v", tc.spec, err)
			continue
		}
		if b.String() != tc.want || !slices.Equal(b.Write, tc.write) || (b.Write == nil) != (tc.write == nil) {
			t.Errorf("ParseBound(%q) = %q %#v, want %q %#v", tc.spec, b.String(), b.Write, tc.want, tc.write)
		}
		again, err := ParseBound(b.String())
		if err != nil || again.String() != b.String() {
			t.Errorf("ParseBound(%q) does not read back: %q, %v", b.String(), again.String(), err)
		}
	}
}

func TestBoundNarrow(t *testing.T) {
	mk := func(s string) Bound {
		b, err := ParseBound(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		b, limit, want string
		exceeds        int
	}{
		{"write", "write", "files=write,shell=verify,network=off,desktop=off", 0},
		{"write,allow-write=/src", "write", "files=write,shell=verify,network=off,desktop=off,allow-write=/src", 0},
		{"write", "write,allow-write=/src", "files=write,shell=verify,network=off,desktop=off,allow-write=/src", 1},
		{"write,allow-write=/src:/tmp", "verify,allow-write=/src/a:/opt", "files=read,shell=verify,network=off,desktop=off,allow-write=/src/a", 3},
		{"write,allow-write=/a", "write,allow-write=/b", "files=write,shell=verify,network=off,desktop=off,allow-write=", 1},
		{"full", "write,network=hosts", "files=write,shell=verify,network=hosts,desktop=off", 2},
		{"verify,network=loopback", "verify,network=hosts", "files=read,shell=verify,network=loopback,desktop=off", 0},
	}
	for _, tc := range tests {
		got, ex := mk(tc.b).Narrow(mk(tc.limit))
		if got.String() != tc.want || len(ex) != tc.exceeds {
			t.Errorf("%s narrowed to %s = %s %q, want %s and %d exceeding", tc.b, tc.limit, got, ex, tc.want, tc.exceeds)
		}
	}
	b := mk("write,allow-write=/src:/tmp")
	for p, want := range map[string]bool{"/src": true, "/src/x": true, "/srcx": false, "/etc": false, "/": false} {
		if b.WriteAllowed(p) != want {
			t.Errorf("WriteAllowed(%s) = %v, want %v", p, !want, want)
		}
	}
	if !DefaultBound().WriteAllowed("/anything") {
		t.Error("the default ceiling bounds paths")
	}
}

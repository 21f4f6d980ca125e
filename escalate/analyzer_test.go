package escalate

import (
	"reflect"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/policy"
)

func render(ms []access.Missing) string {
	var out []string
	for _, m := range ms {
		s := m.Path + m.Addr + " " + m.Right
		if m.Reason != "" {
			s += " (" + m.Reason + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// TestCheckDelegates: the Analyzer answers with the access model (whose
// tables are in package access) for the platform its Facts describe, and
// WouldDeny agrees with Check.
func TestCheckDelegates(t *testing.T) {
	ops := []access.Op{
		{Kind: access.OpOpen, Path: ws + "/src/main.rs", Rights: policy.WriteFile | policy.ReadFile},
		{Kind: access.OpOpen, Path: home + "/.ssh/id_ed25519"},
		{Kind: access.OpCreate, Path: ws + "/new.txt"},
		{Kind: access.OpCreate, Path: ws + "/.git/hooks/pre-commit"},
		{Kind: access.OpCreate, Path: ws + "/target/debug/x"},
		{Kind: access.OpUnlink, Path: ws + "/.git/config"},
		{Kind: access.OpRename, Path: ws + "/.git", Dest: ws + "/old", Dir: true},
		{Kind: access.OpRename, Path: ws + "/target/x", Dest: ws + "/x"},
		{Kind: access.OpChmod, Path: ws + "/.git/config"},
		{Kind: access.OpConnect, Addr: "127.0.0.1:8080"},
		{Kind: access.OpConnect, Addr: "unix:/run/user/1000/bus"},
		{Kind: access.OpSocket, Addr: "unix"},
	}
	facts := []Facts{{}, {Protection: access.ProtectExact}, {UnixConfined: true}}
	for _, spec := range []string{"inspect", "verify", "write", "full,desktop=on"} {
		for _, f := range facts {
			a := analyzer(t, spec, f)
			m := access.New(a.p, access.Platform{Protection: f.Protection, UnixConfined: f.UnixConfined})
			for _, op := range ops {
				got, want := a.Check(op), m.Check(op)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s %+v: Check(%+v)\n got %+v\nwant %+v", spec, f, op, got, want)
				}
				if a.WouldDeny(op) != (len(want) > 0) {
					t.Errorf("%s %+v: WouldDeny(%+v) disagrees with Check", spec, f, op)
				}
				if f.Protection == access.ProtectCarved && !f.UnixConfined && WouldDeny(a.p, op) != (len(want) > 0) {
					t.Errorf("%s: package WouldDeny(%+v) disagrees with Check", spec, op)
				}
			}
			if got, want := a.Rights(ws+"/src/"), m.Rights(ws+"/src"); got != want {
				t.Errorf("%s %+v: Rights = %s, want %s", spec, f, got, want)
			}
		}
	}
}

func TestOpDenials(t *testing.T) {
	op := access.Op{Kind: access.OpCreate, Path: ws + "/x"}
	a := analyzer(t, "verify", Facts{})
	ds := exactDenials(op, a.Check(op))
	if len(ds) != 1 || ds[0].Op != access.OpCreate || ds[0].Path != ws+"/x" || ds[0].Right != "make_reg" || !ds[0].Exact || ds[0].Count != 1 {
		t.Errorf("Denials = %+v", ds)
	}
}

package escalate

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/sandbox"
)

func TestWidenArgs(t *testing.T) {
	host, err := grant.ParseHost("127.0.0.1:8080")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		w    Widen
		args []string
	}{
		{Widen{}, []string{}},
		{Widen{Kind: KindAllowWrite, Path: "/w/out"}, []string{"--allow-write", "/w/out"}},
		{Widen{Kind: KindAllowRead, Path: "/home/u/.ssh/config"}, []string{"--allow-read", "/home/u/.ssh/config"}},
		{Widen{Kind: KindAllowUnix, Path: "/run/user/1/bus"}, []string{"--allow-unix", "/run/user/1/bus"}},
		{Widen{Kind: KindAllowHost, Host: host}, []string{"--allow-host", "127.0.0.1:8080"}},
		{Widen{Kind: KindGrant, Grant: mustGrant(t, "verify,shell=full")}, []string{"--grant", "verify,shell=full,network=on"}},
	}
	for _, tc := range tests {
		if got := tc.w.Args(); !slices.Equal(got, tc.args) {
			t.Errorf("%+v: args %q, want %q", tc.w, got, tc.args)
		}
		back, err := parseWiden(tc.args)
		if tc.w.Kind == "" {
			if err == nil {
				t.Errorf("no flags read back as %+v", back)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(back, tc.w) {
			t.Errorf("%q read back as %+v, %v; want %+v", tc.args, back, err, tc.w)
		}
	}
	for _, bad := range [][]string{{"--allow-write"}, {"--grant", "nonsense"}, {"--allow-host", "a b"}, {"--keep-env", "X"}} {
		if w, err := parseWiden(bad); err == nil {
			t.Errorf("%q read as %+v", bad, w)
		}
	}
}

// TestWidenSurvivesJSON: a request read back from its JSON form offers the
// same widenings, so an approval of it approves what was offered.
func TestWidenSurvivesJSON(t *testing.T) {
	a := analyzer(t, "verify", Facts{Argv: []string{"cargo", "test"}, Exists: existing(ws+"/src/x", "/opt/tool/x")})
	req := a.Request(runEnd, []sandbox.Denial{
		{Op: access.OpCreate, Path: "/opt/tool/y", Right: "make_reg", Exact: true},
		{Op: access.OpConnect, Addr: "1.2.3.4:443", Right: access.RightConnectTCP, Exact: true},
	})
	b, err := req.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Request
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, d := range req.Denials {
		for j, alt := range d.Alternatives {
			if got := back.Denials[i].Alternatives[j].Widen; !reflect.DeepEqual(got, alt.Widen) {
				t.Errorf("%s: read back as %+v, want %+v", alt.ID, got, alt.Widen)
			}
			if alt.Widen.Kind != "" {
				n++
			}
		}
	}
	if n < 2 {
		t.Fatalf("only %d widenings offered; the test's denials are wrong", n)
	}
}

// TestApprovalReadsTheWidening: what is approved is the alternative's
// widening, whatever its flags say; the control approves it as offered.
func TestApprovalReadsTheWidening(t *testing.T) {
	a := analyzer(t, "verify", Facts{Exists: existing("/opt/tool/x")})
	req := a.Request(runEnd, []sandbox.Denial{{Op: access.OpCreate, Path: "/opt/tool/y", Right: "make_reg", Exact: true}})
	id := req.Denials[0].ID + ".allow-write"
	d := Decision{Decision: DecisionApprove, Alternatives: []string{id}}
	w, err := Approve(req, d, Ceiling{Grant: grant.Ceiling()})
	if err != nil || !slices.Equal(w.AllowWrite, []string{"/opt/tool"}) {
		t.Fatalf("the control: %+v, %v", w, err)
	}
	for i, alt := range req.Denials[0].Alternatives {
		if alt.ID == id {
			req.Denials[0].Alternatives[i].Args = []string{"--allow-write", "/"}
		}
	}
	w, err = Approve(req, d, Ceiling{Grant: grant.Ceiling()})
	if err != nil || !slices.Equal(w.AllowWrite, []string{"/opt/tool"}) {
		t.Errorf("with its flags changed: %+v, %v", w, err)
	}
}

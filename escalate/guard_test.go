package escalate

import (
	"errors"
	"github.com/wrun-dev/wrun/access"
	"slices"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/sandbox"
)

func TestGuardRefusal(t *testing.T) {
	guarded := []string{"/home/u/.ssh", "/home/u/proj/.git/config", "/tmp/x/secret"}
	tests := []struct {
		path, want string
	}{
		{"/", "the whole file system"},
		{"/etc", "system-wide start-up location"},
		{"/etc/profile.d", "system-wide start-up location"},
		{"/etc/cron.d", "system-wide start-up location"},
		{"/usr/local/lib", "system-wide start-up location"},
		{"/usr/lib/x86_64-linux-gnu", "system-wide start-up location"},
		{"/lib", "system-wide start-up location"},
		{"/var", "the system-wide start-up location /var/spool/cron inside it"},
		{"/var/spool/cron/crontabs", "system-wide start-up location"},
		{"/home/u", "above /home/u/.ssh"},
		{"/home/u/proj", "above /home/u/proj/.git/config"},
		{"/home/u/proj/.git", "above /home/u/proj/.git/config"},
		{"/tmp/x", "above /tmp/x/secret"},
		// Not above anything guarded: left to the rest of the analysis.
		{"/home/u/proj/src", ""},
		{"/home/u/.ssh", ""},
		{"/tmp/x/secret", ""},
		{"/var/tmp", ""},
		{"/opt/tool", ""},
		{"/etcetera", ""},
	}
	for _, tc := range tests {
		got := guardRefusal(tc.path, guarded)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("guardRefusal(%s) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

// TestApprovalNeverOpensEtc is issue 24's attempt: as root with the
// default ceiling, the refused create of /etc/ld.so.preload offers no
// --allow-write of /etc, approving it without ids widens nothing, and an
// approval naming a forged --allow-write /etc alternative is refused. The
// control: the same create under /opt, which is no start-up location, is
// offered and approved as --allow-write /opt/tool.
func TestApprovalNeverOpensEtc(t *testing.T) {
	root := Facts{Home: "/root", Env: []string{"HOME=/root"}, Exists: existing("/etc/passwd", "/opt/tool/x")}
	a := analyzer(t, "write", root)
	ceiling := Ceiling{Grant: a.ceiling.Grant, Source: grant.CeilingDefault, Guarded: a.Guarded()}
	preload := sandbox.Denial{Op: access.OpCreate, Path: "/etc/ld.so.preload", Right: "make_reg", Exact: true}
	req := a.Request(runEnd, []sandbox.Denial{preload})
	for _, alt := range req.Denials[0].Alternatives {
		if slices.Contains(alt.Args, "--allow-write") {
			t.Errorf("offered %s %q for a create in /etc", alt.ID, alt.Args)
		}
	}
	w, err := Approve(req, Decision{Decision: DecisionApprove}, ceiling)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.AllowWrite) > 0 {
		t.Errorf("an approval without ids opened %q", w.AllowWrite)
	}
	forged := *req
	forged.Denials = slices.Clone(req.Denials)
	forged.Denials[0].Alternatives = append(slices.Clone(req.Denials[0].Alternatives),
		fromArgs(Alternative{ID: "d1.allow-write", Kind: KindAllowWrite, Args: []string{"--allow-write", "/etc"}, WithinCeiling: true}))
	if _, err := Approve(&forged, Decision{Decision: DecisionApprove, Alternatives: []string{"d1.allow-write"}}, ceiling); err == nil ||
		!strings.Contains(err.Error(), "system-wide start-up location") {
		t.Errorf("approving --allow-write /etc by id: %v, want it refused", err)
	}

	// The control.
	opt := sandbox.Denial{Op: access.OpCreate, Path: "/opt/tool/y", Right: "make_reg", Exact: true}
	req = a.Request(runEnd, []sandbox.Denial{opt})
	w, err = Approve(req, Decision{Decision: DecisionApprove}, ceiling)
	if err != nil || !slices.Equal(w.AllowWrite, []string{"/opt/tool"}) {
		t.Errorf("the control: approved %v, %v; want --allow-write /opt/tool", w, err)
	}
}

// TestCeilingBoundsPaths: a ceiling with allow-write= offers and approves
// an --allow-write only inside its directories.
func TestCeilingBoundsPaths(t *testing.T) {
	f := Facts{Exists: existing("/opt/tool/x", "/srv/data/x"), Ceiling: ceilingOf(t, "full,allow-write=/srv", grant.CeilingFlag)}
	a := analyzer(t, "write", f)
	req := a.Request(runEnd, []sandbox.Denial{
		{Op: access.OpCreate, Path: "/opt/tool/y", Right: "make_reg", Exact: true},
		{Op: access.OpCreate, Path: "/srv/data/y", Right: "make_reg", Exact: true},
	})
	kinds := func(d DeniedAct) (out []string) {
		for _, alt := range d.Alternatives {
			out = append(out, alt.Kind)
		}
		return out
	}
	if k := kinds(req.Denials[0]); !slices.Contains(k, KindBeyondCeiling) || slices.Contains(k, KindAllowWrite) {
		t.Errorf("/opt outside the ceiling's paths: kinds %q", k)
	}
	if k := kinds(req.Denials[1]); !slices.Contains(k, KindAllowWrite) {
		t.Errorf("/srv inside the ceiling's paths: kinds %q", k)
	}
	forged := *req
	forged.Denials = slices.Clone(req.Denials)
	forged.Denials[0].Alternatives = []Alternative{fromArgs(Alternative{ID: "d1.allow-write", Kind: KindAllowWrite, Args: []string{"--allow-write", "/opt/tool"}, WithinCeiling: true})}
	_, err := Approve(&forged, Decision{Decision: DecisionApprove, Alternatives: []string{"d1.allow-write"}}, *f.Ceiling)
	var ce *CeilingError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "outside the ceiling's allow-write=/srv") {
		t.Errorf("approving /opt/tool beyond the ceiling's paths: %v", err)
	}
}

// TestRoutesCarryTheRunsFlags: a route's commands keep the run's own
// flags, the role's only under the run's own grant.
func TestRoutesCarryTheRunsFlags(t *testing.T) {
	f := Facts{Argv: []string{"cargo", "test"}, Flags: []string{"--workdir", ws, "--keep-env", "GOFLAGS", "--allow-write", "/srv/out"},
		RoleFlags: []string{"--role", "verifier"}}
	a := analyzer(t, "verify", f)
	req := a.Request(runEnd, []sandbox.Denial{{Op: access.OpCreate, Path: home + "/.cargo/registry/index/x", Right: "make_reg", Exact: true, Program: "cargo"}})
	var cmds [][]string
	for _, alt := range req.Denials[0].Alternatives {
		cmds = append(cmds, alt.Commands...)
	}
	if len(cmds) == 0 {
		t.Fatalf("no route with commands: %+v", req.Denials[0].Alternatives)
	}
	for _, c := range cmds {
		dash := slices.Index(c, "--")
		flags := c[3:dash]
		own := c[2] == "verify,network=on"
		want := f.Flags
		if own {
			want = append(slices.Clone(f.Flags), f.RoleFlags...)
		}
		if !slices.Equal(flags, want) {
			t.Errorf("command %q carries %q, want %q", c, flags, want)
		}
	}
}

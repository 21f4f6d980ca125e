package darwin

import (
	"errors"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

func planFor(t *testing.T, spec string) *Plan {
	t.Helper()
	g, err := grant.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := NewPlan(&policy.Policy{Grant: g, GrantSpec: g.String()}, sandbox.Options{}, "R", nil)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// Inside a Seatbelt sandbox no profile can be applied: the command runs
// under the enclosing one only when its own grant covers it (it then gets
// no more than its grant, and is told it may get less); otherwise the run
// is refused, with the reason.
func TestNest(t *testing.T) {
	cases := []struct {
		inner, outer string
		ok           bool
		note         string
	}{
		{"write", "write", true, "same grant"},
		{"full", "verify", true, "narrower than"},
		{"write", "inspect", true, "narrower than"},
		{"inspect", "write", false, "more than its grant"},
		{"verify,network=off", "verify", false, "network=on"},
		{"write", "write,desktop=on", false, "desktop=on"},
		{"write", "", false, "did not make"},
		{"write", "bogus=1", false, "cannot read"},
	}
	for _, c := range cases {
		pl := planFor(t, c.inner)
		err := Nest(pl, c.outer)
		if c.ok != (err == nil) {
			t.Errorf("inner %s in %q: err %v, want ok=%v", c.inner, c.outer, err, c.ok)
			continue
		}
		if err != nil {
			var ne *NestedError
			if !errors.As(err, &ne) || !strings.Contains(err.Error(), c.note) {
				t.Errorf("inner %s in %q: %v, want a NestedError saying %q", c.inner, c.outer, err, c.note)
			}
			if pl.Nested {
				t.Errorf("inner %s in %q: refused but marked nested", c.inner, c.outer)
			}
			continue
		}
		if !pl.Nested || !strings.Contains(strings.Join(pl.Notes, "\n"), c.note) {
			t.Errorf("inner %s in %q: nested=%v notes %q, want %q", c.inner, c.outer, pl.Nested, pl.Notes, c.note)
		}
		if rep := pl.Report(); rep.Observer || !strings.Contains(rep.Summary, "enclosing") {
			t.Errorf("nested report %+v", rep)
		}
	}
}

// The report says what is enforced, and the mach services' state follows
// the grant: closed keychain always, DNS and certificates with the
// network, the desktop's services with desktop=on.
func TestReportAndServices(t *testing.T) {
	rep := planFor(t, "verify").Report()
	if rep.Platform != Platform || rep.Degraded || len(rep.Gaps) != 0 || !rep.Observer {
		t.Errorf("report %+v", rep)
	}
	for spec, want := range map[string]map[string]bool{
		"inspect":          {"com.apple.mDNSResponder": false, "com.apple.trustd": false, "com.apple.SecurityServer": false, "com.apple.pasteboard.1": false, "com.apple.system.opendirectoryd.libinfo": true},
		"verify":           {"com.apple.mDNSResponder": true, "com.apple.trustd": true, "com.apple.SecurityServer": false, "com.apple.pasteboard.1": false},
		"write,desktop=on": {"com.apple.mDNSResponder": false, "com.apple.pasteboard.1": true, "com.apple.windowserver.active": true, "com.apple.SecurityServer": false},
	} {
		pl := planFor(t, spec)
		pl.Policy.Network.Allow = pl.Policy.Grant.Network == grant.NetworkOn
		pl.Policy.IPC.PathUnixOutside = pl.Policy.Grant.Desktop == grant.DesktopOn
		prof, err := Generate(Input{Policy: pl.Policy, RunID: "R"})
		if err != nil {
			t.Fatal(err)
		}
		e := newEval(t, prof)
		for name, allowed := range want {
			if got, _ := e.decide(t, request{op: "mach-lookup", mach: name}); got != allowed {
				t.Errorf("%s: mach-lookup %s allowed=%v, want %v", spec, name, got, allowed)
			}
		}
		for _, r := range []request{{op: "appleevent-send"}, {op: "signal"}, {op: "sysctl-write"}, {op: "process-info-pidinfo"}} {
			got, _ := e.decide(t, r)
			desktopOnly := r.op == "appleevent-send" || r.op == "process-info-pidinfo"
			if want := desktopOnly && spec == "write,desktop=on"; got != want {
				t.Errorf("%s: %s allowed=%v, want %v", spec, r.op, got, want)
			}
		}
		if got, _ := e.decide(t, request{op: "signal", sameSandbox: true}); !got {
			t.Errorf("%s: signalling within the sandbox refused", spec)
		}
		if got, _ := e.decide(t, request{op: "network-outbound", remoteIP: "192.0.2.1:443"}); got != pl.Policy.Network.Allow {
			t.Errorf("%s: TCP outbound allowed=%v", spec, got)
		}
	}
	// A UNIX socket named for the run opens that socket, no other.
	pl := planFor(t, "write")
	pl.Policy.IPC.UnixSockets = []string{"/tmp/agent.sock"}
	prof, err := Generate(Input{Policy: pl.Policy, RunID: "R"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEval(t, prof)
	if ok, _ := e.decide(t, request{op: "network-outbound", path: "/private/tmp/agent.sock"}); !ok {
		t.Error("the named socket is refused")
	}
	if ok, _ := e.decide(t, request{op: "network-outbound", path: "/private/tmp/other.sock"}); ok {
		t.Error("another socket is allowed")
	}
}

// Hard links: made inside the writable workspace (which lies inside the
// hidden home directory), never from or into a hidden or protected path.
func TestHardLinks(t *testing.T) {
	h := host(t, t.TempDir())
	prof, err := Generate(Input{Policy: compute(t, "write", h), RunID: "R"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEval(t, prof)
	for path, want := range map[string]bool{
		h.Workdir + "/src/link":     true,
		h.Home + "/.ssh/id_ed":      false,
		h.Home + "/x":               false,
		h.Workdir + "/.git/config":  false,
		h.Workdir + "/.git/hooks/x": false,
	} {
		if got, _ := e.decide(t, request{op: "file-link", path: Canonical(path, nil)}); got != want {
			t.Errorf("file-link %s: allowed %v, want %v", path, got, want)
		}
	}
}

// TestNetworkLoopbackRefused: Seatbelt cannot hold network=loopback or
// hosts, so they are refused with the reason, and with --best-effort run
// as network=off, degraded.
func TestNetworkLoopbackRefused(t *testing.T) {
	for _, n := range []grant.Network{grant.NetworkLoopback, grant.NetworkHosts} {
		p := &policy.Policy{Grant: grant.Grant{Files: grant.FilesRead, Shell: grant.ShellVerify, Network: n},
			Network: policy.Network{Loopback: true, Proxy: n == grant.NetworkHosts}}
		_, err := NewPlan(p, sandbox.Options{}, "0123456789abcdef", func(s string) string { return s })
		var ue *sandbox.UnenforceableError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "network="+n.String()) {
			t.Fatalf("network=%s: %v, want an UnenforceableError naming it", n, err)
		}
		pl, err := NewPlan(p, sandbox.Options{BestEffort: true}, "0123456789abcdef", func(s string) string { return s })
		if err != nil {
			t.Fatalf("network=%s --best-effort: %v", n, err)
		}
		if rep := pl.Report(); !rep.Degraded || strings.Contains(pl.Profile.Text, "(allow network-outbound (remote ip))") {
			t.Errorf("network=%s --best-effort: degraded %v, profile opens the network", n, rep.Degraded)
		}
	}
}

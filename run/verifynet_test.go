package run

import (
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// hostsPlatform is a platform that holds network=hosts, or refuses it
// with refused.
type hostsPlatform struct{ refused string }

func (hostsPlatform) Name() string { return "fake" }
func (hostsPlatform) Prepare(*policy.Policy, sandbox.Options) (Plan, error) {
	return nil, nil
}
func (hostsPlatform) Doctor() []sandbox.Feature         { return nil }
func (h hostsPlatform) RefusesHosts(grant.Grant) string { return h.refused }

// noHostsPlatform cannot say (macOS, a test's platform): no RefusesHosts.
type noHostsPlatform struct{}

func (noHostsPlatform) Name() string { return "fake" }
func (noHostsPlatform) Prepare(*policy.Policy, sandbox.Options) (Plan, error) {
	return nil, nil
}
func (noHostsPlatform) Doctor() []sandbox.Feature { return nil }

func TestVerifyDefault(t *testing.T) {
	for _, tc := range []struct {
		spec, want, note string
		pl               Platform
	}{
		{"verify", "files=read,shell=verify,network=hosts,desktop=off", "", hostsPlatform{}},
		{" verify , shell=full", "files=read,shell=full,network=hosts,desktop=off", "", hostsPlatform{}},
		{"verify,network=on", "files=read,shell=verify,network=on,desktop=off", "", hostsPlatform{}},
		{"verify, network = on", "files=read,shell=verify,network=on,desktop=off", "", hostsPlatform{}},
		{"full", "files=write,shell=full,network=on,desktop=off", "", hostsPlatform{}},
		{"files=read,shell=verify,network=on", "files=read,shell=verify,network=on,desktop=off", "", hostsPlatform{}},
		{"verify", "files=read,shell=verify,network=on,desktop=off", "needs pidfd_getfd", hostsPlatform{refused: "pidfd_getfd; --best-effort runs it as network=off"}},
		{"verify", "files=read,shell=verify,network=on,desktop=off", "", noHostsPlatform{}},
	} {
		g, err := grant.Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		got, note := verifyDefault(tc.spec, g, tc.pl)
		if got.String() != tc.want || (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) || strings.Contains(note, "best-effort") {
			t.Errorf("verifyDefault(%q) = %s, %q; want %s, a note saying %q", tc.spec, got, note, tc.want, tc.note)
		}
	}
	// A network an enclosing wrun or a ceiling narrowed stays.
	g, _ := grant.Parse("verify,network=off")
	if got, _ := verifyDefault("verify", g, hostsPlatform{}); got.Network != grant.NetworkOff {
		t.Errorf("a narrowed network was widened to %s", got.Network)
	}
}

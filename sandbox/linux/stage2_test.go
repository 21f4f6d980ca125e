//go:build linux

package linux

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// TestStage2SpecRestriction checks that the second stage restricts itself
// exactly as the launch thread would: the restriction it decodes is the
// one the plan gives the thread, but for the mount namespace its parent
// made.
func TestStage2SpecRestriction(t *testing.T) {
	p := &policy.Policy{
		Rules: []policy.Rule{
			{Path: "/ws", Access: policy.ReadWrite},
			{Path: "/opt/x", Access: policy.Read, Optional: true, NoFollow: true, Beneath: "/opt"},
		},
		Protected: []policy.Protected{{Path: "/ws/.git/config", Exists: true, Within: "/ws"}},
	}
	f := Features{LandlockABI: 7, Seccomp: true, UserNotif: true, UserNS: true}
	pl, err := NewPlan(p, f, sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !pl.viaUserNS {
		t.Fatal("the plan does not use the second stage")
	}
	thread := pl.restriction(true)
	want := *thread
	want.InMountNS = true

	spec := stage2Spec{Restriction: *thread, Argv: []string{"true"}, Cwd: "/ws"}
	spec.Restriction.InMountNS = true
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(spec); err != nil {
		t.Fatal(err)
	}
	var got stage2Spec
	if err := json.NewDecoder(&buf).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Restriction, want) {
		t.Errorf("the stage decodes\n%+v\nwant\n%+v", got.Restriction, want)
	}

	// The restriction is the plan's.
	switch {
	case !thread.Landlock || thread.HandledFS != pl.attr.handledFS || thread.HandledNet != pl.attr.handledNet || thread.Scoped != pl.attr.scoped:
		t.Errorf("Landlock %+v, plan %+v", thread, pl.attr)
	case !reflect.DeepEqual(thread.Rules, pl.fsRules()):
		t.Errorf("rules %+v, want %+v", thread.Rules, pl.fsRules())
	case !reflect.DeepEqual(thread.Mounts, pl.Mounts) || len(thread.Mounts) != 1:
		t.Errorf("mounts %+v, want %+v", thread.Mounts, pl.Mounts)
	case !thread.Seccomp || thread.Filter != pl.seccomp || !thread.Filter.Observe:
		t.Errorf("seccomp %v %+v, plan %+v", thread.Seccomp, thread.Filter, pl.seccomp)
	case !thread.AuditLog || thread.InMountNS:
		t.Errorf("audit log %v, in mount namespace %v", thread.AuditLog, thread.InMountNS)
	}
}

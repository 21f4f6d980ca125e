//go:build linux

package linux

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

func TestStageMsg(t *testing.T) {
	tests := []struct {
		name string
		msg  stageMsg
		wire string
	}{
		{"listener", stageMsg{Kind: stageListener}, "L"},
		{"start error", stageMsg{Kind: stageStartError, Err: stage2Err{Code: 127, Msg: "cc: command not found in PATH"}},
			`E{"code":127,"msg":"cc: command not found in PATH"}`},
		{"start error, empty message", stageMsg{Kind: stageStartError, Err: stage2Err{Code: 125}}, `E{"code":125,"msg":""}`},
		{"started", stageMsg{Kind: stageStarted}, "S"},
		{"exited with status 3", stageMsg{Kind: stageExited, Status: 3 << 8}, "X768"},
		{"killed by SIGKILL", stageMsg{Kind: stageExited, Status: 9}, "X9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.msg.encode()
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.wire {
				t.Errorf("encoded %q, want %q", b, tt.wire)
			}
			got, err := decodeStageMsg(b)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.msg {
				t.Errorf("decoded %+v, want %+v", got, tt.msg)
			}
		})
	}

	bad := []struct {
		name, wire, err string
	}{
		{"empty", "", "empty message"},
		{"unknown kind", "Z", "unknown message kind"},
		{"started with a body", "S1", "with a body"},
		{"exit without a status", "X", "bad exit"},
		{"exit with a negative status", "X-1", "bad exit"},
		{"listener with a body", "Lx", "with a body"},
		{"start error without a body", "E", "bad start error"},
		{"start error, truncated", `E{"code":12`, "bad start error"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if m, err := decodeStageMsg([]byte(tt.wire)); err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("decoded %+v, error %v; want an error naming %q", m, err, tt.err)
			}
		})
	}
	if _, err := (stageMsg{Kind: 'Z'}).encode(); err == nil {
		t.Error("an unknown kind was encoded")
	}
}

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
	f := Features{LandlockABI: 7, LandlockErrata: errataFixed, Seccomp: true, UserNotif: true, UserNS: true}
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
	case !reflect.DeepEqual(thread.Rules, append(pl.fsRules(), handsExeRules()...)):
		t.Errorf("rules %+v, want %+v and wrun's own binary (the hands)", thread.Rules, pl.fsRules())
	case !reflect.DeepEqual(thread.Mounts, pl.Mounts) || len(thread.Mounts) != 1:
		t.Errorf("mounts %+v, want %+v", thread.Mounts, pl.Mounts)
	case !thread.Seccomp || thread.Filter != pl.seccomp || !thread.Filter.Observe:
		t.Errorf("seccomp %v %+v, plan %+v", thread.Seccomp, thread.Filter, pl.seccomp)
	case !thread.AuditLog || thread.InMountNS:
		t.Errorf("audit log %v, in mount namespace %v", thread.AuditLog, thread.InMountNS)
	}
}

// TestSpecWarmupCoversTheSpec: the stage decodes specWarmup ahead of the
// spec so that encoding/json knows the spec's types; it must name only
// fields the spec has, and reach every struct type in it.
func TestSpecWarmupCoversTheSpec(t *testing.T) {
	d := json.NewDecoder(strings.NewReader(specWarmup))
	d.DisallowUnknownFields()
	var s stage2Spec
	if err := d.Decode(&s); err != nil {
		t.Fatalf("specWarmup names a field the spec does not have: %v", err)
	}
	reached := map[reflect.Type]bool{}
	var mark func(v reflect.Value)
	mark = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			reached[v.Type()] = true
			for i := 0; i < v.NumField(); i++ {
				mark(v.Field(i))
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				mark(v.Index(i))
			}
		}
	}
	mark(reflect.ValueOf(s))
	var walk func(t reflect.Type, seen map[reflect.Type]bool)
	var missing []string
	walk = func(typ reflect.Type, seen map[reflect.Type]bool) {
		switch typ.Kind() {
		case reflect.Struct:
			if seen[typ] {
				return
			}
			seen[typ] = true
			if !reached[typ] {
				missing = append(missing, typ.String())
			}
			for i := 0; i < typ.NumField(); i++ {
				if typ.Field(i).IsExported() && typ.Field(i).Tag.Get("json") != "-" {
					walk(typ.Field(i).Type, seen)
				}
			}
		case reflect.Slice, reflect.Pointer, reflect.Array:
			walk(typ.Elem(), seen)
		}
	}
	walk(reflect.TypeOf(s), map[reflect.Type]bool{})
	if len(missing) > 0 {
		t.Errorf("specWarmup does not reach %v", missing)
	}
}

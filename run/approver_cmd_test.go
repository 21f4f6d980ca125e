//go:build unix

package run

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wrun-dev/wrun/escalate"
)

func TestCommandApprover(t *testing.T) {
	req := &escalate.Request{Schema: escalate.SchemaID, Version: escalate.SchemaVersion, Grant: "verify"}
	tests := []struct {
		name    string
		command string
		timeout time.Duration
		err     string // empty: approved
		within  time.Duration
	}{
		{name: "answers", command: `cat >/dev/null; echo '{"decision": "approve"}'`, timeout: time.Minute, within: 5 * time.Second},
		{name: "does not read its stdin", command: `echo '{"decision": "approve"}'`, timeout: time.Minute, within: 5 * time.Second},
		{name: "sleeps forever", command: `sleep 600`, timeout: 300 * time.Millisecond, err: "no decision within 300ms", within: 5 * time.Second},
		{name: "a background child holds stdout", command: `sleep 600 & echo '{"decision": "approve"}'`, timeout: time.Minute, within: 5 * time.Second},
		{name: "closes stdout and lingers", command: `echo '{"decision": "approve"}'; exec >&-; sleep 600`, timeout: time.Minute, within: 5 * time.Second},
		{name: "fails", command: `echo '{"decision": "approve"}'; exit 3`, timeout: time.Minute, err: "exit status 3", within: 5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			start := time.Now()
			d, err := CommandApprover(tc.command, tc.timeout, &stderr)(context.Background(), req)
			if took := time.Since(start); took > tc.within {
				t.Errorf("took %s, want under %s", took, tc.within)
			}
			if tc.err == "" {
				if err != nil || d.Decision != escalate.DecisionApprove {
					t.Fatalf("decision %+v, %v; want approve", d, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
		})
	}
}

func TestCommandApproverStopsWhenTold(t *testing.T) {
	req := &escalate.Request{Schema: escalate.SchemaID, Version: escalate.SchemaVersion, Grant: "verify"}
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(200*time.Millisecond, func() { cancel(errors.New("wrun got terminated")) })
	start := time.Now()
	_, err := CommandApprover("sleep 600", time.Minute, &bytes.Buffer{})(ctx, req)
	if err == nil || !strings.Contains(err.Error(), "wrun got terminated") {
		t.Fatalf("error %v, want the cause", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s", took)
	}
}

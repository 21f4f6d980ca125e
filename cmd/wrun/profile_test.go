package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileCommand: wrun profile --os darwin prints, on any system, the
// Seatbelt profile of a grant and its -D parameters, the workspace among
// them as a parameter and never in the text; --json gives both as data;
// another --os is refused with 125.
func TestProfileCommand(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "my (odd) \"ws\"")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string) {
		out, err := os.Create(filepath.Join(t.TempDir(), "out"))
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		code := execute(args, os.Stdin, out, out)
		b, _ := os.ReadFile(out.Name())
		return code, string(b)
	}
	code, text := run("profile", "--os", "darwin", "--grant", "write", "--workdir", ws)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, text)
	}
	profile, params, _ := strings.Cut(text, ";; Parameters")
	if !strings.HasPrefix(profile, "(version 1)") || !strings.Contains(profile, "(deny default (with message") {
		t.Errorf("not a deny-default profile:\n%s", profile)
	}
	if strings.Contains(profile, "my (odd)") {
		t.Errorf("the workspace path reached the profile text")
	}
	if !strings.Contains(params, "my (odd)") || !strings.Contains(params, "-D RULE_0=/\n") {
		t.Errorf("parameters lack the workspace or the root rule:\n%s", params)
	}
	code, text = run("profile", "--os", "darwin", "--grant", "verify", "--workdir", ws, "--json")
	var j struct {
		Profile string `json:"profile"`
		Params  []struct{ Name, Value string }
	}
	if code != 0 || json.Unmarshal([]byte(text), &j) != nil || !strings.HasPrefix(j.Profile, "(version 1)") || len(j.Params) == 0 {
		t.Errorf("--json: exit %d, %q", code, text)
	}
	if code, text = run("profile", "--os", "linux"); code != 125 || !strings.Contains(text, "only darwin") {
		t.Errorf("--os linux: exit %d, %q", code, text)
	}
}

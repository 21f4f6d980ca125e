package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/internal/schematest"
)

// TestExplainAndDoctorMatchTheirSchemas: explain --json and doctor --json
// validate against the schemas they name (the integration tests check
// them again, under the real sandbox); the control: doctor's old shape,
// a bare array, does not.
func TestExplainAndDoctorMatchTheirSchemas(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	for _, tc := range []struct {
		args   []string
		schema []byte
		id     string
	}{
		{[]string{"explain", "--json", "-C", dir}, explainSchemaJSON, explainSchemaID},
		{[]string{"doctor", "--json"}, doctorSchemaJSON, doctorSchemaID},
	} {
		out, err := os.CreateTemp(dir, "out")
		if err != nil {
			t.Fatal(err)
		}
		if code := execute(tc.args, nil, out, out); code != 0 {
			t.Fatalf("%v: exit %d", tc.args, code)
		}
		out.Close()
		b, _ := os.ReadFile(out.Name())
		if err := schematest.Validate(tc.schema, b); err != nil {
			t.Errorf("%v does not match its schema: %v\n%s", tc.args, err, b)
		}
		if !strings.Contains(string(b), `"schema":"`+tc.id+`"`) {
			t.Errorf("%v does not name its schema %s", tc.args, tc.id)
		}
	}
	if schematest.Validate(doctorSchemaJSON, []byte(`[{"name": "landlock", "available": true, "detail": "", "consequence": ""}]`)) == nil {
		t.Error("control: doctor's bare array validates")
	}
}

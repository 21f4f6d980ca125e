package receipt

import (
	"os"
	"testing"

	"github.com/wrun-dev/wrun/internal/schematest"
)

// ValidateLine checks one receipt line against the published schema.
func validateLine(t *testing.T, line []byte) {
	t.Helper()
	schema, err := os.ReadFile("schema/receipt.v3.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := schematest.Validate(schema, line); err != nil {
		t.Errorf("receipt does not match its schema: %v\n%s", err, line)
	}
}

func TestSampleMatchesSchema(t *testing.T) {
	r := sample(1)
	r.ID = NewID(r.Start)
	r.PID = 1
	line, err := r.Line()
	if err != nil {
		t.Fatal(err)
	}
	validateLine(t, line)
}

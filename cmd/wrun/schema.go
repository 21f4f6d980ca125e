package main

import (
	_ "embed"

	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// The formats of explain --json and doctor --json: the $ids of
// schema/explain.v1.json and schema/doctor.v1.json. A version changes with
// any change of shape a reader must know of.
const (
	explainSchemaID = "https://wrun.dev/schema/explain.v1.json"
	doctorSchemaID  = "https://wrun.dev/schema/doctor.v1.json"
)

var (
	//go:embed schema/explain.v1.json
	explainSchemaJSON []byte
	//go:embed schema/doctor.v1.json
	doctorSchemaJSON []byte
)

// explainDoc is what explain --json prints.
type explainDoc struct {
	Schema      string              `json:"schema"`
	Version     int                 `json:"version"`
	Policy      *policy.Policy      `json:"policy"`
	Enforcement sandbox.Report      `json:"enforcement"`
	Tools       []familyEnforcement `json:"tools"`
	WouldRun    bool                `json:"would_run"`
}

// doctorDoc is what doctor --json prints.
type doctorDoc struct {
	Schema   string            `json:"schema"`
	Version  int               `json:"version"`
	Features []sandbox.Feature `json:"features"`
}

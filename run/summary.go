package run

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"time"
)

// SummarySchemaID names the summary's format: the $id of
// schema/summary.v2.json. SummaryVersion changes with any change of shape
// a reader must know of.
const (
	SummarySchemaID = "https://wrun.dev/schema/summary.v2.json"
	SummaryVersion  = 2
)

//go:embed schema/summary.v2.json
var summarySchemaJSON []byte

// SummarySchema returns the published JSON Schema of the summary (a copy
// of schema/summary.v2.json). wrun does not validate its own output at run
// time; its tests check every summary they produce against it.
func SummarySchema() []byte { return bytes.Clone(summarySchemaJSON) }

// Stamp marks s as a top-level summary: its schema and version, and a run
// id when it has none (a run refused before it had one).
func (s *Summary) Stamp() *Summary {
	s.Schema, s.Version = SummarySchemaID, SummaryVersion
	if s.RunID == "" {
		s.RunID = NewID(time.Now())
	}
	return s
}

// NewID returns a fresh run id: the start time (UTC, to the second) and
// 32 random bits, "20261202T204512Z-3f9a1c0b". The summary, the request,
// the receipt and the roster entry of one run carry the same id.
func NewID(start time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return start.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

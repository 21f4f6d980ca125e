package roster

import (
	"bytes"
	_ "embed"
)

// ListingSchemaID names the format of `wrun roster --json`: the $id of
// schema/roster.v1.json. ListingVersion changes with any change of shape
// a reader must know of.
const (
	ListingSchemaID = "https://wrun.dev/schema/roster.v1.json"
	ListingVersion  = 1
)

//go:embed schema/roster.v1.json
var listingSchemaJSON []byte

// ListingSchema returns the published JSON Schema of a Listing.
func ListingSchema() []byte { return bytes.Clone(listingSchemaJSON) }

// Listing is the live runs as `wrun roster --json` prints them.
type Listing struct {
	Schema  string  `json:"schema"`
	Version int     `json:"version"`
	Runs    []Entry `json:"runs"`
}

// NewListing is the listing of runs (never null: an empty list is []).
func NewListing(runs []Entry) Listing {
	if runs == nil {
		runs = []Entry{}
	}
	return Listing{Schema: ListingSchemaID, Version: ListingVersion, Runs: runs}
}

// Package schematest checks JSON documents against wrun's published JSON
// Schemas (draft 2020-12), for tests: every request, summary, receipt,
// roster, explain and doctor document wrun's tests produce is validated
// against its schema with an off-the-shelf validator
// (github.com/santhosh-tekuri/jsonschema/v6), formats asserted.
//
// wrun itself never validates its own output at run time: only _test.go
// files import this package, and TestOnlyTestsImport fails if any other
// file does.
package schematest

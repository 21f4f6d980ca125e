// Package schematest checks JSON documents against a JSON Schema, for tests:
// wrun's tests validate every escalation request they produce against the
// published schema (escalate/schema/request.v1.json, escalate.RequestSchema).
//
// It implements only the subset of draft 2020-12 that wrun's schemas use and
// refuses any other keyword, so nothing is silently ignored. wrun itself never
// validates its own output at run time: only _test.go files import this
// package, and TestOnlyTestsImport fails if any other file does.
package schematest

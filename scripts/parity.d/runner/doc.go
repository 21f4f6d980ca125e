// Command runner is the engine of scripts/parity: it runs the test suites
// of the pinned parity corpus (scripts/parity.d/corpus.tsv) bare and under
// `wrun --grant verify`, both as an unprivileged user with a throwaway
// HOME, compares the per-test results, attributes each difference to the
// denials in wrun's JSON summary, and writes PARITY.md.
//
// It owns nothing of wrun itself: it drives the wrun binary it is given,
// exactly as a user or a harness would. It is not part of `go test ./...`
// (integration/parity_test.go holds the small subset that is).
package main

// Package darwin enforces a policy.Policy on macOS: it generates a
// Seatbelt profile from the same computed policy that drives Landlock on
// Linux and runs the child under /usr/bin/sandbox-exec, and it reads the
// sandbox's denial reports from the system log into the denial records
// the Linux side produces.
//
// It owns:
//
//   - the profile generator (Generate): deny by default, then only
//     allows, one per policy rule and kind of operation, each carving out
//     (require-not) the hidden, protected and pinned paths it would
//     otherwise cover, so that no protection depends on how Seatbelt
//     orders a specific operation's rule against a wildcard's. Every path
//     is a -D parameter, canonicalised as macOS matches it; the text
//     depends only on how the paths relate;
//   - the mapping of the policy's rights onto Seatbelt operations
//     (opGroups), and what a command-line program needs of macOS beyond
//     files, each with why and what it risks (needs.go: sysctls by name,
//     mach services), and what macOS adds to a policy (Adapt: the per-user
//     cache directory);
//   - the parser of `log stream --style ndjson` reports (ParseLogLine) and
//     the reader of the stream;
//   - the decision for a wrun inside an enclosing Seatbelt sandbox (Nest);
//   - on macOS only (*_darwin.go): running sandbox-exec and log stream.
//
// Everything but the *_darwin files is pure Go without a build tag, so it
// is tested on Linux: an evaluator of the SBPL subset the generator writes
// (sbpl_test.go) states the semantics it assumes and decides every request
// under each reading of what real Macs are reported to do, and a parity
// test holds the profile to the answers of package access's model of the
// policy. docs/macos.md says what has and has not run on a Mac.
package darwin

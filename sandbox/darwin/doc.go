// Package darwin enforces a policy.Policy on macOS: it generates a
// Seatbelt profile from the same computed policy that drives Landlock on
// Linux and runs the child under /usr/bin/sandbox-exec, and it reads the
// sandbox's denial reports from the system log into the denial records
// the Linux side produces.
//
// It owns:
//
//   - the profile generator (Generate): deny by default, an allow per
//     policy rule and kind of operation with the hidden paths beneath it
//     taken out, then the denials of protected paths (Seatbelt takes the
//     last matching rule). Every path is a -D parameter, canonicalised as
//     macOS matches it; the text depends only on how the paths relate;
//   - the mapping of the policy's rights onto Seatbelt operations
//     (opGroups), and the mach services a command-line program needs,
//     each with why and what it risks (machServices);
//   - the parser of `log stream --style ndjson` reports (ParseLogLine);
//   - the decision for a wrun inside an enclosing Seatbelt sandbox (Nest);
//   - on macOS only (run_darwin.go): running sandbox-exec and log stream.
//
// Everything but run_darwin.go is pure Go without a build tag, so it is
// tested on Linux: an evaluator of the SBPL subset the generator writes
// (sbpl_test.go) states the semantics it assumes, and a parity test holds
// the profile to the answers of package access's model of the policy.
package darwin

// Package escalate turns what the sandbox refused into data a caller can act
// on: every denial becomes part of an escalation request that says what was
// denied, which part of the grant withheld it, and what to do instead.
//
// Whether the kernel will deny an operation under the policy
// (Analyzer.Check, WouldDeny, Analyzer.Rights) is package access's answer,
// for the platform the Facts describe: escalate keeps no second copy of
// Landlock's rules, and takes access.Op, access.Missing and the names of
// operations and rights from access. (The exact observer in sandbox/linux
// asks the same model directly, not through escalate.)
//
// It owns, platform-neutrally and without touching the kernel:
//
//   - classification: which grant field, rule, hidden or protected path
//     withheld a denial, and why (Analyzer.Classify);
//   - the catalogue of alternatives, a Go table (catalogue.go): for each
//     kind of denial, concrete runnable alternatives ordered from the
//     narrowest (a sanctioned route, an extra path, a grant field change,
//     asking the parent), each checked against the ceiling. Disabling the
//     sandbox is never one of them, and protected paths get no widening at
//     all;
//   - the escalation request (Request), its versioned JSON Schema
//     (schema/request.v3.json, RequestSchema; tests check requests against
//     it with internal/schematest), and the one-line plain-words summary of
//     each denial for stderr;
//   - inferred denials: a heuristic reading of the child's stderr for
//     EACCES, EPERM and EROFS messages, kept only when the policy would
//     indeed deny them (Analyzer.Infer); and one refusal that is not the
//     kernel's: a git push under shell=verify, which verify sends to a
//     remote helper that refuses it (OpGitPush, rule git-push, whose
//     alternative is the grant that may push);
//   - approval: an approver's decision (ParseDecision), turned into a
//     widened grant and extra paths that stay inside the ceiling (Approve).
//     The ceiling itself is computed by package run (run.Resolve), the one
//     place a grant is narrowed: a nested wrun can never widen its parent.
//
// Everything here is a pure function of its inputs; facts about the disk are
// passed in (Facts.Exists), never read.
package escalate

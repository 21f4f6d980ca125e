// Package darwin will enforce a policy.Policy on macOS by generating a
// Seatbelt profile from it and running the child under sandbox-exec, on the
// same grant -> policy computation as Linux. It is not written yet: on
// macOS, wrun refuses to run (exit 125) rather than run unsandboxed.
package darwin

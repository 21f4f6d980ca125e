package main

import "github.com/wrun-dev/wrun/run"

// exitWrunFailed is wrun's exit status when it fails before the child starts
// (bad flag, bad grant, unenforceable grant, unreadable path). Otherwise
// wrun exits with the child's own status, 128+N when signal N killed the
// child, 126 when the command could not be executed and 127 when it was not
// found (sandbox.StartError carries those two); see run.ExitFailed.
const exitWrunFailed = run.ExitFailed

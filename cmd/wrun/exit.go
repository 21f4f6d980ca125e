package main

// Exit statuses of wrun itself. Otherwise wrun exits with the child's own
// status, or 128+N when signal N killed the child.
const (
	// exitWrunFailed: wrun failed before the child started (bad flag, bad
	// grant, unenforceable grant, unreadable path).
	exitWrunFailed = 125
	// exitNotExecutable: the command was found but could not be executed.
	exitNotExecutable = 126
	// exitNotFound: the command was not found.
	exitNotFound = 127
)

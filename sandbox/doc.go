// Package sandbox holds what every platform's enforcement shares: the
// options, the command to run, its result, the errors that map to wrun's
// exit statuses, and the report of what the kernel enforces (and what it
// cannot). The platforms live beneath it: sandbox/linux (Landlock and
// seccomp) and sandbox/darwin (Seatbelt).
//
// Nothing here calls the kernel.
package sandbox

// Package roster owns the registry of live runs on this machine
// ($XDG_RUNTIME_DIR/wrun, else $XDG_STATE_HOME/wrun/roster) and the
// write-scope conflict guard built on it.
//
// Each live run has one entry file, locked (flock, exclusive) by the run
// for as long as it lives: the kernel drops the lock when the process
// ends however it ends, so an entry whose lock can be taken is a dead
// run's, and is ignored (and removed when the registry is next changed).
// An entry appears under its final name only once locked (it is written
// under a temporary name and renamed), and the check for a conflicting
// writer and the registration of a new run happen under one lock on the
// registry, so two runs starting at the same instant cannot both pass.
// Write scopes are compared by canonical path and by the device and inode
// of each ancestor, so symbolic links and bind mounts do not hide an
// overlap.
package roster

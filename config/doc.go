// Package config owns wrun's settings files and roles: the user's config
// ($XDG_CONFIG_HOME/wrun/config.toml, trusted: it is the user's own) and a
// repository's .wrun.toml (untrusted input: it may only narrow), the
// built-in roles (scout, planner, verifier, worker, conductor), and the
// precedence that turns them and the command line into one run's request:
// built-in < user config < repository (narrowing only) < flags (within the
// ceiling). Every effective setting carries where it came from, so that
// `wrun config` can say so.
//
// It reads files and computes; it runs nothing and enforces nothing: the
// grant it resolves goes to run.Resolve, which narrows it to its bounds.
package config

// Package policy turns a grant into a concrete, platform-neutral policy:
// which paths the child may read, write or execute and why, which paths are
// hidden (credential stores) or protected (git config and hooks), what the
// network and IPC scopes are, and the exact environment the child gets.
//
// Data flows one way: grant.Grant plus facts about the host (Host) go in, a
// Policy comes out; sandbox/linux and sandbox/darwin turn a Policy into
// kernel enforcement. Nothing here calls the kernel. The one place this
// package reads the disk is through Lister, when it must enumerate siblings
// to express "everything but X" with allow-only rules (Carve).
package policy

//go:build linux

package linux

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/policy"
)

// llFileRights are the rights a rule on a file (not a directory) may hold.
const llFileRights = llExecute | llWriteFile | llReadFile | llTruncate | llIoctlDev

var accessMap = []struct {
	p  policy.Access
	ll uint64
}{
	{policy.Execute, llExecute}, {policy.WriteFile, llWriteFile}, {policy.ReadFile, llReadFile},
	{policy.ReadDir, llReadDir}, {policy.RemoveDir, llRemoveDir}, {policy.RemoveFile, llRemoveFile},
	{policy.MakeChar, llMakeChar}, {policy.MakeDir, llMakeDir}, {policy.MakeReg, llMakeReg},
	{policy.MakeSock, llMakeSock}, {policy.MakeFifo, llMakeFifo}, {policy.MakeBlock, llMakeBlock},
	{policy.MakeSym, llMakeSym}, {policy.Refer, llRefer}, {policy.Truncate, llTruncate},
	{policy.IoctlDev, llIoctlDev},
}

func toLandlock(a policy.Access) uint64 {
	var out uint64
	for _, m := range accessMap {
		if a&m.p != 0 {
			out |= m.ll
		}
	}
	return out
}

// rulesetAttr is struct landlock_ruleset_attr up to the scoped field (ABI
// 6). Older kernels accept the larger size as long as the fields they do not
// know are zero.
type rulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

// pathBeneathAttr is the packed struct landlock_path_beneath_attr; the
// kernel reads its first 12 bytes.
type pathBeneathAttr struct {
	allowed  uint64
	parentFd int32
}

// fsRule is one file system rule ready to be added.
type fsRule struct {
	Path     string
	Access   uint64
	Optional bool
	// NoFollow: do not follow a symlink in the last component (siblings
	// found by carving).
	NoFollow bool
	// Beneath: reach Path from this directory without following symlinks.
	Beneath string
}

// ruleset is a Landlock ruleset file descriptor, built but not applied.
type ruleset struct {
	fd int
	// skipped lists optional paths that did not exist.
	skipped []string
}

func (r *ruleset) close() {
	if r != nil && r.fd >= 0 {
		unix.Close(r.fd)
		r.fd = -1
	}
}

// buildRuleset creates the one ruleset that covers every category (file
// system, TCP, scopes), so that REFER works across all rules.
func buildRuleset(attr rulesetAttr, rules []fsRule) (*ruleset, error) {
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return nil, fmt.Errorf("creating the Landlock ruleset: %w", errno)
	}
	rs := &ruleset{fd: int(fd)}
	for _, r := range rules {
		if err := rs.addPath(r, attr.handledFS); err != nil {
			rs.close()
			return nil, err
		}
	}
	return rs, nil
}

func (rs *ruleset) addPath(r fsRule, handled uint64) error {
	fd, err := openRulePath(r)
	if err != nil {
		// An optional path that is gone or that wrun cannot reach gets no
		// rule: the child then has less access, never more.
		if r.Optional && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ELOOP)) {
			rs.skipped = append(rs.skipped, r.Path)
			return nil
		}
		return fmt.Errorf("sandbox rule for %s: %w", r.Path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("sandbox rule for %s: %w", r.Path, err)
	}
	access := r.Access & handled
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
	case unix.S_IFLNK:
		// Only reached with NoFollow: a link's target has rules of its own.
		return nil
	default:
		access &= llFileRights
	}
	if access == 0 {
		return nil
	}
	attr := pathBeneathAttr{allowed: access, parentFd: int32(fd)}
	const ruleTypePathBeneath = 1
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rs.fd), ruleTypePathBeneath, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("sandbox rule for %s: landlock_add_rule: %w", r.Path, errno)
	}
	return nil
}

// openRulePath opens the path a rule is attached to, as O_PATH.
func openRulePath(r fsRule) (int, error) {
	if r.Beneath != "" && r.Path != r.Beneath {
		rel, err := filepath.Rel(r.Beneath, r.Path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return -1, fmt.Errorf("%s is not beneath %s", r.Path, r.Beneath)
		}
		return openBeneath(r.Beneath, rel, unix.O_PATH)
	}
	flags := unix.O_PATH | unix.O_CLOEXEC
	if r.NoFollow {
		flags |= unix.O_NOFOLLOW
	}
	return unix.Open(r.Path, flags, 0)
}

// openBeneath opens base/rel without following any symbolic link on the
// way (openat2 RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH), so a link planted in
// untrusted content cannot redirect the open.
func openBeneath(base, rel string, flags int) (int, error) {
	dfd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(dfd)
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH}
	fd, err := unix.Openat2(dfd, rel, &how)
	if errors.Is(err, unix.ELOOP) {
		return -1, fmt.Errorf("a symbolic link lies on the way from %s to %s; refusing to follow it: %w", base, rel, err)
	}
	return fd, err
}

// restrictSelf applies the ruleset to the calling thread only. The caller
// must have set no_new_privs (or hold CAP_SYS_ADMIN). With logNewExec
// (ABI 7) the kernel writes audit records of the denials of the programs
// the thread goes on to execute, which it otherwise leaves out.
func restrictSelf(rs *ruleset, logNewExec bool) error {
	var flags uintptr
	if logNewExec {
		flags = llRestrictSelfLogNewExecOn
	}
	_, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rs.fd), flags, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

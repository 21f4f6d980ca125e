//go:build linux

package linux

import (
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/grant"
)

// TestProbeMountAPI: the mount calls the stage uses are probed by calling
// them, not by the kernel's version; on a kernel that has them (5.12 and
// later, as every kernel with Landlock does) the probe finds them.
func TestProbeMountAPI(t *testing.T) {
	f := Probe()
	if f.LandlockABI < 1 {
		t.Skipf("needs a kernel with Landlock (ABI 1, Linux 5.13, which has the mount calls); this one: %s", f.LandlockError)
	}
	if !mountAPI() || f.NoMountAPI {
		t.Fatalf("open_tree, move_mount or mount_setattr reported missing on %s (Landlock ABI %d)", f.Kernel, f.LandlockABI)
	}
	if !f.Env().MountAPI {
		t.Error("Env lost the mount calls")
	}
}

// TestFeaturesEnv: a machine's row of the matrix comes from its features,
// and a nested wrun is never counted on for namespaces.
func TestFeaturesEnv(t *testing.T) {
	f := Features{LandlockABI: 4, LandlockErrata: errataFixed, Seccomp: true, UserNS: true}
	e := f.Env()
	if !e.stage() || e.Name() != "a user with user namespaces, Landlock ABI 4" {
		t.Errorf("row %q, stage %v", e.Name(), e.stage())
	}
	if rs := e.Refusals(grant.Grant{Files: grant.FilesWrite, Shell: grant.ShellVerify}, Need{CreateBeside: true}); len(rs) != 0 {
		t.Errorf("ABI 4 with user namespaces refuses %+v", rs)
	}
	f.Nested = true
	if e := f.Env(); e.stage() || !strings.Contains(e.Name(), "inside another wrun") {
		t.Errorf("nested: row %q, stage %v", e.Name(), e.stage())
	}
	f = Features{LandlockABI: 7, LandlockErrata: errataFixed, Seccomp: true, UserNS: true, ProcMasked: true}
	lines := f.Env().Mechanisms(grant.Grant{}, Need{})
	var procs string
	for _, l := range lines {
		if strings.HasPrefix(l, "no access to other processes'") {
			procs = l
		}
	}
	if !strings.Contains(procs, "Landlock") || strings.Contains(procs, mechFreshProc) || !strings.Contains(procs, "/proc lists") {
		t.Errorf("masked /proc: %q", procs)
	}
}

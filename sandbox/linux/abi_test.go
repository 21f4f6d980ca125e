package linux

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// errataFixed is the errata mask of a kernel with every known fix: errata
// 1, 2 and 3 (what Linux 6.18 reports).
const errataFixed = 0b111

// The table's entries, written out here rather than taken from it.
const (
	wantFSv1     = 1<<13 - 1 // execute .. make_sym
	wantTCP      = llNetBindTCP | llNetConnectTCP
	wantScopes   = llScopeAbstractUnix | llScopeSignal
	wantLogFlags = llRestrictSelfLogSameExecOff | llRestrictSelfLogNewExecOn | llRestrictSelfLogSubdomainsOff
)

func TestLandlockVersionsTable(t *testing.T) {
	var seen llRights
	lastKernel := []int{0}
	for i, v := range landlockVersions() {
		if v.ABI != i+1 {
			t.Errorf("entry %d is ABI %d: the table lists every version, in order", i, v.ABI)
		}
		if v.Adds == (llRights{}) || v.Meaning == "" {
			t.Errorf("ABI %d: says nothing of what it adds", v.ABI)
		}
		if v.Adds.overlaps(seen) {
			t.Errorf("ABI %d adds what an earlier version added: %+v", v.ABI, v.Adds)
		}
		seen = seen.union(v.Adds)
		if v.Kernel != "" {
			var k []int
			for _, part := range strings.Split(v.Kernel, ".") {
				n, err := strconv.Atoi(part)
				if err != nil {
					t.Fatalf("ABI %d: kernel %q", v.ABI, v.Kernel)
				}
				k = append(k, n)
			}
			if k[0] < lastKernel[0] || k[0] == lastKernel[0] && len(lastKernel) > 1 && k[1] <= lastKernel[1] {
				t.Errorf("ABI %d: kernel %s is not newer than the version before", v.ABI, v.Kernel)
			}
			lastKernel = k
		} else if i+1 < len(landlockVersions()) && landlockVersions()[i+1].Kernel != "" {
			t.Errorf("ABI %d has no kernel, but a later version has", v.ABI)
		}
		if v.Feature != "" && (v.With == "" || v.Without == "") {
			t.Errorf("ABI %d: doctor row %q without both consequences", v.ABI, v.Feature)
		}
		if v.Missing != "" && (v.Feature == "" || v.Without == "") {
			t.Errorf("ABI %d: gap %q without a doctor row and a consequence", v.ABI, v.Missing)
		}
		if v.Essential && v.Missing == "" {
			t.Errorf("ABI %d: essential, but no gap", v.ABI)
		}
	}
	if !seen.covers(llRights{FS: toLandlockAll(), Net: wantTCP, Scoped: wantScopes}) {
		t.Errorf("the table misses rights wrun uses: has %+v", seen)
	}
}

// toLandlockAll is every Landlock file system bit wrun names.
func toLandlockAll() uint64 {
	return llExecute | llWriteFile | llReadFile | llReadDir | llRemoveDir | llRemoveFile | llMakeChar |
		llMakeDir | llMakeReg | llMakeSock | llMakeFifo | llMakeBlock | llMakeSym | llRefer | llTruncate |
		llIoctlDev | llResolveUnix
}

func TestLandlockRightsPerABI(t *testing.T) {
	tests := []struct {
		abi  int
		want llRights
	}{
		{0, llRights{}},
		{1, llRights{FS: wantFSv1}},
		{2, llRights{FS: wantFSv1 | llRefer}},
		{3, llRights{FS: wantFSv1 | llRefer | llTruncate}},
		{4, llRights{FS: wantFSv1 | llRefer | llTruncate, Net: wantTCP}},
		{5, llRights{FS: wantFSv1 | llRefer | llTruncate | llIoctlDev, Net: wantTCP}},
		{6, llRights{FS: wantFSv1 | llRefer | llTruncate | llIoctlDev, Net: wantTCP, Scoped: wantScopes}},
		{7, llRights{FS: wantFSv1 | llRefer | llTruncate | llIoctlDev, Net: wantTCP, Scoped: wantScopes, Flags: wantLogFlags}},
		{8, llRights{FS: wantFSv1 | llRefer | llTruncate | llIoctlDev, Net: wantTCP, Scoped: wantScopes, Flags: wantLogFlags | llRestrictSelfTSync}},
		{9, llRights{FS: wantFSv1 | llRefer | llTruncate | llIoctlDev | llResolveUnix, Net: wantTCP, Scoped: wantScopes, Flags: wantLogFlags | llRestrictSelfTSync}},
		// A version newer than the table knows: what the table knows.
		{10, llRights{FS: wantFSv1 | llRefer | llTruncate | llIoctlDev | llResolveUnix, Net: wantTCP, Scoped: wantScopes, Flags: wantLogFlags | llRestrictSelfTSync}},
	}
	for _, tt := range tests {
		k := landlockKernel{ABI: tt.abi, Errata: errataFixed}
		if got := k.rights(); got != tt.want {
			t.Errorf("ABI %d: rights %+v, want %+v", tt.abi, got, tt.want)
		}
		if got := handledFS(tt.abi); got != tt.want.FS {
			t.Errorf("handledFS(%d) = %#x, want %#x", tt.abi, got, tt.want.FS)
		}
	}
}

// TestLandlockErrata checks how the errata mask is read: erratum N is bit
// N-1, and a kernel with ABI 6 that does not report erratum 2 fixed is not
// used to scope signals (go-landlock's check is errata&0x2).
func TestLandlockErrata(t *testing.T) {
	var mask uint64
	numbers := map[int]bool{}
	for _, e := range landlockErrata() {
		if numbers[e.Number] || e.Number < 1 {
			t.Errorf("erratum %d: numbers are unique, from 1", e.Number)
		}
		numbers[e.Number] = true
		mask |= 1 << (e.Number - 1)
		if e.Fixes == "" || e.Unfixed == "" {
			t.Errorf("erratum %d: says nothing", e.Number)
		}
	}
	if mask != errataFixed {
		t.Errorf("the errata make the mask %#x, want %#x", mask, errataFixed)
	}
	tests := []struct {
		name       string
		k          landlockKernel
		wantScoped uint64
		unfixed    []int
	}{
		{"ABI 6, every fix", landlockKernel{6, errataFixed}, wantScopes, nil},
		{"ABI 6, no errata reported", landlockKernel{6, 0}, llScopeAbstractUnix, []int{1, 2, 3}},
		{"ABI 6, erratum 2 fixed alone", landlockKernel{6, 0b10}, wantScopes, []int{1, 3}},
		{"ABI 7, erratum 2 unfixed", landlockKernel{7, 0b101}, llScopeAbstractUnix, []int{2}},
		{"ABI 9, erratum 2 unfixed", landlockKernel{9, 0b101}, llScopeAbstractUnix, []int{2}},
		// Below ABI 4 only erratum 3 concerns the kernel.
		{"ABI 3, no errata reported", landlockKernel{3, 0}, 0, []int{3}},
		{"ABI 5, no errata reported", landlockKernel{5, 0}, 0, []int{1, 3}},
		{"no Landlock", landlockKernel{0, 0}, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.k.rights().Scoped; got != tt.wantScoped {
				t.Errorf("scoped %#x, want %#x", got, tt.wantScoped)
			}
			var unfixed []int
			for _, e := range tt.k.unfixed() {
				unfixed = append(unfixed, e.Number)
			}
			if !reflect.DeepEqual(unfixed, tt.unfixed) {
				t.Errorf("unfixed %v, want %v", unfixed, tt.unfixed)
			}
			// Only erratum 2 takes anything away.
			if got, want := tt.k.rights().FS, handledFS(tt.k.ABI); got != want {
				t.Errorf("file system rights %#x, want %#x", got, want)
			}
		})
	}
}

func TestLandlockMessages(t *testing.T) {
	want := []string{
		"",
		"Landlock ABI 1 (Linux 5.13)",
		"Landlock ABI 2 (Linux 5.19)",
		"Landlock ABI 3 (Linux 6.2)",
		"Landlock ABI 4 (Linux 6.7)",
		"Landlock ABI 5 (Linux 6.10)",
		"Landlock ABI 6 (Linux 6.12)",
		"Landlock ABI 7 (Linux 6.15)",
		"Landlock ABI 8 (Linux 7.0)",
		"Landlock ABI 9 (a kernel newer than Linux 7.0)",
	}
	for abi := 1; abi < len(want); abi++ {
		if got := abiName(abi); got != want[abi] {
			t.Errorf("abiName(%d) = %q, want %q", abi, got, want[abi])
		}
	}
	for _, tt := range []struct {
		r    llRights
		want int
	}{
		{llRights{FS: llRefer}, 2},
		{llRights{Net: llNetConnectTCP}, 4},
		{llRights{Scoped: llScopeSignal}, 6},
		{llRights{Flags: llRestrictSelfLogNewExecOn}, 7},
		{llRights{FS: llResolveUnix}, 9},
		{llRights{FS: 1 << 40}, 0},
	} {
		if got := firstWith(tt.r).ABI; got != tt.want {
			t.Errorf("firstWith(%+v) is ABI %d, want %d", tt.r, got, tt.want)
		}
	}
	scopes := landlockVersionOf(6)
	needs := []struct {
		k    landlockKernel
		want string
	}{
		{landlockKernel{5, errataFixed}, "Landlock ABI 6 (Linux 6.12)"},
		{landlockKernel{6, errataFixed}, "Landlock ABI 6 (Linux 6.12)"},
		{landlockKernel{6, 0}, "Landlock ABI 6 (Linux 6.12) with erratum 2 fixed (threads of one process may always signal each other)"},
		{landlockKernel{7, 0b101}, "Landlock ABI 6 (Linux 6.12) with erratum 2 fixed (threads of one process may always signal each other)"},
	}
	for _, tt := range needs {
		if got := tt.k.need(scopes); got != tt.want {
			t.Errorf("%+v: need %q, want %q", tt.k, got, tt.want)
		}
	}
	// Unfixed errata that take nothing away are not needed.
	if got := (landlockKernel{7, 0b010}).need(landlockVersionOf(4)); got != "Landlock ABI 4 (Linux 6.7)" {
		t.Errorf("TCP needs %q", got)
	}
}

func TestLandlockGaps(t *testing.T) {
	const (
		refer    = "renames and links across directories (REFER): Landlock ABI 2 (Linux 5.19)"
		truncate = "truncate control: Landlock ABI 3 (Linux 6.2) [essential]"
		ioctl    = "ioctl control on devices: Landlock ABI 5 (Linux 6.10)"
		signal   = "signal scoping: Landlock ABI 6 (Linux 6.12) [essential]"
		erratum2 = "signal scoping: Landlock ABI 6 (Linux 6.12) with erratum 2 fixed (threads of one process may always signal each other) [essential]"
	)
	tests := []struct {
		k    landlockKernel
		want []string
	}{
		{landlockKernel{0, 0}, []string{"Landlock (disabled): Landlock ABI 1 (Linux 5.13) [essential]"}},
		{landlockKernel{1, 0}, []string{refer, truncate, ioctl, signal}},
		{landlockKernel{2, 0}, []string{truncate, ioctl, signal}},
		{landlockKernel{3, 0}, []string{ioctl, signal}},
		{landlockKernel{4, 0}, []string{ioctl, signal}},
		{landlockKernel{5, 0}, []string{signal}},
		{landlockKernel{6, 0}, []string{erratum2}},
		{landlockKernel{6, errataFixed}, nil},
		{landlockKernel{7, errataFixed}, nil},
		{landlockKernel{7, 0b101}, []string{erratum2}},
		{landlockKernel{8, errataFixed}, nil},
		{landlockKernel{9, errataFixed}, nil},
	}
	for _, tt := range tests {
		var got []string
		for _, g := range tt.k.gaps("disabled") {
			s := g.What + ": " + g.Need
			if g.Essential {
				s += " [essential]"
			}
			if g.Consequence == "" {
				t.Errorf("%+v: gap %q says not what follows", tt.k, g.What)
			}
			got = append(got, s)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%+v: gaps\n%q\nwant\n%q", tt.k, got, tt.want)
		}
	}
}

func TestLandlockDoctor(t *testing.T) {
	rows := []string{"landlock", "landlock.refer", "landlock.truncate", "landlock.tcp", "landlock.ioctl_dev",
		"landlock.scopes", "landlock.audit", "landlock.unix_path", "landlock.errata"}
	tests := []struct {
		k         landlockKernel
		available []string
		errata    string // the errata row's detail
	}{
		{landlockKernel{0, 0}, nil, "0x0: none reported fixed"},
		{landlockKernel{5, 0}, rows[:5], "0x0: none reported fixed"},
		{landlockKernel{6, 0}, rows[:5], "0x0: none reported fixed"},
		{landlockKernel{6, 0b10}, rows[:6], "0x2: errata 2 fixed"},
		{landlockKernel{7, errataFixed}, append(rows[:7:7], "landlock.errata"), "0x7: errata 1, 2, 3 fixed"},
		{landlockKernel{9, errataFixed}, rows, "0x7: errata 1, 2, 3 fixed"},
	}
	for _, tt := range tests {
		feats := tt.k.doctor("disabled")
		var names, available []string
		for _, f := range feats {
			names = append(names, f.Name)
			if f.Available {
				available = append(available, f.Name)
			}
			if f.Detail == "" || f.Consequence == "" {
				t.Errorf("%+v: row %+v is incomplete", tt.k, f)
			}
		}
		if !reflect.DeepEqual(names, rows) {
			t.Errorf("%+v: rows %q, want %q", tt.k, names, rows)
		}
		if !reflect.DeepEqual(available, tt.available) {
			t.Errorf("%+v: available %q, want %q", tt.k, available, tt.available)
		}
		if got := feats[len(feats)-1].Detail; got != tt.errata {
			t.Errorf("%+v: errata %q, want %q", tt.k, got, tt.errata)
		}
	}
	// What the rows say, at ABI 5 and at ABI 6 without the signal fix.
	byName := func(fs []sandbox.Feature, name string) sandbox.Feature {
		for _, f := range fs {
			if f.Name == name {
				return f
			}
		}
		t.Fatalf("no row %q", name)
		return sandbox.Feature{}
	}
	f := byName(landlockKernel{5, 0}.doctor(""), "landlock.scopes")
	if f.Detail != "Landlock ABI 6 (Linux 6.12): scoping signals and abstract UNIX sockets to the sandbox" || !strings.Contains(f.Consequence, "unless another mechanism holds it") {
		t.Errorf("ABI 5: %+v", f)
	}
	f = byName(landlockKernel{6, 0}.doctor(""), "landlock.scopes")
	if !strings.Contains(f.Detail, "with erratum 2 fixed") {
		t.Errorf("ABI 6 without the fix: %+v", f)
	}
	f = byName(landlockKernel{6, 0}.doctor(""), "landlock.errata")
	if !strings.Contains(f.Consequence, "erratum 2") || !strings.Contains(f.Consequence, "signals are not scoped") {
		t.Errorf("ABI 6 without the fix: %+v", f)
	}
	if f := byName(landlockKernel{0, 0}.doctor("disabled"), "landlock"); f.Detail != "disabled" {
		t.Errorf("no Landlock: %+v", f)
	}
	if f := byName(landlockKernel{7, errataFixed}.doctor(""), "landlock"); f.Detail != "ABI 7" {
		t.Errorf("ABI 7: %+v", f)
	}
}

func TestLandlockNetworkIPC(t *testing.T) {
	const (
		tcpAndSeccomp = "network: off: TCP bind and connect are refused (Landlock), and no socket family but UNIX can be created (seccomp)"
		seccompOnly   = "network: off: no socket family but UNIX can be created (seccomp)"
		signals       = "signals: only to processes inside the sandbox"
		noSignals     = "signals: NOT limited on this kernel (see below)"
		unixClosed    = "UNIX sockets outside the sandbox (D-Bus, ssh agent, docker, tmux): not reachable"
		unixOpen      = "UNIX sockets outside the sandbox: reachable (desktop=on)"
		refused       = "always refused: ptrace, process_vm_*, io_uring, bpf, perf_event_open, userfaultfd, keyrings, mount, module and clock calls, TIOCSTI/TIOCLINUX"
		byArgument    = "refused by argument: new user namespaces (unshare/clone with CLONE_NEWUSER, setns), signals to wrun's own threads, priority, scheduling and resource limits of a process outside the sandbox, setuid and setgid mode bits"
	)
	off, on := policy.Network{}, policy.Network{Allow: true}
	desktop := policy.IPC{AbstractUnixOutside: true, PathUnixOutside: true}
	tests := []struct {
		name    string
		k       landlockKernel
		net     policy.Network
		ipc     policy.IPC
		seccomp bool
		want    []string
	}{
		{"ABI 7", landlockKernel{7, errataFixed}, off, policy.IPC{}, true, []string{tcpAndSeccomp, signals, unixClosed, refused, byArgument}},
		{"ABI 7, network, desktop", landlockKernel{7, errataFixed}, on, desktop, true, []string{"network: allowed", signals, unixOpen, refused, byArgument}},
		{"ABI 3", landlockKernel{3, errataFixed}, off, policy.IPC{}, true, []string{seccompOnly, noSignals, unixClosed, refused, byArgument}},
		{"ABI 6 without the fix", landlockKernel{6, 0}, off, policy.IPC{}, true, []string{tcpAndSeccomp, noSignals, unixClosed, refused, byArgument}},
		{"ABI 9 without seccomp", landlockKernel{9, errataFixed}, off, policy.IPC{}, false,
			[]string{"network: off: TCP bind and connect are refused (Landlock)", signals, unixClosed}},
		{"ABI 7 without seccomp", landlockKernel{7, errataFixed}, off, policy.IPC{}, false,
			[]string{"network: off: TCP bind and connect are refused (Landlock)", signals,
				"UNIX sockets outside the sandbox (D-Bus, ssh agent, docker, tmux): NOT limited on this kernel (see below)"}},
		{"nothing", landlockKernel{0, 0}, off, policy.IPC{}, false,
			[]string{"network: off, but NOT enforced on this kernel (see below)", noSignals,
				"UNIX sockets outside the sandbox (D-Bus, ssh agent, docker, tmux): NOT limited on this kernel (see below)"}},
	}
	for _, tt := range tests {
		if got := tt.k.networkIPC(tt.net, tt.ipc, tt.seccomp, false); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n%q\nwant\n%q", tt.name, got, tt.want)
		}
	}
}

package darwin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
)

// profileFor generates the profile of spec on a fresh host.
func profileFor(t *testing.T, spec string) (*policy.Policy, *profileEval) {
	t.Helper()
	p := compute(t, spec, host(t, t.TempDir()))
	prof, err := Generate(Input{Policy: p, RunID: "R"})
	if err != nil {
		t.Fatal(err)
	}
	return p, newEval(t, prof)
}

// expect checks each request's decision under spec's profile.
func expect(t *testing.T, spec string, e *profileEval, cases map[string]struct {
	r    request
	want bool
}) {
	t.Helper()
	for name, c := range cases {
		if got, _ := e.decide(t, c.r); got != c.want {
			t.Errorf("%s: %s (%v): allowed %v, want %v", spec, name, c.r, got, c.want)
		}
	}
}

type want = struct {
	r    request
	want bool
}

// No protection depends on the order of the rules: the only denials are
// (deny default) and, for what it is said not to cover, process
// information, and no allow of process information but the sandbox's own
// follows it. (decide checks the same of every decision, under every
// reading; this says it of the whole text.)
func TestOnlyDefaultDenies(t *testing.T) {
	for _, spec := range specs {
		_, e := profileFor(t, spec)
		for i, st := range e.stmts {
			if st.allow {
				continue
			}
			ok := len(st.filters) == 0 && len(st.ops) == 1 && (st.ops[0] == "default" || st.ops[0] == "process-info*")
			if !ok {
				t.Errorf("%s: statement %d denies %v %v: only (deny default) and (deny process-info*) may deny", spec, i, st.ops, st.filters)
			}
			if i > 0 && st.ops[0] == "default" {
				t.Errorf("%s: (deny default) is not the first statement", spec)
			}
		}
		for _, st := range e.stmts {
			if !st.allow || !strings.HasPrefix(st.ops[0], "process-info") || spec == "write,desktop=on" {
				continue
			}
			if len(st.filters) != 1 || !strings.Contains(sexpText(st.filters[0]), "same-sandbox") {
				t.Errorf("%s: an allow of process information beyond the sandbox: %v", spec, st.filters)
			}
		}
	}
}

func sexpText(s sexp) string {
	if !s.isLst {
		return s.atom
	}
	var parts []string
	for _, c := range s.list {
		parts = append(parts, sexpText(c))
	}
	return "(" + strings.Join(parts, " ") + ")"
}

// Item 2: sysctl reads are allowed by name. The control: names every
// runtime reads. Never kern.procargs2 (nor kern.procargs): the arguments
// and environment of every process of the user; the process list only
// with desktop=on, the routing table only with network=on.
func TestSysctlAllowlist(t *testing.T) {
	for _, s := range sysctlReads {
		for _, secret := range []string{"kern.procargs2", "kern.procargs", "kern.procargs2.1"} {
			if s.name == secret || s.prefix && strings.HasPrefix(secret, s.name) {
				t.Errorf("sysctl allowlist entry %q reaches %s", s.name, secret)
			}
		}
		if s.prefix && !strings.HasSuffix(s.name, ".") && s.name != "kern.proc.all" {
			t.Errorf("sysctl prefix %q does not end at a component", s.name)
		}
	}
	read := func(n string) request { return request{op: "sysctl-read", sysctl: n} }
	for _, spec := range []string{"inspect", "verify", "write,desktop=on"} {
		p, e := profileFor(t, spec)
		desktopOn := p.Grant.Desktop == grant.DesktopOn
		expect(t, spec, e, map[string]want{
			"hw.ncpu":                 {read("hw.ncpu"), true},
			"hw.pagesize":             {read("hw.pagesize"), true},
			"an arm CPU feature":      {read("hw.optional.arm.FEAT_AES"), true},
			"an x86 CPU feature":      {read("machdep.cpu.features"), true},
			"kern.osversion":          {read("kern.osversion"), true},
			"kern.osproductversion":   {read("kern.osproductversion"), true},
			"rosetta":                 {read("sysctl.proc_translated"), true},
			"a process by pid":        {read("kern.proc.pid.501"), true},
			"kern.procargs2":          {read("kern.procargs2"), false},
			"kern.procargs2 of a pid": {read("kern.procargs2.501"), false},
			"kern.procargs":           {read("kern.procargs"), false},
			"every process":           {read("kern.proc.all"), desktopOn},
			"routing table":           {read("net.routetable.0.0.3.0"), p.Network.Allow},
			"an unnamed sysctl":       {read("kern.bootargs"), false},
			"a sysctl write":          {request{op: "sysctl-write", sysctl: "kern.tcsm_enable"}, false},
		})
	}
}

// Item 3: with the network on, getaddrinfo works: mDNSResponder's UNIX
// socket, the DNS configuration and configd, the netsrc kernel control
// and route sockets; none of it with the network off. AF_UNIX sockets can
// be made under every grant (connecting still goes by path).
func TestDNSAndSockets(t *testing.T) {
	for _, spec := range []string{"verify", "verify,network=off", "inspect"} {
		p, e := profileFor(t, spec)
		on := p.Network.Allow
		expect(t, spec, e, map[string]want{
			"mDNSResponder's socket":       {request{op: "network-outbound", path: mDNSResponderSocket}, on},
			"mDNSResponder's service":      {request{op: "mach-lookup", mach: "com.apple.mDNSResponder"}, on},
			"DNS configuration":            {request{op: "mach-lookup", mach: "com.apple.SystemConfiguration.DNSConfiguration"}, on},
			"configd":                      {request{op: "mach-lookup", mach: "com.apple.SystemConfiguration.configd"}, on},
			"netsrc":                       {request{op: "network-outbound", control: "com.apple.netsrc"}, on},
			"another kernel control":       {request{op: "network-outbound", control: "com.apple.network.statistics"}, false},
			"a route socket":               {request{op: "system-socket", domain: "AF_ROUTE"}, on},
			"a kernel control socket":      {request{op: "system-socket", domain: "AF_SYSTEM", protocol: 2}, on},
			"an AF_UNIX socket":            {request{op: "system-socket", domain: "AF_UNIX"}, true},
			"an AF_NDRV socket":            {request{op: "system-socket", domain: "AF_NDRV"}, false},
			"a bare outbound":              {request{op: "network-outbound"}, false},
			"a TCP connect":                {request{op: "network-outbound", remoteIP: "192.0.2.1:443"}, on},
			"another daemon's socket":      {request{op: "network-outbound", path: "/private/var/run/syslog"}, false},
			"the keychain, network or not": {request{op: "mach-lookup", mach: "com.apple.SecurityServer"}, false},
		})
	}
}

// Item 4: what toolchains need quietly. The sandbox's own
// pseudo-terminals, /dev/fd, /dev/dtracehelper, POSIX semaphores,
// preferences (the global domain only), group membership, the per-user
// directories' helper; sysmond and other processes' information only with
// desktop=on. The controls: a terminal the sandbox did not make, an
// application's preferences, another process.
func TestQuietNeeds(t *testing.T) {
	pty := []string{ptyExtension}
	for _, spec := range []string{"inspect", "write", "write,desktop=on"} {
		p, e := profileFor(t, spec)
		desktopOn := p.Grant.Desktop == grant.DesktopOn
		expect(t, spec, e, map[string]want{
			"read its own pty":             {request{op: "file-read-data", path: "/dev/ttys004", ext: pty}, true},
			"write its own pty":            {request{op: "file-write-data", path: "/dev/ttys004", ext: pty}, true},
			"read another terminal":        {request{op: "file-read-data", path: "/dev/ttys003"}, false},
			"write another terminal":       {request{op: "file-write-data", path: "/dev/ttys003"}, false},
			"open /dev/ptmx":               {request{op: "file-read-data", path: "/dev/ptmx"}, true},
			"a descriptor by /dev/fd":      {request{op: "file-write-data", path: "/dev/fd/1"}, true},
			"dyld's dtracehelper":          {request{op: "file-write-data", path: "/dev/dtracehelper"}, true},
			"dtracehelper's ioctl":         {request{op: "file-ioctl", path: "/dev/dtracehelper", ioctl: "DTRACEHIOC_ADDDOF"}, true},
			"a disk":                       {request{op: "file-read-data", path: "/dev/disk0"}, false},
			"a semaphore":                  {request{op: "ipc-posix-sem", ipc: "/mp-abc"}, true},
			"global preferences":           {request{op: "user-preference-read", pref: "kCFPreferencesAnyApplication"}, true},
			"an application's preferences": {request{op: "user-preference-read", pref: "com.apple.dt.Xcode"}, false},
			"writing preferences":          {request{op: "user-preference-write", pref: "kCFPreferencesAnyApplication"}, false},
			"cfprefsd":                     {request{op: "mach-lookup", mach: "com.apple.cfprefsd.daemon"}, true},
			"cfprefsd's agent":             {request{op: "mach-lookup", mach: "com.apple.cfprefsd.agent", machLocal: true}, true},
			"preferences' shared memory":   {request{op: "ipc-posix-shm-read-data", ipc: "apple.cfprefs.501"}, true},
			"membership":                   {request{op: "mach-lookup", mach: "com.apple.system.opendirectoryd.membership"}, true},
			"dirhelper":                    {request{op: "mach-lookup", mach: "com.apple.bsd.dirhelper"}, true},
			"sysmond":                      {request{op: "mach-lookup", mach: "com.apple.sysmond"}, desktopOn},
			"another process's info":       {request{op: "process-info-pidinfo"}, desktopOn},
			"its own processes' info":      {request{op: "process-info-pidinfo", sameSandbox: true}, true},
			"an unnamed service":           {request{op: "mach-lookup", mach: "com.apple.security.agent"}, false},
		})
	}
}

// Item 5 (the profile's part): no ioctl allow lets a command type into a
// terminal (TIOCSTI), not the terminal it inherits, not /dev/tty, not
// /dev/ptmx; the ioctls a terminal program needs stay open.
func TestNoTerminalInjection(t *testing.T) {
	for _, spec := range specs {
		_, e := profileFor(t, spec)
		for _, path := range []string{"/dev/ttys003", "/dev/tty", "/dev/ptmx", "/dev/null"} {
			expect(t, spec, e, map[string]want{
				"TIOCSTI on " + path: {request{op: "file-ioctl", path: path, ioctl: "TIOCSTI"}, false},
			})
		}
		for _, cmd := range []string{"TIOCGWINSZ", "TIOCGETA", "TIOCSETA", "TIOCSPGRP"} {
			expect(t, spec, e, map[string]want{
				cmd + " on the terminal": {request{op: "file-ioctl", path: "/dev/ttys003", ioctl: cmd}, true},
				cmd + " on /dev/tty":     {request{op: "file-ioctl", path: "/dev/tty", ioctl: cmd}, true},
			})
		}
		// Every ioctl allow carries the carve-out, whatever it names.
		for _, st := range e.stmts {
			if st.allow && st.ops[0] == "file-ioctl" {
				for _, f := range st.filters {
					if !strings.Contains(sexpText(f), "(require-not (ioctl-command TIOCSTI))") {
						t.Errorf("%s: an ioctl allow without the TIOCSTI carve-out: %s", spec, sexpText(f))
					}
				}
			}
		}
	}
}

// Item 6: --allow-unix names the socket at the path itself. A symbolic
// link there, planted before the run or during it, is not followed: the
// socket it leads to stays closed, as on Linux. The directory above it is
// resolved (/tmp is /private/tmp). The control: the socket at the named
// path is open.
func TestAllowUnixDoesNotFollowLinks(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.sock")
	named := filepath.Join(dir, "agent.sock")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, named); err != nil {
		t.Fatal(err)
	}
	g, err := grant.Parse("write")
	if err != nil {
		t.Fatal(err)
	}
	p := &policy.Policy{Grant: g, IPC: policy.IPC{UnixSockets: []string{named}}}
	prof, err := Generate(Input{Policy: p, RunID: "R", Canon: ResolveExisting})
	if err != nil {
		t.Fatal(err)
	}
	realDir := Canonical(dir, ResolveExisting)
	var sock string
	for _, pr := range prof.Params {
		if strings.HasPrefix(pr.Name, "SOCKET_") {
			sock = pr.Value
		}
	}
	if sock != filepath.Join(realDir, "agent.sock") {
		t.Errorf("socket parameter %q, want %q: the link at the name must not be resolved", sock, filepath.Join(realDir, "agent.sock"))
	}
	e := newEval(t, prof)
	expect(t, "write", e, map[string]want{
		"the named socket":                {request{op: "network-outbound", path: filepath.Join(realDir, "agent.sock")}, true},
		"where a link there leads":        {request{op: "network-outbound", path: filepath.Join(realDir, "other.sock")}, false},
		"another socket in its directory": {request{op: "network-outbound", path: filepath.Join(realDir, "x.sock")}, false},
	})
	// The control for the rule itself: resolving the whole path, as
	// before issue 29, would have named the link's target.
	if full := Canonical(named, ResolveExisting); full == sock {
		t.Errorf("the test's link does not lead elsewhere (%s)", full)
	}
}

// The per-user temp directory's sibling is the per-user cache directory;
// nothing else is taken for one.
func TestUserCacheDir(t *testing.T) {
	for in, want := range map[string]string{
		"/var/folders/x1/abc123/T/":         "/var/folders/x1/abc123/C",
		"/var/folders/x1/abc123/T":          "/var/folders/x1/abc123/C",
		"/private/var/folders/x1/abc123/T/": "/private/var/folders/x1/abc123/C",
		"/tmp":                              "",
		"":                                  "",
		"/var/folders/x1/abc123/T/sub":      "",
		"/var/folders/x1/abc123/C/":         "",
		"/home/u/var/folders/x1/abc123/T/":  "",
		"/var/folders/x1/../T/":             "",
		"/var/folders/./x1/T":               "",
	} {
		got := UserCacheDir(in)
		if got != want {
			t.Errorf("UserCacheDir(%q) = %q, want %q", in, got, want)
		}
	}
}

// Item 4's cache directory: writable under shell=full (the user's caches
// are shared there), read-only under narrower grants, where clang keeps
// its module cache in the private temp dir instead. The input policy is
// not changed.
func TestAdaptUserCache(t *testing.T) {
	h := host(t, t.TempDir())
	cache := filepath.Join(filepath.Dir(h.TempDir), "folders", "C")
	for _, spec := range []string{"full", "verify", "write"} {
		p := compute(t, spec, h)
		p.Env = append(p.Env, clangModuleCache+"=/Users/u/elsewhere")
		before := len(p.Rules)
		a := Adapt(p, cache)
		if len(p.Rules) != before || !contains(p.Env, clangModuleCache+"=/Users/u/elsewhere") {
			t.Fatalf("%s: Adapt changed its input", spec)
		}
		prof, err := Generate(Input{Policy: a, RunID: "R"})
		if err != nil {
			t.Fatal(err)
		}
		e := newEval(t, prof)
		full := spec == "full"
		modules := filepath.Join(cache, "org.llvm.clang", "ModuleCache", "x.pcm")
		expect(t, spec, e, map[string]want{
			"create in the user cache dir": {request{op: "file-write-create", path: Canonical(modules, nil)}, full},
			"read the user cache dir":      {request{op: "file-read-data", path: Canonical(modules, nil)}, true},
		})
		private := clangModuleCache + "=" + filepath.Join(p.TempDir, "clang-module-cache")
		if got := contains(a.Env, private); got == full {
			t.Errorf("%s: env has %s: %v, want %v", spec, private, got, !full)
		}
		if !full && contains(a.Env, clangModuleCache+"=/Users/u/elsewhere") {
			t.Errorf("%s: the caller's module cache is still set", spec)
		}
		if !full {
			expect(t, spec, e, map[string]want{
				"create in the private module cache": {request{op: "file-write-create", path: Canonical(filepath.Join(p.TempDir, "clang-module-cache", "x.pcm"), nil)}, true},
			})
		}
	}
	// No per-user cache directory known: nothing added under full.
	p := compute(t, "full", h)
	if a := Adapt(p, ""); len(a.Rules) != len(p.Rules) {
		t.Error("a rule for an unknown cache directory")
	}
}

func contains(env []string, kv string) bool {
	for _, e := range env {
		if e == kv {
			return true
		}
	}
	return false
}

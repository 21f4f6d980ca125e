package darwin

// What a command-line program needs of macOS beyond the file system, each
// with why it is open and what it risks. The profile opens these by name
// only; anything not named stays under (deny default).

// when says under which grant a need is open.
type when int

const (
	always   when = iota
	network       // network=on
	desktop       // desktop=on
	keychain      // Input.Keychain (no grant sets it today)
)

// sysctlRead is a sysctl name, or a prefix of names, that may be read.
type sysctlRead struct {
	name   string
	prefix bool
	when   when
}

// sysctlReads are the only sysctls a command may read. Never among them:
// kern.procargs2 and kern.procargs, which return the arguments and the
// environment of any process of the same user (the harness's keys, what
// wrun's environment allowlist removed), nor any prefix of those names.
var sysctlReads = []sysctlRead{
	// Hardware: CPU count and features, page and cache sizes, memory, the
	// model (runtimes size their thread pools and pick code paths by them).
	{name: "hw.", prefix: true},
	{name: "machdep.cpu.", prefix: true},
	{name: "machdep.ptrauth_enabled"},
	// The system's name and version, limits every libc and runtime reads.
	{name: "kern.argmax"},
	{name: "kern.boottime"},
	{name: "kern.hostname"},
	{name: "kern.hv_vmm_present"},
	{name: "kern.maxfiles"},
	{name: "kern.maxfilesperproc"},
	{name: "kern.maxproc"},
	{name: "kern.ngroups"},
	{name: "kern.osproductversion"},
	{name: "kern.osrelease"},
	{name: "kern.ostype"},
	{name: "kern.osvariant_status"},
	{name: "kern.osversion"},
	{name: "kern.secure_kernel"},
	{name: "kern.tcsm_available"},
	{name: "kern.tcsm_enable"},
	{name: "kern.usrstack64"},
	{name: "kern.version"},
	{name: "security.mac.lockdown_mode_state"},
	{name: "sysctl.proc_cputype"},
	{name: "sysctl.proc_translated"},
	{name: "vm.loadavg"},
	// A process's own record by pid or process group (name, owner,
	// state: what /proc/PID/stat shows on Linux), not its arguments.
	{name: "kern.proc.pid.", prefix: true},
	{name: "kern.proc.pgrp.", prefix: true},
	// The routing table and interfaces (getifaddrs, route changes).
	{name: "net.routetable.", prefix: true, when: network},
	// The list of every process (ps, pgrep, top): process information
	// outside the sandbox, which only desktop=on gives.
	{name: "kern.proc.all", prefix: true, when: desktop},
}

// machService is a mach service the command may look up.
type machService struct {
	name, why string
	when      when
	// local: looked up in the per-user (local) namespace as well.
	local bool
}

var machServices = []machService{
	{name: "com.apple.system.opendirectoryd.libinfo", why: "user and group names (getpwuid, getgrgid): ls -l, id, git, ssh"},
	{name: "com.apple.system.opendirectoryd.membership", why: "group membership checks (mbr_*): access checks, id, ls with ACLs"},
	{name: "com.apple.system.DirectoryService.libinfo_v1", why: "user and group names on older systems"},
	{name: "com.apple.system.notification_center", why: "notify(3), which libinfo, the resolver and preferences use to learn of changes"},
	{name: "com.apple.cfprefsd.daemon", why: "preferences (CoreFoundation at start): cfprefsd answers only the domains user-preference-read opens, the global one"},
	{name: "com.apple.cfprefsd.agent", why: "preferences, the per-user agent", local: true},
	{name: "com.apple.bsd.dirhelper", why: "the per-user temp and cache directories (confstr _CS_DARWIN_USER_TEMP_DIR and _CACHE_DIR: clang, xcrun, Foundation); it creates them when missing"},
	{name: "com.apple.mDNSResponder", why: "DNS name resolution (older resolvers); a DNS query carries data to any domain's name servers (an exfiltration route), so only with network=on", when: network},
	{name: "com.apple.SystemConfiguration.DNSConfiguration", why: "the resolver's configuration (name servers, search domains) getaddrinfo reads; network=on only", when: network},
	{name: "com.apple.SystemConfiguration.configd", why: "network configuration (proxies, reachability) curl, git and URLSession read; network=on only", when: network},
	{name: "com.apple.networkd", why: "Network.framework's path and connection service (URLSession, swift); network=on only", when: network},
	{name: "com.apple.trustd", why: "TLS certificate checks (Security framework: go, cargo, git, curl); trustd fetches revocation data and intermediates on the child's behalf (an exfiltration route), so only with network=on", when: network},
	{name: "com.apple.trustd.agent", why: "TLS certificate checks against the user's trust settings; network=on only, as trustd", when: network},
	{name: "com.apple.ocspd", why: "certificate revocation (OCSP, CRL) on older systems; network=on only", when: network},
	{name: "com.apple.SecurityServer", why: "the keychain (securityd): a credential store, git credential-osxkeychain reads it; closed unless the grant opens it", when: keychain},
	{name: "com.apple.securityd.xpc", why: "the keychain (securityd over XPC); closed unless the grant opens it", when: keychain},
	{name: "com.apple.windowserver.active", why: "the window server (desktop=on)", when: desktop},
	{name: "com.apple.pasteboard.1", why: "the pasteboard: reading it takes whatever the user copied (desktop=on)", when: desktop},
	{name: "com.apple.coreservices.appleevents", why: "Apple Events: scripting other applications (desktop=on)", when: desktop},
	{name: "com.apple.coreservices.launchservicesd", why: "opening documents and applications (open(1)) (desktop=on)", when: desktop},
	{name: "com.apple.axserver", why: "accessibility (desktop=on)", when: desktop},
	{name: "com.apple.sysmond", why: "process listings (ps, pgrep, top through libsysmon): process information outside the sandbox (desktop=on)", when: desktop},
}

// The fixed paths the profile names. They are the system's, the same on
// every Mac, so they are text rather than parameters.
const (
	// mDNSResponderSocket is where getaddrinfo sends its queries.
	mDNSResponderSocket = "/private/var/run/mDNSResponder"
	// ptyExtension marks the pseudo-terminals a sandboxed process made
	// through /dev/ptmx.
	ptyExtension = "com.apple.sandbox.pty"
)

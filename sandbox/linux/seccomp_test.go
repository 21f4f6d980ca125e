//go:build linux

package linux

import (
	"encoding/binary"
	"fmt"
	"testing"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// vmInput encodes d (struct seccomp_data, declared with the observer) for
// golang.org/x/net/bpf's VM. The kernel reads each 32-bit field of
// seccomp_data as a native (little-endian) word, the VM's LoadAbsolute
// reads big-endian: so every 32-bit word is written big-endian at its
// offset, and the VM sees the value the kernel would. A 64-bit argument is
// two words: the low one at 16+8*i, the high one at 20+8*i (the
// little-endian layout of a u64).
func vmInput(d seccompData) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], uint32(d.Nr))
	binary.BigEndian.PutUint32(b[4:], d.Arch)
	binary.BigEndian.PutUint32(b[8:], uint32(d.IP))
	binary.BigEndian.PutUint32(b[12:], uint32(d.IP>>32))
	for i, a := range d.Args {
		binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[20+8*i:], uint32(a>>32))
	}
	return b
}

// data is the seccomp_data of system call nr with args, on this
// architecture.
func data(nr uint32, args ...uint64) seccompData {
	d := seccompData{Nr: int32(nr), Arch: auditArch}
	copy(d.Args[:], args)
	return d
}

func runFilter(t *testing.T, spec seccompSpec, d seccompData) uint32 {
	t.Helper()
	vm, err := bpf.NewVM(buildFilter(spec))
	if err != nil {
		t.Fatalf("the filter for %+v is not a valid program: %v", spec, err)
	}
	ret, err := vm.Run(vmInput(d))
	if err != nil {
		t.Fatal(err)
	}
	return uint32(ret)
}

func retName(ret uint32) string {
	switch ret {
	case retAllow:
		return "ALLOW"
	case retEPERM:
		return "ERRNO(EPERM)"
	case retENOSYS:
		return "ERRNO(ENOSYS)"
	case retNotify:
		return "USER_NOTIF"
	}
	return fmt.Sprintf("%#x", ret)
}

// plainSpecs are the four socket policies the filter can be built for;
// allSpecs adds each with the mediation, and the mediation's variants,
// none of which may weaken a denial.
var (
	plainSpecs = []seccompSpec{{}, {DenyInet: true}, {DenyUnix: true}, {DenyInet: true, DenyUnix: true}}
	allSpecs   = append(plainSpecs,
		seccompSpec{Mediate: true}, seccompSpec{DenyInet: true, Mediate: true, Sockets: true},
		seccompSpec{DenyUnix: true, Mediate: true}, seccompSpec{DenyInet: true, DenyUnix: true, Mediate: true},
		seccompSpec{Mediate: true, Sockets: true, Truncate: true, Signals: true},
		seccompSpec{Nested: true, DenyUnix: true})
)

func TestSeccompEncoding(t *testing.T) {
	// The seccomp_data layout the filter's offsets assume.
	if offNr != 0 || offArch != 4 || offArgs != 16 {
		t.Fatalf("offsets nr=%d arch=%d args=%d, want 0, 4, 16", offNr, offArch, offArgs)
	}
	if got := unsafe.Sizeof(seccompData{}); got != 64 {
		t.Fatalf("seccomp_data is 64 bytes, the test's copy %d", got)
	}
	// Every program assembles (the kernel would refuse it otherwise) and
	// fits the kernel's limit of 4096 instructions.
	for _, spec := range allSpecs {
		raw, err := bpf.Assemble(buildFilter(spec))
		if err != nil {
			t.Fatalf("%+v: %v", spec, err)
		}
		if len(raw) > 4096 {
			t.Fatalf("%+v: %d instructions, more than BPF_MAXINSNS", spec, len(raw))
		}
	}
}

func TestSeccompDeniedSyscalls(t *testing.T) {
	// The calls the foundation issue names, listed here by hand so that
	// dropping one from deniedSyscalls fails this test.
	named := map[string]uint32{
		"ptrace": unix.SYS_PTRACE, "process_vm_readv": unix.SYS_PROCESS_VM_READV,
		"process_vm_writev": unix.SYS_PROCESS_VM_WRITEV, "io_uring_setup": unix.SYS_IO_URING_SETUP,
		"io_uring_enter": unix.SYS_IO_URING_ENTER, "io_uring_register": unix.SYS_IO_URING_REGISTER,
		"bpf": unix.SYS_BPF, "perf_event_open": unix.SYS_PERF_EVENT_OPEN,
		"userfaultfd": unix.SYS_USERFAULTFD, "add_key": unix.SYS_ADD_KEY,
		"request_key": unix.SYS_REQUEST_KEY, "keyctl": unix.SYS_KEYCTL,
		"mount": unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2, "move_mount": unix.SYS_MOVE_MOUNT,
		"open_tree": unix.SYS_OPEN_TREE, "fsopen": unix.SYS_FSOPEN, "mount_setattr": unix.SYS_MOUNT_SETATTR,
		"init_module": unix.SYS_INIT_MODULE, "finit_module": unix.SYS_FINIT_MODULE,
		"kexec_load": unix.SYS_KEXEC_LOAD, "reboot": unix.SYS_REBOOT,
		"open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT,
	}
	listed := map[uint32]bool{}
	for _, nr := range deniedSyscalls() {
		listed[nr] = true
	}
	for name, nr := range named {
		if !listed[nr] {
			t.Errorf("%s (%d) is not in deniedSyscalls", name, nr)
		}
	}
	for _, spec := range allSpecs {
		for _, nr := range deniedSyscalls() {
			// Arguments must not matter.
			for _, d := range []seccompData{data(nr), data(nr, 1, 2, 3, 4, 5, 6), data(nr, ^uint64(0), ^uint64(0))} {
				if got := runFilter(t, spec, d); got != retEPERM {
					t.Errorf("%+v: syscall %d%v: %s, want ERRNO(EPERM)", spec, nr, d.Args, retName(got))
				}
			}
		}
	}
}

func TestSeccompOrdinarySyscallsAllowed(t *testing.T) {
	ordinary := map[string]uint32{
		"read": unix.SYS_READ, "write": unix.SYS_WRITE, "close": unix.SYS_CLOSE,
		"mmap": unix.SYS_MMAP, "execve": unix.SYS_EXECVE, "clone": unix.SYS_CLONE,
		"exit_group": unix.SYS_EXIT_GROUP, "getpid": unix.SYS_GETPID, "socketpair": unix.SYS_SOCKETPAIR,
		"getdents64": unix.SYS_GETDENTS64, "fstat": unix.SYS_FSTAT, "newfstatat": unix.SYS_NEWFSTATAT,
		"wait4": unix.SYS_WAIT4, "prctl": unix.SYS_PRCTL, "seccomp": unix.SYS_SECCOMP,
		"ftruncate": unix.SYS_FTRUNCATE, "fchdir": unix.SYS_FCHDIR, "setsid": unix.SYS_SETSID,
	}
	// Calls the mediation sees: allowed outright without it.
	mediated := map[string]uint32{
		"openat": unix.SYS_OPENAT, "renameat2": unix.SYS_RENAMEAT2, "unlinkat": unix.SYS_UNLINKAT,
		"mkdirat": unix.SYS_MKDIRAT, "fchownat": unix.SYS_FCHOWNAT, "utimensat": unix.SYS_UTIMENSAT,
		"landlock_restrict_self": unix.SYS_LANDLOCK_RESTRICT_SELF,
	}
	for _, spec := range allSpecs {
		for name, nr := range ordinary {
			if got := runFilter(t, spec, data(nr, 3, 4, 5)); got != retAllow {
				t.Errorf("%+v: %s: %s, want ALLOW", spec, name, retName(got))
			}
		}
		for name, nr := range mediated {
			want := uint32(retAllow)
			if spec.Mediate {
				want = retNotify
			}
			if got := runFilter(t, spec, data(nr, 3, 4, unix.O_WRONLY)); got != want {
				t.Errorf("%+v: %s: %s, want %s", spec, name, retName(got), retName(want))
			}
		}
	}
}

func TestSeccompIoctl(t *testing.T) {
	const hi = 0xdead_beef << 32 // high bits the kernel drops from the int request
	tests := []struct {
		name    string
		request uint64
		want    uint32
	}{
		{"TIOCSTI", ioctlTIOCSTI, retEPERM},
		{"TIOCLINUX", ioctlTIOCLINUX, retEPERM},
		{"TIOCSTI with high bits set", hi | ioctlTIOCSTI, retEPERM},
		{"TIOCLINUX with high bits set", 1<<63 | ioctlTIOCLINUX, retEPERM},
		{"TCGETS", unix.TCGETS, retAllow},
		{"TIOCGWINSZ", unix.TIOCGWINSZ, retAllow},
		{"TIOCGPGRP", unix.TIOCGPGRP, retAllow},
		{"TIOCSTI's number in the high word only", ioctlTIOCSTI << 32, retAllow},
	}
	for _, spec := range allSpecs {
		for _, tt := range tests {
			// The request is the second argument; a TIOCSTI number in
			// another argument means nothing.
			if got := runFilter(t, spec, data(unix.SYS_IOCTL, 0, tt.request, 0)); got != tt.want {
				t.Errorf("%+v: ioctl %s (%#x): %s, want %s", spec, tt.name, tt.request, retName(got), retName(tt.want))
			}
		}
		if got := runFilter(t, spec, data(unix.SYS_IOCTL, ioctlTIOCSTI, unix.TCGETS, ioctlTIOCSTI)); got != retAllow {
			t.Errorf("%+v: TCGETS with TIOCSTI's number in other arguments: %s, want ALLOW", spec, retName(got))
		}
		// TIOCGPTPEER is performed by the mediation (Landlock checks the
		// slave it opens against /dev/pts); FIOSETOWN names an owner in
		// memory (the launch thread would do), refused everywhere, as are
		// the inode flag ioctls.
		want := uint32(retAllow)
		if spec.Mediate {
			want = retNotify
		}
		if got := runFilter(t, spec, data(unix.SYS_IOCTL, 3, ioctlTIOCGPTPEER, 0)); got != want {
			t.Errorf("%+v: TIOCGPTPEER: %s, want %s", spec, retName(got), retName(want))
		}
		for _, req := range []uint64{ioctlFIOSETOWN, ioctlSIOCSPGRP, ioctlFSSetFlags, ioctlFSSetFlags32, ioctlFSSetXattr, ioctlFSSetVersion} {
			if got := runFilter(t, spec, data(unix.SYS_IOCTL, 3, req, 0)); got != retEPERM {
				t.Errorf("%+v: ioctl %#x: %s, want EPERM", spec, req, retName(got))
			}
		}
	}
}

func TestSeccompSocketFamilies(t *testing.T) {
	const (
		allow = retAllow
		deny  = retEPERM
		hi    = 1 << 32 // the kernel drops the high word of the int family
	)
	families := []struct {
		name   string
		family uint64
		isUnix bool
	}{
		{"AF_UNIX", unix.AF_UNIX, true},
		{"AF_UNIX with high bits set", hi | unix.AF_UNIX, true},
		{"AF_INET", unix.AF_INET, false},
		{"AF_INET with high bits set", 0xffff_ffff<<32 | unix.AF_INET, false},
		{"AF_INET6", unix.AF_INET6, false},
		{"AF_NETLINK", unix.AF_NETLINK, false},
		{"AF_PACKET", unix.AF_PACKET, false},
		{"AF_VSOCK", unix.AF_VSOCK, false},
	}
	specs := []struct {
		spec          seccompSpec
		unixV, otherV uint32 // the verdict on AF_UNIX, on every other family
	}{
		{seccompSpec{}, allow, allow},
		{seccompSpec{DenyInet: true}, allow, deny},
		{seccompSpec{DenyUnix: true}, deny, allow},
		{seccompSpec{DenyInet: true, DenyUnix: true}, deny, deny},
	}
	// With the mediation, a refused family goes to wrun (it answers EPERM
	// and records the denial); an allowed one still passes untouched.
	for _, s := range specs {
		o := s
		o.spec.Mediate = true
		for _, v := range []*uint32{&o.unixV, &o.otherV} {
			if *v == deny {
				*v = retNotify
			}
		}
		specs = append(specs, o)
	}
	for _, s := range specs {
		for _, f := range families {
			want := s.otherV
			if f.isUnix {
				want = s.unixV
			}
			if got := runFilter(t, s.spec, data(unix.SYS_SOCKET, f.family, unix.SOCK_STREAM, 0)); got != want {
				t.Errorf("%+v: socket(%s): %s, want %s", s.spec, f.name, retName(got), retName(want))
			}
		}
		// A stream socketpair is not filtered: it makes no socket
		// reachable from outside.
		if got := runFilter(t, s.spec, data(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM, 0)); got != allow {
			t.Errorf("%+v: socketpair(AF_UNIX): %s, want ALLOW", s.spec, retName(got))
		}
	}
}

// A datagram socketpair can sendto any pathname socket: where AF_UNIX
// sockets are refused, it is refused too, whatever flags ride on its type;
// stream and seqpacket pairs, and every pair elsewhere, are allowed.
func TestSeccompSocketpairDatagram(t *testing.T) {
	const hi = 1 << 32
	types := []struct {
		name  string
		typ   uint64
		dgram bool
	}{
		{"SOCK_STREAM", unix.SOCK_STREAM, false},
		{"SOCK_SEQPACKET", unix.SOCK_SEQPACKET, false},
		{"SOCK_DGRAM", unix.SOCK_DGRAM, true},
		{"SOCK_DGRAM|SOCK_CLOEXEC", unix.SOCK_DGRAM | unix.SOCK_CLOEXEC, true},
		{"SOCK_DGRAM|SOCK_NONBLOCK|SOCK_CLOEXEC", unix.SOCK_DGRAM | unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC, true},
		{"SOCK_DGRAM with high bits set", hi | unix.SOCK_DGRAM, true},
		{"SOCK_STREAM|SOCK_CLOEXEC", unix.SOCK_STREAM | unix.SOCK_CLOEXEC, false},
	}
	for _, spec := range allSpecs {
		for _, ty := range types {
			for _, fam := range []uint64{unix.AF_UNIX, hi | unix.AF_UNIX, unix.AF_INET} {
				want := uint32(retAllow)
				if spec.DenyUnix && ty.dgram && uint32(fam) == unix.AF_UNIX {
					want = retEPERM
				}
				if got := runFilter(t, spec, data(unix.SYS_SOCKETPAIR, fam, ty.typ, 0)); got != want {
					t.Errorf("%+v: socketpair(%#x, %s): %s, want %s", spec, fam, ty.name, retName(got), retName(want))
				}
			}
		}
	}
}

func TestSeccompForeignABI(t *testing.T) {
	for _, spec := range allSpecs {
		// A foreign architecture (int 0x80 on x86-64, say): every call is
		// refused, whatever its number means there.
		for _, arch := range []uint32{unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_ARM, 0} {
			for _, nr := range []uint32{0, 1, 3, 4, 11, 102} {
				d := data(nr)
				d.Arch = arch
				if got := runFilter(t, spec, d); got != retEPERM {
					t.Errorf("%+v: arch %#x nr %d: %s, want ERRNO(EPERM)", spec, arch, nr, retName(got))
				}
			}
		}
		if x32Bit == 0 {
			continue
		}
		// x32 numbers on x86-64: the whole range is refused, so no call can
		// slip past the filter under its x32 number.
		for _, nr := range []uint32{unix.SYS_READ, unix.SYS_GETPID, unix.SYS_SOCKET, unix.SYS_PTRACE, 512, 547} {
			if got := runFilter(t, spec, data(x32Bit|nr, unix.AF_UNIX)); got != retEPERM {
				t.Errorf("%+v: x32 nr %#x: %s, want ERRNO(EPERM)", spec, x32Bit|nr, retName(got))
			}
		}
	}
}

// TestSeccompMediate checks what the mediation's part of the program sends
// wrun: every mediated call, except opens that only read; with Sockets,
// every call that names a socket address.
func TestSeccompMediate(t *testing.T) {
	const hi = 0xffff_ffff << 32 // the kernel drops the high word of int flags
	for _, c := range mediatedCalls() {
		args := make([]uint64, 6)
		if c.flags >= 0 && c.op == opOpen {
			args[c.flags] = unix.O_WRONLY
		}
		for _, spec := range plainSpecs {
			spec.Mediate = true
			if got := runFilter(t, spec, data(c.nr, args...)); got != retNotify {
				t.Errorf("%+v: mediated call %d: %s, want USER_NOTIF", spec, c.nr, retName(got))
			}
		}
	}
	tests := []struct {
		name  string
		flags uint64
		want  uint32
	}{
		{"O_RDONLY", unix.O_RDONLY, retAllow},
		{"O_RDONLY|O_DIRECTORY|O_CLOEXEC", unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, retAllow},
		{"O_PATH", unix.O_PATH, retAllow},
		{"O_RDONLY with high bits set", hi | unix.O_RDONLY, retAllow},
		{"O_WRONLY", unix.O_WRONLY, retNotify},
		{"O_RDWR", unix.O_RDWR, retNotify},
		{"O_CREAT", unix.O_CREAT, retNotify},
		{"O_TRUNC", unix.O_TRUNC, retNotify},
		{"O_RDONLY|O_TRUNC", unix.O_RDONLY | unix.O_TRUNC, retNotify},
		{"O_WRONLY|O_APPEND", unix.O_WRONLY | unix.O_APPEND, retNotify},
		{"O_TMPFILE|O_WRONLY", unix.O_TMPFILE | unix.O_WRONLY, retNotify},
	}
	atFDCWD := int64(unix.AT_FDCWD)
	for _, tt := range tests {
		if got := runFilter(t, seccompSpec{Mediate: true}, data(unix.SYS_OPENAT, uint64(atFDCWD), 0, tt.flags)); got != tt.want {
			t.Errorf("openat(%s): %s, want %s", tt.name, retName(got), retName(tt.want))
		}
	}
	// Sockets: connect, bind and the sends with an address; sendto with
	// a NULL address (both words zero) names none.
	sock := seccompSpec{Mediate: true, Sockets: true}
	for _, nr := range []uint32{unix.SYS_CONNECT, unix.SYS_BIND, unix.SYS_SENDMSG, unix.SYS_SENDMMSG} {
		if got := runFilter(t, sock, data(nr, 3, 0x1000, 16)); got != retNotify {
			t.Errorf("socket call %d: %s, want USER_NOTIF", nr, retName(got))
		}
		if got := runFilter(t, seccompSpec{Mediate: true}, data(nr, 3, 0x1000, 16)); got != retAllow {
			t.Errorf("socket call %d without Sockets: %s, want ALLOW", nr, retName(got))
		}
	}
	for _, tt := range []struct {
		addr uint64
		want uint32
	}{{0, retAllow}, {0x7fff_0000_1000, retNotify}, {1 << 32, retNotify}, {1, retNotify}} {
		if got := runFilter(t, sock, data(unix.SYS_SENDTO, 3, 0x1000, 10, 0, tt.addr, 16)); got != tt.want {
			t.Errorf("sendto(address %#x): %s, want %s", tt.addr, retName(got), retName(tt.want))
		}
	}
	// SO_REUSEPORT is refused under the IP mediation (high bits of level
	// and name ignored, as the kernel does); other options are not.
	inet := seccompSpec{Mediate: true, Sockets: true, Inet: true}
	for _, tt := range []struct {
		name       string
		level, opt uint64
		spec       seccompSpec
		want       uint32
	}{
		{"SO_REUSEPORT", unix.SOL_SOCKET, unix.SO_REUSEPORT, inet, retEPERM},
		{"SO_REUSEPORT, high bits", 1<<32 | unix.SOL_SOCKET, 1<<32 | unix.SO_REUSEPORT, inet, retEPERM},
		{"SO_REUSEADDR", unix.SOL_SOCKET, unix.SO_REUSEADDR, inet, retAllow},
		{"TCP_NODELAY", unix.IPPROTO_TCP, unix.TCP_NODELAY, inet, retAllow},
		{"IPPROTO_TCP option 15", unix.IPPROTO_TCP, unix.SO_REUSEPORT, inet, retAllow},
		{"SO_REUSEPORT without the IP mediation", unix.SOL_SOCKET, unix.SO_REUSEPORT, sock, retAllow},
	} {
		if got := runFilter(t, tt.spec, data(unix.SYS_SETSOCKOPT, 3, tt.level, tt.opt, 0x1000, 4)); got != tt.want {
			t.Errorf("setsockopt(%s): %s, want %s", tt.name, retName(got), retName(tt.want))
		}
	}
}

// TestSeccompSignals: the calls that name wrun's process or the launch
// thread by number are refused under every spec; below the signal scope
// every other signal to another process goes to wrun, but the null
// signal and SIGURG.
func TestSeccompSignals(t *testing.T) {
	const self, launch, other = 4242, 4243, 5000
	const hi = 0xffff_ffff << 32
	tests := []struct {
		name          string
		d             seccompData
		scoped, unsco uint32 // the verdict with the signal scope, and without (Signals)
	}{
		{"tkill(launch)", data(unix.SYS_TKILL, launch, 9), retEPERM, retEPERM},
		{"tkill(launch) with high bits", data(unix.SYS_TKILL, hi|launch, 9), retEPERM, retEPERM},
		{"tkill(other)", data(unix.SYS_TKILL, other, 9), retAllow, retNotify},
		{"tkill(other, SIGURG)", data(unix.SYS_TKILL, other, uint64(unix.SIGURG)), retAllow, retAllow},
		{"tgkill(wrun, any)", data(unix.SYS_TGKILL, self, other, 9), retEPERM, retEPERM},
		{"tgkill(other, other)", data(unix.SYS_TGKILL, other, other, 15), retAllow, retNotify},
		{"tgkill(other, other, 0)", data(unix.SYS_TGKILL, other, other, 0), retAllow, retAllow},
		{"rt_tgsigqueueinfo(wrun)", data(unix.SYS_RT_TGSIGQUEUEINFO, self, launch, 9, 0), retEPERM, retEPERM},
		{"rt_tgsigqueueinfo(other)", data(unix.SYS_RT_TGSIGQUEUEINFO, other, other, 9, 0), retAllow, retNotify},
		{"rt_sigqueueinfo(other)", data(unix.SYS_RT_SIGQUEUEINFO, other, 9, 0), retAllow, retNotify},
		{"kill(other)", data(unix.SYS_KILL, other, 9), retAllow, retNotify},
		{"kill(launch)", data(unix.SYS_KILL, launch, 9), retEPERM, retEPERM},
		{"kill(launch, 0)", data(unix.SYS_KILL, launch, 0), retEPERM, retEPERM},
		{"kill(wrun)", data(unix.SYS_KILL, self, 9), retEPERM, retEPERM},
		{"tkill(wrun's main thread)", data(unix.SYS_TKILL, self, 9), retEPERM, retEPERM},
		{"rt_sigqueueinfo(wrun)", data(unix.SYS_RT_SIGQUEUEINFO, self, 9, 0), retEPERM, retEPERM},
		{"rt_sigqueueinfo(launch)", data(unix.SYS_RT_SIGQUEUEINFO, launch, 9, 0), retEPERM, retEPERM},
		{"kill(-1)", data(unix.SYS_KILL, 0xffff_ffff, 9), retAllow, retNotify},
		{"kill(other, 0)", data(unix.SYS_KILL, other, 0), retAllow, retAllow},
		{"pidfd_send_signal", data(unix.SYS_PIDFD_SEND_SIGNAL, 3, 9, 0, 0), retNotify, retNotify},
		{"pidfd_open(launch)", data(unix.SYS_PIDFD_OPEN, launch, 0), retEPERM, retEPERM},
		{"pidfd_open(wrun)", data(unix.SYS_PIDFD_OPEN, self, 0), retEPERM, retEPERM},
		{"pidfd_open(other)", data(unix.SYS_PIDFD_OPEN, other, 0), retAllow, retAllow},
		{"fcntl(F_SETOWN_EX)", data(unix.SYS_FCNTL, 3, unix.F_SETOWN_EX, 0x1000), retEPERM, retEPERM},
		{"fcntl(F_SETOWN)", data(unix.SYS_FCNTL, 3, unix.F_SETOWN, other), retAllow, retNotify},
		{"fcntl(F_SETOWN, launch)", data(unix.SYS_FCNTL, 3, unix.F_SETOWN, launch), retEPERM, retEPERM},
		{"fcntl(F_SETOWN, wrun)", data(unix.SYS_FCNTL, 3, unix.F_SETOWN, self), retEPERM, retEPERM},
		{"fcntl(F_SETOWN, launch) with high bits", data(unix.SYS_FCNTL, 3, unix.F_SETOWN, hi|launch), retEPERM, retEPERM},
		{"fcntl(F_SETFL)", data(unix.SYS_FCNTL, 3, unix.F_SETFL, launch), retAllow, retAllow},
		{"fcntl(F_GETOWN_EX)", data(unix.SYS_FCNTL, 3, unix.F_GETOWN_EX, 0x1000), retAllow, retAllow},
	}
	for _, tt := range tests {
		for _, unscoped := range []bool{false, true} {
			spec := seccompSpec{Mediate: true, Signals: unscoped, Self: self, Launch: launch}
			want := tt.scoped
			if unscoped {
				want = tt.unsco
			}
			if got := runFilter(t, spec, tt.d); got != want {
				t.Errorf("%s (signals unscoped %v): %s, want %s", tt.name, unscoped, retName(got), retName(want))
			}
		}
	}
}

// TestSeccompKernel loads the filter for real, in a child process, and
// checks that the kernel agrees with the VM on the cases that depend on how
// arguments are read: an int argument with high bits set, and ioctl.
func TestSeccompKernel(t *testing.T) {
	socket := func(family uint64) func(_, _ string) error {
		return func(_, _ string) error {
			fd, _, errno := unix.Syscall(unix.SYS_SOCKET, uintptr(family), unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if errno != 0 {
				return errno
			}
			return unix.Close(int(fd))
		}
	}
	// ioctl on /dev/null: ENOTTY from the driver, EPERM from the filter.
	ioctl := func(request uint64) func(_, _ string) error {
		return func(_, _ string) error {
			fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			var c byte = 'x'
			_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(request), uintptr(unsafe.Pointer(&c)))
			if errno != 0 {
				return errno
			}
			return nil
		}
	}
	// process_vm_readv of nothing from itself: allowed, it succeeds.
	vmread := func(_, _ string) error {
		_, _, errno := unix.Syscall6(unix.SYS_PROCESS_VM_READV, uintptr(unix.Getpid()), 0, 0, 0, 0, 0)
		if errno != 0 {
			return errno
		}
		return nil
	}
	// tkill of the restricted thread itself, by number: refused (it is
	// the launch thread), whatever the signal (0 only checks).
	tkillSelf := func(_, _ string) error {
		_, _, errno := unix.Syscall(unix.SYS_TKILL, uintptr(unix.Gettid()), 0, 0)
		if errno != 0 {
			return errno
		}
		return nil
	}
	const hi = 1 << 32
	none, inet, both := &seccompSpec{}, &seccompSpec{DenyInet: true}, &seccompSpec{DenyInet: true, DenyUnix: true}
	runCases(t, []kcase{
		{name: "AF_INET allowed", seccomp: none, op: socket(unix.AF_INET)},
		{name: "AF_INET denied", seccomp: inet, op: socket(unix.AF_INET), want: unix.EPERM},
		{name: "AF_INET with high bits allowed", seccomp: none, op: socket(hi | unix.AF_INET)},
		{name: "AF_INET with high bits denied", seccomp: inet, op: socket(hi | unix.AF_INET), want: unix.EPERM},
		{name: "AF_UNIX under DenyInet", seccomp: inet, op: socket(unix.AF_UNIX)},
		{name: "AF_UNIX under DenyUnix", seccomp: both, op: socket(unix.AF_UNIX), want: unix.EPERM},
		{name: "TIOCSTI reaches the driver without the filter", seccomp: nil, op: ioctl(ioctlTIOCSTI), want: unix.ENOTTY},
		{name: "TIOCSTI denied", seccomp: none, op: ioctl(ioctlTIOCSTI), want: unix.EPERM},
		{name: "TIOCSTI with high bits denied", seccomp: none, op: ioctl(hi | ioctlTIOCSTI), want: unix.EPERM},
		{name: "TCGETS reaches the driver", seccomp: none, op: ioctl(unix.TCGETS), want: unix.ENOTTY},
		{name: "process_vm_readv without the filter", seccomp: nil, op: vmread},
		{name: "process_vm_readv denied", seccomp: none, op: vmread, want: unix.EPERM},
		{name: "tkill of the launch thread without the filter", seccomp: nil, op: tkillSelf},
		{name: "tkill of the launch thread denied", seccomp: none, op: tkillSelf, want: unix.EPERM},
		// Under an enclosing filter with a listener the kernel refuses a
		// second one (EBUSY): the launch reports it, and plans again.
		{name: "a second listener is refused", enclosed: true, seccomp: &seccompSpec{DenyInet: true, Mediate: true}, op: socket(unix.AF_UNIX), want: unix.EBUSY},
		{name: "AF_INET denied under an enclosing listener", enclosed: true, seccomp: &seccompSpec{DenyInet: true, Nested: true}, op: socket(unix.AF_INET), want: unix.EPERM},
		{name: "AF_UNIX allowed under an enclosing listener", enclosed: true, seccomp: &seccompSpec{DenyInet: true, Nested: true}, op: socket(unix.AF_UNIX)},
	})
}

// TestSeccompArgumentRules: the calls refused only with some arguments.
// Each row has a harmless twin that must pass to the rest of the filter
// (allowed, or sent to wrun), so a rule that refused the call outright
// would fail too.
func TestSeccompArgumentRules(t *testing.T) {
	const hi = 0xffff_ffff << 32 // high bits the kernel drops from an int
	creat := uint64(unix.O_CREAT | unix.O_WRONLY)
	type row struct {
		name string
		d    seccompData
		// want without the mediation, and with it (0: passed on, ALLOW
		// or USER_NOTIF).
		want, mediated uint32
	}
	tests := []row{
		{"unshare(CLONE_NEWUSER)", data(unix.SYS_UNSHARE, unix.CLONE_NEWUSER), retEPERM, retEPERM},
		{"unshare(CLONE_NEWUSER|CLONE_NEWNS)", data(unix.SYS_UNSHARE, unix.CLONE_NEWUSER|unix.CLONE_NEWNS), retEPERM, retEPERM},
		{"unshare(CLONE_NEWUSER) with high bits", data(unix.SYS_UNSHARE, hi|unix.CLONE_NEWUSER), retEPERM, retEPERM},
		{"unshare(CLONE_FILES)", data(unix.SYS_UNSHARE, unix.CLONE_FILES), 0, 0},
		{"clone(CLONE_NEWUSER)", data(unix.SYS_CLONE, unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), retEPERM, retEPERM},
		{"clone(thread)", data(unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_FILES|unix.CLONE_SIGHAND|unix.CLONE_THREAD), 0, 0},
		{"clone3", data(unix.SYS_CLONE3, 0, 88), retENOSYS, retENOSYS},
		{"prlimit64(other pid)", data(unix.SYS_PRLIMIT64, 1, unix.RLIMIT_CPU, 0, 0), retEPERM, retNotify},
		{"prlimit64(other pid in the high word)", data(unix.SYS_PRLIMIT64, hi|1, unix.RLIMIT_CPU), retEPERM, retNotify},
		{"prlimit64(self)", data(unix.SYS_PRLIMIT64, 0, unix.RLIMIT_NOFILE, 0, 0), 0, 0},
		{"prlimit64(self, high bits only)", data(unix.SYS_PRLIMIT64, hi, unix.RLIMIT_NOFILE), 0, 0},
		{"setpriority(PRIO_PROCESS, self)", data(unix.SYS_SETPRIORITY, unix.PRIO_PROCESS, 0, 10), 0, 0},
		{"setpriority(PRIO_PGRP, own group)", data(unix.SYS_SETPRIORITY, unix.PRIO_PGRP, 0, 10), 0, 0},
		{"setpriority(PRIO_PGRP, another group)", data(unix.SYS_SETPRIORITY, unix.PRIO_PGRP, 77, 19), retEPERM, retNotify},
		{"setpriority(PRIO_USER, own user)", data(unix.SYS_SETPRIORITY, unix.PRIO_USER, 0, 19), retEPERM, retNotify},
		{"setpriority(PRIO_PROCESS, another)", data(unix.SYS_SETPRIORITY, unix.PRIO_PROCESS, 77, 19), retEPERM, retNotify},
		{"ioprio_set(PROCESS, self)", data(unix.SYS_IOPRIO_SET, 1, 0, 0), 0, 0},
		{"ioprio_set(USER, self)", data(unix.SYS_IOPRIO_SET, 3, 0, 0), retEPERM, retNotify},
		{"sched_setaffinity(self)", data(unix.SYS_SCHED_SETAFFINITY, 0, 8, 0x1000), 0, 0},
		{"sched_setaffinity(another)", data(unix.SYS_SCHED_SETAFFINITY, 77, 8, 0x1000), retEPERM, retNotify},
		{"sched_setscheduler(another)", data(unix.SYS_SCHED_SETSCHEDULER, 77, 0, 0x1000), retEPERM, retNotify},
		{"fchmod(04755)", data(unix.SYS_FCHMOD, 3, 0o4755), retEPERM, 0},
		{"fchmod(02755)", data(unix.SYS_FCHMOD, 3, 0o2755), retEPERM, 0},
		{"fchmod(0755)", data(unix.SYS_FCHMOD, 3, 0o755), 0, 0},
		{"fchmodat(04755)", data(unix.SYS_FCHMODAT, 3, 0, 0o4755), retEPERM, 0},
		{"fchmodat(01777)", data(unix.SYS_FCHMODAT, 3, 0, 0o1777), 0, 0},
		{"fchmodat2(06755)", data(unix.SYS_FCHMODAT2, 3, 0, 0o6755, 0), retEPERM, 0},
		{"mknodat(S_IFREG|04755)", data(unix.SYS_MKNODAT, 3, 0, unix.S_IFREG|0o4755), retEPERM, 0},
		{"openat(O_CREAT, 04755)", data(unix.SYS_OPENAT, 3, 0, creat, 0o4755), retEPERM, 0},
		{"openat(O_TMPFILE, 02755)", data(unix.SYS_OPENAT, 3, 0, unix.O_TMPFILE|unix.O_RDWR, 0o2755), retEPERM, 0},
		{"openat(O_RDONLY, garbage mode)", data(unix.SYS_OPENAT, 3, 0, unix.O_RDONLY, 0o6777), 0, 0},
		{"openat(O_CREAT, 0644)", data(unix.SYS_OPENAT, 3, 0, creat, 0o644), 0, 0},
		{"openat2", data(unix.SYS_OPENAT2, 3, 0, 0, 24), retENOSYS, 0},
		{"setxattrat", data(sysSetxattrat, 3, 0, 0, 0, 0, 0), 0, retENOSYS},
		{"setns", data(unix.SYS_SETNS, 3, 0), retEPERM, retEPERM},
	}
	for _, c := range archArgumentCalls() {
		args := make([]uint64, 6)
		args[c.mode] = 0o4755
		if c.kind == "open" {
			args[c.flags] = creat
		}
		tests = append(tests, row{fmt.Sprintf("legacy call %d with 04755", c.nr), data(c.nr, args...), retEPERM, 0})
		args[c.mode] = 0o755
		tests = append(tests, row{fmt.Sprintf("legacy call %d with 0755", c.nr), data(c.nr, args...), 0, 0})
	}
	for _, spec := range allSpecs {
		for _, tt := range tests {
			got := runFilter(t, spec, tt.d)
			want := tt.want
			if spec.Mediate {
				want = tt.mediated
			}
			switch {
			case want != 0 && got != want:
				t.Errorf("%+v: %s: %s, want %s", spec, tt.name, retName(got), retName(want))
			case want == 0 && got != retAllow && got != retNotify:
				t.Errorf("%+v: %s: %s, want it passed on (ALLOW or USER_NOTIF)", spec, tt.name, retName(got))
			}
		}
	}
}

// TestSeccompIPC: SysV IPC and POSIX message queues are refused: Landlock
// does not see them, and without an IPC namespace they would reach other
// processes' segments and queues.
func TestSeccompIPC(t *testing.T) {
	for _, spec := range allSpecs {
		for _, nr := range ipcSyscalls() {
			if got := runFilter(t, spec, data(nr, 0, 4096, unix.IPC_CREAT|0o666)); got != retEPERM {
				t.Errorf("%+v: IPC call %d: %s, want ERRNO(EPERM)", spec, nr, retName(got))
			}
		}
	}
}

//go:build linux

package linux

import (
	"fmt"
	"strings"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// mediatedCalls are the calls that name a socket address, which the
// mediation performs in the hands process (hands.go). sendto with a NULL
// address (argument 4, a register) names none and is decided in the
// filter; sendmsg and sendmmsg keep their addresses in memory, so all of
// them are sent.
var mediatedCalls = []uint32{unix.SYS_CONNECT, unix.SYS_BIND, unix.SYS_SENDTO, unix.SYS_SENDMSG, unix.SYS_SENDMMSG}

// mediateFilter is the part of the filter that sends the mediated calls
// to wrun. The accumulator holds the system call number on entry and on
// exit (a call it does not return for).
func mediateFilter() []bpf.Instruction {
	notify := bpf.RetConstant{Val: retNotify}
	// sendto: both words of the address pointer zero: no address.
	sendto := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArgs + 8*4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipFalse: 3},
		bpf.LoadAbsolute{Off: offArgs + 8*4 + 4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipFalse: 1},
		bpf.RetConstant{Val: retAllow},
		notify,
	}
	prog := []bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SENDTO, SkipFalse: uint8(len(sendto))}}
	prog = append(prog, sendto...)
	for _, nr := range mediatedCalls {
		if nr == unix.SYS_SENDTO {
			continue
		}
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1}, notify)
	}
	return prog
}

// isMediated reports whether nr is one of mediatedCalls.
func isMediated(nr uint32) bool {
	for _, m := range mediatedCalls {
		if m == nr {
			return true
		}
	}
	return false
}

// UnixMechanism says how pathname UNIX sockets outside the sandbox are
// kept out under a plan.
type UnixMechanism string

const (
	// UnixOpen: the grant reaches them (desktop=on).
	UnixOpen UnixMechanism = "open"
	// UnixLandlock: Landlock's RESOLVE_UNIX right (ABI 9) confines
	// connect and send by path.
	UnixLandlock UnixMechanism = "landlock"
	// UnixMediated: the seccomp filter sends every call that names an
	// address to wrun, and the hands process performs it (hands.go).
	UnixMediated UnixMechanism = "mediated"
	// UnixRefused: AF_UNIX sockets and datagram socketpairs are refused.
	UnixRefused UnixMechanism = "refused"
)

// planUnix decides how pathname UNIX sockets outside the sandbox are kept
// out: by Landlock where it can (ABI 9), else by mediation where the
// stage can run the hands and the kernel has user notification, else by
// refusing AF_UNIX sockets.
func (pl *Plan) planUnix(f Features, offered llRights) {
	p := pl.Policy
	switch {
	case p.IPC.PathUnixOutside:
		pl.Unix = UnixOpen
	case offered.FS&llResolveUnix != 0:
		pl.Unix = UnixLandlock
	case pl.stage && f.Seccomp && f.UserNotif:
		pl.Unix = UnixMediated
		pl.seccomp.Mediate = true
		pl.Notes = append(pl.Notes, fmt.Sprintf("UNIX sockets are mediated: this kernel's Landlock ABI %d cannot confine connect() to pathname sockets, so wrun performs every connect, bind and addressed send in a process inside the sandbox, and connects only to sockets this sandbox bound (or --allow-unix names); %s confines them itself", f.LandlockABI, abiName(firstWith(llRights{FS: llResolveUnix}).ABI)))
	default:
		pl.Unix = UnixRefused
		pl.seccomp.DenyUnix = true
		pl.Notes = append(pl.Notes, fmt.Sprintf("UNIX sockets cannot be created (stream and seqpacket socketpairs still work, datagram ones do not): this kernel's Landlock ABI %d cannot confine connect() to pathname sockets such as the D-Bus session bus, an ssh agent or a docker socket, and wrun cannot mediate them here (that needs namespaces and seccomp user notification); %s can", f.LandlockABI, abiName(firstWith(llRights{FS: llResolveUnix}).ABI)))
	}
}

// unixLine rewrites, in explain's network and IPC lines, the one about
// UNIX sockets outside the sandbox to name the mechanism that holds them
// under this plan.
func (pl *Plan) unixLine(lines []string) []string {
	var say string
	switch pl.Unix {
	case UnixMediated:
		say = "UNIX sockets outside the sandbox (D-Bus, ssh agent, docker, tmux): not reachable: every connect, bind and addressed send is mediated (seccomp user notification; performed by the hands process inside the sandbox, only to sockets this sandbox bound"
		if n := len(pl.Policy.IPC.UnixSockets); n > 0 {
			say += fmt.Sprintf(" or the %d --allow-unix names", n)
		}
		say += "); inside a wrun nested in this one, UNIX sockets are refused"
	case UnixRefused:
		say = "UNIX sockets outside the sandbox (D-Bus, ssh agent, docker, tmux): not reachable: AF_UNIX sockets and datagram socketpairs are refused (seccomp; no mediation without namespaces)"
	default:
		return lines
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if strings.HasPrefix(l, "UNIX sockets outside the sandbox") {
			l = say
		}
		out = append(out, l)
	}
	return out
}

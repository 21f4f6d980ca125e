//go:build linux

package linux

import (
	"encoding/hex"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wrun-dev/wrun/sandbox"
)

// Parsing Landlock audit records and matching them with the observer's
// denials. Pure: no system calls here.

// Audit record types (linux/audit.h).
const (
	auditSyscall         = 1300
	auditEOE             = 1320
	auditProctitle       = 1327
	auditLandlockAccess  = 1423
	auditLandlockDomain  = 1424
	auditMaxPendingEvent = 4096
	// auditMaxEvents bounds the access records kept of one run: the child
	// chooses how many it causes. Beyond it the records are counted as
	// lost.
	auditMaxEvents = 16 * sandbox.MaxDenials
)

// auditDenial is one Landlock access record with its syscall context.
type auditDenial struct {
	domain   string
	blockers []string // "fs.make_reg", "scope.signal", ...
	path     string   // the object checked: the parent directory for make_* and remove_*
	addr     string   // for net.* and scope.* records
	pid      int
	program  string
	syscall  int
	time     string // RFC 3339, from the record's own timestamp
}

type domainInfo struct {
	creator     int
	deallocated bool
	total       int // the kernel's count, from the deallocation record
}

type domainStatus int

const (
	domainUnseen domainStatus = iota
	domainAllocated
	domainDeallocated
)

// auditLog assembles records into events by their serial number.
type auditLog struct {
	pending map[string]*auditEvent
	order   []string
	domains map[string]*domainInfo
	events  []auditDenial
	// overflow: records beyond auditMaxEvents were not kept.
	overflow bool
}

type auditEvent struct {
	access  []map[string]string
	syscall map[string]string
	title   string
	time    string
}

func newAuditLog() auditLog {
	return auditLog{pending: map[string]*auditEvent{}, domains: map[string]*domainInfo{}}
}

// add takes one record: its type and its text, "audit(T:SERIAL): k=v ...".
func (l *auditLog) add(typ int, text string) {
	switch typ {
	case auditSyscall, auditEOE, auditProctitle, auditLandlockAccess, auditLandlockDomain:
	default:
		return
	}
	stamp, serial, body, ok := auditSerial(text)
	if !ok {
		return
	}
	f := auditFields(body)
	if typ == auditLandlockDomain {
		l.domain(f)
		return
	}
	ev := l.pending[serial]
	if ev == nil {
		if typ != auditLandlockAccess {
			// Records of events without a Landlock access record (audit
			// rules of the system's own) are not kept. Landlock writes its
			// records during the call, before the syscall record.
			return
		}
		if len(l.order) >= auditMaxPendingEvent {
			l.finishEvent(l.order[0])
		}
		ev = &auditEvent{time: stamp}
		l.pending[serial] = ev
		l.order = append(l.order, serial)
	}
	switch typ {
	case auditLandlockAccess:
		ev.access = append(ev.access, f)
	case auditSyscall:
		ev.syscall = f
	case auditProctitle:
		ev.title = f["proctitle"]
	case auditEOE:
		l.finishEvent(serial)
	}
}

func (l *auditLog) domain(f map[string]string) {
	id := f["domain"]
	if id == "" {
		return
	}
	d := l.domains[id]
	if d == nil {
		d = &domainInfo{}
		l.domains[id] = d
	}
	switch f["status"] {
	case "allocated":
		d.creator, _ = strconv.Atoi(f["pid"])
	case "deallocated":
		d.deallocated = true
		d.total, _ = strconv.Atoi(f["denials"])
	}
}

func (l *auditLog) finishEvent(serial string) {
	ev := l.pending[serial]
	if ev == nil {
		return
	}
	delete(l.pending, serial)
	for i, s := range l.order {
		if s == serial {
			l.order = append(l.order[:i], l.order[i+1:]...)
			break
		}
	}
	pid, _ := strconv.Atoi(ev.syscall["pid"])
	nr, _ := strconv.Atoi(ev.syscall["syscall"])
	prog := argv0(ev.title)
	if prog == "" {
		prog = ev.syscall["comm"]
	}
	for _, a := range ev.access {
		d := auditDenial{domain: a["domain"], blockers: strings.Split(a["blockers"], ","),
			path: a["path"], pid: pid, program: prog, syscall: nr, time: ev.time}
		switch {
		case a["daddr"] != "":
			d.addr = a["daddr"] + ":" + a["dest"]
		case a["saddr"] != "":
			d.addr = a["saddr"] + ":" + a["src"]
		case a["opid"] != "":
			// A process signalling itself: one of wrun's threads (the
			// launch thread is in the sandbox's domain) reaching
			// another, the Go runtime's work, not the command's.
			if opid, _ := strconv.Atoi(a["opid"]); opid == pid && pid > 0 {
				continue
			}
			// No system call: the kernel's own signal, sent as a
			// process ends, to a child that asked for it
			// (PR_SET_PDEATHSIG): no act of the command's.
			if ev.syscall == nil {
				continue
			}
			d.addr = "pid " + a["opid"]
			if c := a["ocomm"]; c != "" {
				d.addr += " (" + c + ")"
			}
		}
		if len(l.events) >= auditMaxEvents {
			l.overflow = true
			continue
		}
		l.events = append(l.events, d)
	}
}

// flush finishes events still waiting for their end record.
func (l *auditLog) flush() {
	for len(l.order) > 0 {
		l.finishEvent(l.order[0])
	}
}

// ours are the domains created by pid restrictor (wrun's pid, as the
// audit records give it): the launch thread's, which the command's
// processes inherit, and any other a thread of wrun made for itself. A
// denial is recorded under the domain or layer that refused it, so the
// command's are under any of them.
func (l *auditLog) ours(restrictor int) []string {
	var ids []string
	for id, d := range l.domains {
		if d.creator == restrictor && restrictor > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (l *auditLog) domainState(restrictor int) domainStatus {
	ids := l.ours(restrictor)
	if len(ids) == 0 {
		return domainUnseen
	}
	for _, id := range ids {
		if !l.domains[id].deallocated {
			return domainAllocated
		}
	}
	return domainDeallocated
}

func (l *auditLog) denialsOf(restrictor int) []auditDenial {
	ids := l.ours(restrictor)
	var out []auditDenial
	for _, e := range l.events {
		if slices.Contains(ids, e.domain) {
			out = append(out, e)
		}
	}
	return out
}

// incomplete: the kernel counted more denials for the domain than were read.
func (l *auditLog) incomplete(restrictor int) bool {
	if l.overflow {
		return true
	}
	ids := l.ours(restrictor)
	total := 0
	for _, id := range ids {
		if !l.domains[id].deallocated {
			return false
		}
		total += l.domains[id].total
	}
	return len(ids) > 0 && len(l.denialsOf(restrictor)) < total
}

// auditSerial splits "audit(1796214511.783:5): rest" into the time (RFC
// 3339, UTC), the serial "5" and "rest".
func auditSerial(text string) (stamp, serial, body string, ok bool) {
	rest, ok := strings.CutPrefix(text, "audit(")
	if !ok {
		return "", "", "", false
	}
	head, body, ok := strings.Cut(rest, "): ")
	if !ok {
		head, ok = strings.CutSuffix(rest, ")")
		if !ok {
			return "", "", "", false
		}
	}
	ts, serial, ok := strings.Cut(head, ":")
	if sec, ms, found := strings.Cut(ts, "."); found {
		s, err1 := strconv.ParseInt(sec, 10, 64)
		m, err2 := strconv.ParseInt(ms, 10, 64)
		if err1 == nil && err2 == nil {
			stamp = time.Unix(s, m*int64(time.Millisecond)).UTC().Format(time.RFC3339Nano)
		}
	}
	return stamp, serial, body, ok
}

// auditFields reads the key=value pairs of a record. A quoted value is
// taken as is; an unquoted value of a field that holds untrusted text
// (path, comm, exe, proctitle) is hex, as the kernel writes text with
// spaces, quotes or control characters.
func auditFields(body string) map[string]string {
	f := map[string]string{}
	for len(body) > 0 {
		body = strings.TrimLeft(body, " ")
		k, rest, ok := strings.Cut(body, "=")
		if !ok || strings.ContainsAny(k, " ") {
			break
		}
		var v string
		if strings.HasPrefix(rest, "\"") {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				v, body = rest[1:], ""
			} else {
				v, body = rest[1:1+end], rest[2+end:]
			}
		} else {
			end := strings.IndexByte(rest, ' ')
			if end < 0 {
				end = len(rest)
			}
			v, body = rest[:end], rest[end:]
			switch k {
			case "path", "comm", "exe", "proctitle", "ocomm", "name":
				if b, err := hex.DecodeString(v); err == nil && v != "" {
					v = string(b)
				}
			}
		}
		f[k] = v
	}
	return f
}

// argv0 is the first argument of a decoded proctitle (NUL-separated argv).
func argv0(title string) string {
	a, _, _ := strings.Cut(title, "\x00")
	return a
}

// mergeAudit marks the observer's denials the kernel's records confirm and
// adds, as exact denials, what the records show and the observer does not
// watch (reads, executions, signals, device ioctls). Records of rights
// checked on a directory (make_*, remove_*, refer) that the observer did
// not predict name only the directory, not the entry: they are counted in
// unmatched rather than reported with a made-up path.
func mergeAudit(obs []sandbox.Denial, recs []auditDenial) (out []sandbox.Denial, unmatched, dropped int) {
	out = append([]sandbox.Denial(nil), obs...)
	// New denials from the records, within what the observer's left of
	// the bounds (sandbox.MaxDenials).
	var added sandbox.DenialLog
	room := sandbox.MaxDenials - len(obs)
	for _, r := range recs {
		for _, b := range r.blockers {
			kind, right, ok := strings.Cut(b, ".")
			if !ok {
				continue
			}
			if matchObserved(out[:len(obs)], r, right) {
				continue
			}
			d := sandbox.Denial{Time: r.time, PID: r.pid, Program: r.program, Path: r.path, Addr: r.addr,
				Exact: true, Audited: true, Count: 1}
			switch {
			case kind == "scope" && right == "signal":
				d.Op, d.Right, d.Path = "signal", "signal", ""
			case kind == "scope" && right == "abstract_unix_socket":
				d.Op, d.Right, d.Addr, d.Path = "connect", "connect_abstract_unix", "unix:"+r.path, ""
			case kind == "net":
				d.Op, d.Right, d.Path = strings.TrimSuffix(right, "_tcp"), right, ""
			case kind != "fs":
				unmatched++
				continue
			case dirRight(right):
				unmatched++
				continue
			default:
				d.Op, d.Right = fsOp(right), right
			}
			if added.Find(sandbox.DenialKey(d)) == nil && added.Len() >= room {
				dropped++
				continue
			}
			added.Add(d)
		}
	}
	return append(out, added.Denials()...), unmatched, dropped + added.Dropped()
}

// matchObserved marks the first observed denial by the same process for
// the same right on the same object (or its directory) as audited.
func matchObserved(ds []sandbox.Denial, r auditDenial, right string) bool {
	for i := range ds {
		d := &ds[i]
		if !d.Exact || d.PID != r.pid {
			continue
		}
		if !hasRight(d.Right, right) {
			continue
		}
		if d.Path == r.path || filepath.Dir(d.Path) == r.path {
			d.Audited = true
			return true
		}
	}
	return false
}

func hasRight(list, right string) bool {
	for _, r := range strings.Split(list, ",") {
		if r == right {
			return true
		}
	}
	return false
}

func dirRight(r string) bool {
	return strings.HasPrefix(r, "make_") || strings.HasPrefix(r, "remove_") || r == "refer"
}

// fsOp names the operation of a file system right refused on an object.
func fsOp(right string) string {
	switch right {
	case "execute":
		return "exec"
	case "truncate":
		return "truncate"
	case "ioctl_dev":
		return "ioctl"
	}
	return "open"
}

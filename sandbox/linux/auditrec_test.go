//go:build linux

package linux

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/wrun-dev/wrun/sandbox"
)

// Records as the kernel wrote them on Linux 6.18 for
// `wrun -- sh -c 'echo x > /etc/zz; mkdir /etc/qq'` (pid 25688 is wrun).
var recordedRun = []netlinkMsg{
	{auditLandlockAccess, `audit(1796214511.783:5): domain=142ebd741 blockers=fs.make_reg path="/etc" dev="vda" ino=19`},
	{auditLandlockDomain, `audit(1796214511.783:5): domain=142ebd741 status=allocated mode=enforcing pid=25688 uid=0 exe="/tmp/me/wrun" comm="wrun"`},
	{auditSyscall, `audit(1796214511.783:5): arch=c000003e syscall=257 success=no exit=-13 a0=ffffff9c a1=5626af72b9a0 a2=241 a3=1b6 items=0 ppid=25688 pid=25697 auid=4294967295 uid=0 gid=0 euid=0 suid=0 fsuid=0 egid=0 sgid=0 fsgid=0 tty=(none) ses=4294967295 comm="sh" exe="/usr/bin/dash" key=(null)`},
	{auditProctitle, `audit(1796214511.783:5): proctitle=7368002D63006563686F2078203E202F6574632F7A7A3B206D6B646972202F6574632F7171`},
	{auditEOE, `audit(1796214511.783:5): `},
	// Another process's event, with no Landlock record: ignored.
	{auditSyscall, `audit(1796214511.785:6): arch=c000003e syscall=2 success=yes exit=3 pid=99 comm="cron"`},
	{auditEOE, `audit(1796214511.785:6): `},
	{auditLandlockAccess, `audit(1796214511.787:7): domain=142ebd741 blockers=fs.make_dir path="/etc" dev="vda" ino=19`},
	{auditSyscall, `audit(1796214511.787:7): arch=c000003e syscall=83 success=no exit=-13 a0=7ffe8fa779b6 a1=1ff items=0 ppid=25697 pid=25704 comm="mkdir" exe="/usr/bin/mkdir" key=(null)`},
	{auditProctitle, `audit(1796214511.787:7): proctitle=6D6B646972002F6574632F7171`},
	{auditEOE, `audit(1796214511.787:7): `},
	// A nested sandbox's domain: not ours.
	{auditLandlockAccess, `audit(1796214511.790:8): domain=99 blockers=fs.read_file path="/root/.ssh/id"`},
	{auditLandlockDomain, `audit(1796214511.790:8): domain=99 status=allocated mode=enforcing pid=25710 uid=0 exe="/tmp/me/wrun" comm="wrun"`},
	{auditSyscall, `audit(1796214511.790:8): arch=c000003e syscall=257 success=no exit=-13 pid=25711 comm="cat"`},
	{auditEOE, `audit(1796214511.790:8): `},
	// Text with a space is written in hex; a signal names its target.
	{auditLandlockAccess, `audit(1796214511.791:9): domain=142ebd741 blockers=fs.read_file path=2F726F6F742F2E7373682F6D79206B6579 dev="vda" ino=7`},
	{auditSyscall, `audit(1796214511.791:9): arch=c000003e syscall=257 success=no exit=-13 pid=25720 comm="cat"`},
	{auditEOE, `audit(1796214511.791:9): `},
	{auditLandlockAccess, `audit(1796214511.792:10): domain=142ebd741 blockers=scope.signal opid=1 ocomm="init"`},
	{auditSyscall, `audit(1796214511.792:10): arch=c000003e syscall=62 success=no exit=-1 pid=25697 comm="sh"`},
	{auditEOE, `audit(1796214511.792:10): `},
	{auditLandlockDomain, `audit(1796214511.830:11): domain=142ebd741 status=deallocated denials=4`},
}

func TestAuditLogAssemblesOurDomain(t *testing.T) {
	l := newAuditLog()
	for _, m := range recordedRun {
		l.add(m.typ, m.text)
	}
	l.flush()
	got := l.denialsOf(25688)
	want := []auditDenial{
		{domain: "142ebd741", blockers: []string{"fs.make_reg"}, path: "/etc", pid: 25697, program: "sh", syscall: 257, time: "2026-12-02T12:28:31.783Z"},
		{domain: "142ebd741", blockers: []string{"fs.make_dir"}, path: "/etc", pid: 25704, program: "mkdir", syscall: 83, time: "2026-12-02T12:28:31.787Z"},
		{domain: "142ebd741", blockers: []string{"fs.read_file"}, path: "/root/.ssh/my key", pid: 25720, program: "cat", syscall: 257, time: "2026-12-02T12:28:31.791Z"},
		{domain: "142ebd741", blockers: []string{"scope.signal"}, addr: "pid 1 (init)", pid: 25697, program: "sh", syscall: 62, time: "2026-12-02T12:28:31.792Z"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
	if st := l.domainState(25688); st != domainDeallocated {
		t.Errorf("domain state %v, want deallocated", st)
	}
	if l.incomplete(25688) {
		t.Error("4 of 4 denials read, yet incomplete")
	}
	if d := l.denialsOf(4242); d != nil {
		t.Errorf("a restrictor with no domain got %+v", d)
	}
	// Lose one record: the kernel's total says so.
	l = newAuditLog()
	for i, m := range recordedRun {
		if i != 7 { // the mkdir record
			l.add(m.typ, m.text)
		}
	}
	l.flush()
	if !l.incomplete(25688) {
		t.Error("3 of 4 denials read, not reported incomplete")
	}
}

func TestAuditFields(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]string
	}{
		{`a=1 b="x y" c=z`, map[string]string{"a": "1", "b": "x y", "c": "z"}},
		{`path=2F612062 ino=19`, map[string]string{"path": "/a b", "ino": "19"}},
		{`path="/etc" dev="vda"`, map[string]string{"path": "/etc", "dev": "vda"}},
		{`comm="unterminated`, map[string]string{"comm": "unterminated"}},
		{`key=(null)`, map[string]string{"key": "(null)"}},
		{`exe=zz`, map[string]string{"exe": "zz"}}, // not hex: kept
		{``, map[string]string{}},
	}
	for _, tc := range tests {
		if got := auditFields(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("auditFields(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestMergeAudit(t *testing.T) {
	observed := []sandbox.Denial{
		{PID: 10, Op: "create", Path: "/etc/zz", Right: "make_reg", Exact: true, Count: 2},
		{PID: 11, Op: "write", Path: "/repo/.git/config", Right: "protected", Exact: true, Count: 1},
	}
	recs := []auditDenial{
		{blockers: []string{"fs.make_reg"}, path: "/etc", pid: 10},
		{blockers: []string{"fs.make_reg"}, path: "/etc", pid: 10},
		{blockers: []string{"fs.read_file"}, path: "/root/.ssh/id", pid: 12, program: "cat", time: "t"},
		{blockers: []string{"fs.read_file"}, path: "/root/.ssh/id", pid: 12, program: "cat", time: "t"},
		{blockers: []string{"fs.execute"}, path: "/tmp/x/run", pid: 13, program: "sh"},
		{blockers: []string{"scope.signal"}, addr: "pid 1 (init)", pid: 14, program: "kill"},
		{blockers: []string{"scope.abstract_unix_socket"}, path: "@/tmp/.X11-unix/X0", pid: 15},
		{blockers: []string{"fs.make_dir"}, path: "/usr", pid: 16}, // not predicted: names only a directory
	}
	got, unmatched, dropped := mergeAudit(observed, recs)
	if dropped != 0 {
		t.Errorf("dropped %d, want 0", dropped)
	}
	want := []sandbox.Denial{
		{PID: 10, Op: "create", Path: "/etc/zz", Right: "make_reg", Exact: true, Audited: true, Count: 2},
		{PID: 11, Op: "write", Path: "/repo/.git/config", Right: "protected", Exact: true, Count: 1},
		{Time: "t", PID: 12, Program: "cat", Op: "open", Path: "/root/.ssh/id", Right: "read_file", Exact: true, Audited: true, Count: 2},
		{PID: 13, Program: "sh", Op: "exec", Path: "/tmp/x/run", Right: "execute", Exact: true, Audited: true, Count: 1},
		{PID: 14, Program: "kill", Op: "signal", Addr: "pid 1 (init)", Right: "signal", Exact: true, Audited: true, Count: 1},
		{PID: 15, Op: "connect", Addr: "unix:@/tmp/.X11-unix/X0", Right: "connect_abstract_unix", Exact: true, Audited: true, Count: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
	if unmatched != 1 {
		t.Errorf("unmatched = %d, want 1", unmatched)
	}
}

func TestSplitNetlink(t *testing.T) {
	msg := func(typ uint16, text string) []byte {
		l := 16 + len(text)
		b := make([]byte, (l+3)&^3)
		b[0], b[1] = byte(l), byte(l>>8)
		b[4], b[5] = byte(typ), byte(typ>>8)
		copy(b[16:], text)
		return b
	}
	buf := append(msg(1423, "audit(1.0:1): a=b"), msg(1320, "audit(1.0:1): \x00")...)
	got := splitNetlink(buf)
	want := []netlinkMsg{{1423, "audit(1.0:1): a=b"}, {1320, "audit(1.0:1): "}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if got := splitNetlink(buf[:10]); got != nil {
		t.Errorf("a short buffer gave %+v", got)
	}
}

// TestMergeAuditBounded: the records add at most what the observer left of
// sandbox.MaxDenials; the rest is counted, not kept.
func TestMergeAuditBounded(t *testing.T) {
	observed := make([]sandbox.Denial, sandbox.MaxDenials-2)
	for i := range observed {
		observed[i] = sandbox.Denial{PID: 1, Op: "create", Path: fmt.Sprintf("/o/%d", i), Right: "make_reg", Exact: true, Count: 1}
	}
	var recs []auditDenial
	for i := range 10 {
		recs = append(recs, auditDenial{blockers: []string{"fs.read_file"}, path: fmt.Sprintf("/secret/%d", i), pid: 2, program: "cat"})
	}
	recs = append(recs, auditDenial{blockers: []string{"fs.read_file"}, path: "/secret/0", pid: 2, program: "cat"})
	got, _, dropped := mergeAudit(observed, recs)
	if len(got) != sandbox.MaxDenials {
		t.Errorf("%d denials kept, want %d", len(got), sandbox.MaxDenials)
	}
	if dropped != 8 {
		t.Errorf("dropped %d, want 8", dropped)
	}
	if last := got[len(got)-2]; last.Path != "/secret/0" || last.Count != 2 {
		t.Errorf("a repeat of a kept record is counted on it: %+v", last)
	}
}

// TestAuditLogNestedLayerOfTheStage: the stage creates two domains, the
// command's and the hands' (and, before the hands had a domain of its
// own, a layer nested in the sandbox's), both with the stage as their
// creator. The command's denials are under either; a thread of the stage
// signalling another thread of its own is no denial of the command's.
func TestAuditLogNestedLayerOfTheStage(t *testing.T) {
	recs := []netlinkMsg{
		{auditLandlockAccess, `audit(1796214511.783:5): domain=1a blockers=fs.make_sym path="/w/.git/refs/tags" dev="vda" ino=19`},
		{auditLandlockDomain, `audit(1796214511.783:5): domain=1a status=allocated mode=enforcing pid=500 uid=0 exe="/tmp/wrun" comm="wrun-sandbox"`},
		{auditSyscall, `audit(1796214511.783:5): arch=c000003e syscall=88 success=no exit=-13 pid=510 comm="ln"`},
		{auditEOE, `audit(1796214511.783:5): `},
		{auditLandlockAccess, `audit(1796214511.784:6): domain=1b blockers=scope.signal opid=505 ocomm="exe"`},
		{auditLandlockDomain, `audit(1796214511.784:6): domain=1b status=allocated mode=enforcing pid=500 uid=0 exe="/tmp/wrun" comm="wrun-sandbox"`},
		{auditSyscall, `audit(1796214511.784:6): arch=c000003e syscall=62 success=no exit=-1 pid=509 comm="sh"`},
		{auditEOE, `audit(1796214511.784:6): `},
		// The hands' PR_SET_PDEATHSIG, refused as the launch thread
		// ends: no system call record.
		{auditLandlockAccess, `audit(1796214511.786:8): domain=1b blockers=scope.signal opid=506 ocomm="exe"`},
		{auditLandlockAccess, `audit(1796214511.785:7): domain=1b blockers=scope.signal opid=500 ocomm="exe"`},
		{auditSyscall, `audit(1796214511.785:7): arch=c000003e syscall=234 success=no exit=-1 pid=500 comm="wrun-sandbox"`},
		{auditEOE, `audit(1796214511.785:7): `},
	}
	l := newAuditLog()
	for _, m := range recs {
		l.add(m.typ, m.text)
	}
	l.flush()
	got := l.denialsOf(500)
	if len(got) != 2 || got[0].blockers[0] != "fs.make_sym" || got[1].addr != `pid 505 (exe)` {
		t.Fatalf("want the outer layer's symlink and the nested layer's signal to the hands, not the stage's own: %+v", got)
	}
	if st := l.domainState(500); st != domainAllocated {
		t.Errorf("domain state %v, want allocated", st)
	}
}

// FuzzAuditRecords: whatever the audit socket delivers (the records name
// paths and programs the command chose), assembling, reading and merging
// them never panics, and every denial it yields is of the restrictor's
// domain.
func FuzzAuditRecords(f *testing.F) {
	for _, m := range recordedRun {
		f.Add(m.typ, m.text, m.text)
	}
	f.Add(auditLandlockAccess, `audit(1.2:3): domain=1 blockers=fs.read_file path="\x00" pid=-1`, `audit(1.2:3): domain=1 status=allocated pid=7`)
	f.Fuzz(func(t *testing.T, typ int, a, b string) {
		l := newAuditLog()
		for _, m := range recordedRun[:2] {
			l.add(m.typ, m.text)
		}
		l.add(typ, a)
		l.add(auditLandlockDomain, b)
		l.add(auditSyscall, a)
		l.add(auditEOE, b)
		l.flush()
		for _, r := range []int{25688, 7, 0, -1} {
			ds := l.denialsOf(r)
			_ = l.domainState(r)
			_ = l.incomplete(r)
			_, _, _ = mergeAudit([]sandbox.Denial{{Op: "open", Path: "/etc", Right: "read_file"}}, ds)
		}
		raw := []byte(a + b)
		_ = splitNetlink(raw)
	})
}

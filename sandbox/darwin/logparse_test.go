package darwin

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// ndjson wraps a report's text in a line of `log stream --style ndjson`,
// with the fields the kernel's reports carry (reporter: the kernel).
func ndjson(t testing.TB, msg string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"messageType": "Error", "subsystem": "", "category": "", "userID": 0, "processID": 0,
		"processImagePath": "/kernel", "senderImagePath": "/System/Library/Extensions/Sandbox.kext/Contents/MacOS/Sandbox",
		"timestamp": "2026-09-05 23:01:34.988314-0500", "eventMessage": msg,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The report formats macOS writes, from public sources (the lines as
// published; found through a code search of public GitHub files, cited by
// what they show, since none is a project wrun takes code from):
//
//   - an ndjson line of `log stream --style ndjson` from a published probe
//     report of Darwin 25.5.0 (arm64): the kernel is the reporter
//     (processID 0, processImagePath /kernel), the offender is only in
//     eventMessage, "Sandbox: cat(96728) deny(1) file-read-data PATH";
//   - "Sandbox: bash(96731) deny(1) file-write-create …/forbidden/write.txt"
//     from the same report, the path shortened by its author;
//   - "Sandbox: mobileassetd(45396) deny(1) file-write-create
//     /private/var/run/bootSessionMA.txt", a kernel line from `log show` in a
//     published lab report;
//   - "1 duplicate report for Sandbox: curl(3473) deny(1) mach-lookup
//     com.apple.system.opendirectoryd.libinfo" and "7 duplicate reports for
//     Sandbox: imagent(544) deny(1) mach-lookup
//     com.apple.contactsd.persistence": the system folds repeats;
//   - "Sandbox: curl(75886) deny(1) network-outbound
//     /private/var/run/mDNSResponder" and "Sandbox: nc(86248) deny(1)
//     network-outbound /private/var/run/syslog": UNIX socket connects;
//   - "Sandbox: curl(13590) deny(1) network-outbound remote:*:443"
//     followed on the next line by the profile's (with message ...) text,
//     as a published `log stream` capture shows it.
func TestParseLogLine(t *testing.T) {
	cases := []struct {
		msg  string
		want sandbox.Denial
		tag  string
	}{
		{"Sandbox: cat(96728) deny(1) file-read-data /private/var/folders/…/ib-denial-probe-E8o8ss/forbidden/read.txt",
			sandbox.Denial{PID: 96728, Program: "cat", Op: "open", Path: "/private/var/folders/…/ib-denial-probe-E8o8ss/forbidden/read.txt", Right: "read_file"}, ""},
		{"Sandbox: bash(96731) deny(1) file-write-create …/forbidden/write.txt",
			sandbox.Denial{PID: 96731, Program: "bash", Op: "create", Path: "…/forbidden/write.txt", Right: "make_reg"}, ""},
		{"Sandbox: mobileassetd(45396) deny(1) file-write-create /private/var/run/bootSessionMA.txt",
			sandbox.Denial{PID: 45396, Program: "mobileassetd", Op: "create", Path: "/private/var/run/bootSessionMA.txt", Right: "make_reg"}, ""},
		{"1 duplicate report for Sandbox: curl(3473) deny(1) mach-lookup com.apple.system.opendirectoryd.libinfo",
			sandbox.Denial{PID: 3473, Program: "curl", Op: "mach-lookup", Addr: "com.apple.system.opendirectoryd.libinfo", Right: "mach-lookup", Count: 2}, ""},
		{"7 duplicate reports for Sandbox: imagent(544) deny(1) mach-lookup com.apple.contactsd.persistence",
			sandbox.Denial{PID: 544, Program: "imagent", Op: "mach-lookup", Addr: "com.apple.contactsd.persistence", Right: "mach-lookup", Count: 8}, ""},
		{"Sandbox: curl(75886) deny(1) network-outbound /private/var/run/mDNSResponder",
			sandbox.Denial{PID: 75886, Program: "curl", Op: "connect", Addr: "unix:/private/var/run/mDNSResponder", Right: "connect_unix"}, ""},
		{"Sandbox: nc(86248) deny(1) network-outbound /private/var/run/syslog",
			sandbox.Denial{PID: 86248, Program: "nc", Op: "connect", Addr: "unix:/private/var/run/syslog", Right: "connect_unix"}, ""},
		{"Sandbox: curl(13590) deny(1) network-outbound remote:*:443\nwrun-0123abcd",
			sandbox.Denial{PID: 13590, Program: "curl", Op: "connect", Addr: "*:443", Right: "connect_tcp"}, "wrun-0123abcd"},
		// The shapes wrun's own profile makes, in the same format.
		{"Sandbox: git(501) deny(1) file-write-data /Users/u/proj/.git/config\nwrun-R",
			sandbox.Denial{PID: 501, Program: "git", Op: "open", Path: "/Users/u/proj/.git/config", Right: "write_file"}, "wrun-R"},
		{"Sandbox: rm(502) deny(1) file-write-unlink /Users/u/proj/.git/hooks\nwrun-R",
			sandbox.Denial{PID: 502, Program: "rm", Op: "unlink", Path: "/Users/u/proj/.git/hooks", Right: "remove_file"}, "wrun-R"},
		{"Sandbox: sh(503) deny(1) process-exec* /Users/u/.ssh/x\nwrun-R",
			sandbox.Denial{PID: 503, Program: "sh", Op: "exec", Path: "/Users/u/.ssh/x", Right: "execute"}, "wrun-R"},
		{"Sandbox: Gradle Worker(10) deny(1) signal\nwrun-R",
			sandbox.Denial{PID: 10, Program: "Gradle Worker", Op: "signal", Right: "signal"}, "wrun-R"},
		{"Sandbox: chmod(11) deny(1) file-write-mode /Users/u/.bashrc",
			sandbox.Denial{PID: 11, Program: "chmod", Op: "chmod", Path: "/Users/u/.bashrc", Right: "change_metadata"}, ""},
	}
	for _, c := range cases {
		r, ok := ParseLogLine(ndjson(t, c.msg))
		if !ok {
			t.Errorf("%q: not parsed", c.msg)
			continue
		}
		want := c.want
		want.Exact = true
		want.Time = "2026-09-06T04:01:34.988314Z"
		if want.Count == 0 {
			want.Count = 1
		}
		if r.Denial != want {
			t.Errorf("%q:\n got %+v\nwant %+v", c.msg, r.Denial, want)
		}
		if r.Message != c.tag {
			t.Errorf("%q: message %q, want %q", c.msg, r.Message, c.tag)
		}
	}
	// Not denials: the stream's header, other messages, allow reports,
	// broken JSON, a line cut short.
	for _, l := range []string{
		`Filtering the log data using "eventMessage CONTAINS \"Sandbox:\""`,
		string(ndjson(t, "Sandbox: cat(325) allow file-read-data /repo/a b.txt")),
		string(ndjson(t, "some other message")),
		string(ndjson(t, "Sandbox: cat(x) deny(1) file-read-data /a")),
		`{"eventMessage":"Sandbox: cat(1) deny(1) file-read-data /a"`,
		``,
	} {
		if r, ok := ParseLogLine([]byte(l)); ok {
			t.Errorf("%q parsed as %+v", l, r)
		}
	}
}

// A report names the path the sandbox matched (/private/tmp); wrun's
// policy, escalation and the user know it as the policy names it (/tmp).
func TestUncanonical(t *testing.T) {
	paths := []string{"/", "/tmp/wrun-1", "/var/folders/ab/T/wrun-2", "/Users/u/proj"}
	for in, want := range map[string]string{
		"/private/tmp/wrun-1/x":              "/tmp/wrun-1/x",
		"/private/tmp/wrun-1":                "/tmp/wrun-1",
		"/private/var/folders/ab/T/wrun-2/y": "/var/folders/ab/T/wrun-2/y",
		"/private/tmp/other":                 "/private/tmp/other",
		"/Users/u/proj/a":                    "/Users/u/proj/a",
	} {
		if got := Uncanonical(in, paths, nil); got != want {
			t.Errorf("Uncanonical(%q) = %q, want %q", in, got, want)
		}
	}
}

// No line makes the parser panic or keep an unbounded count, and a denial
// it returns is always exact and counted at least once.
func FuzzParseLogLine(f *testing.F) {
	f.Add([]byte(`{"eventMessage":"Sandbox: cat(96728) deny(1) file-read-data /a","timestamp":"2026-09-05 23:01:34.988314-0500"}`))
	f.Add([]byte(`{"eventMessage":"99999999999 duplicate reports for Sandbox: a(1) deny(1) x"}`))
	f.Add([]byte(`{"eventMessage":"Sandbox: a)(b(2) deny(1) network-outbound remote:unix-socket:/x\nwrun-a\nwrun-b"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, ok := ParseLogLine(line)
		if !ok {
			return
		}
		if !r.Denial.Exact || r.Denial.Count < 1 || r.Denial.Op == "" || r.Denial.PID < 0 {
			t.Fatalf("%q: %+v", line, r.Denial)
		}
		if r.Message != "" && !strings.HasPrefix(r.Message, "wrun-") {
			t.Fatalf("message %q", r.Message)
		}
	})
}

// Item 7: a network-outbound report without a target (getaddrinfo's
// connect to the netsrc kernel control) is not a TCP connect, so it never
// asks for network=on; one with an IP address is. The control: the
// escalation analyzer classifies the TCP connect as network-off, the bare
// one not.
func TestBareNetworkOutbound(t *testing.T) {
	cases := []struct {
		msg  string
		want sandbox.Denial
	}{
		{"Sandbox: git-remote-http(812) deny(1) network-outbound",
			sandbox.Denial{PID: 812, Program: "git-remote-http", Op: "network-outbound", Right: "network-outbound"}},
		{"Sandbox: curl(813) deny(1) network-outbound control-name com.apple.netsrc",
			sandbox.Denial{PID: 813, Program: "curl", Op: "network-outbound", Right: "network-outbound", Addr: "control-name com.apple.netsrc"}},
		{"Sandbox: curl(814) deny(1) network-outbound remote:192.0.2.1:443",
			sandbox.Denial{PID: 814, Program: "curl", Op: "connect", Right: "connect_tcp", Addr: "192.0.2.1:443"}},
		{"Sandbox: nc(815) deny(1) network-bind local:*:8080",
			sandbox.Denial{PID: 815, Program: "nc", Op: "bind", Right: "bind_tcp", Addr: "*:8080"}},
		{"Sandbox: curl(816) deny(1) network-outbound remote:[2001:db8::1]:443",
			sandbox.Denial{PID: 816, Program: "curl", Op: "connect", Right: "connect_tcp", Addr: "[2001:db8::1]:443"}},
	}
	g, err := grant.Parse("verify,network=off")
	if err != nil {
		t.Fatal(err)
	}
	a, err := escalate.New(&policy.Policy{Grant: g, GrantSpec: g.String()}, escalate.Facts{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		r, ok := ParseLogLine(ndjson(t, c.msg))
		if !ok {
			t.Errorf("%q: not parsed", c.msg)
			continue
		}
		want := c.want
		want.Exact, want.Count, want.Time = true, 1, "2026-09-06T04:01:34.988314Z"
		if r.Denial != want {
			t.Errorf("%q:\n got %+v\nwant %+v", c.msg, r.Denial, want)
		}
		rule := a.Classify(r.Denial).Rule
		if tcp := want.Right == "connect_tcp" || want.Right == "bind_tcp"; tcp != (rule == "network-off") {
			t.Errorf("%q: classified %q", c.msg, rule)
		}
	}
}

// Item 7: the predicate selects the sandbox's reporting subsystem as well
// as the kernel's reports, both by the run's tag; a reporting-subsystem
// line that leaves the process to the event's fields is read from them.
// (The predicate is log's language, checked here as text; the format of
// such a line is assumed, not taken from a Mac.)
func TestReportingSubsystem(t *testing.T) {
	pred := LogPredicate("0123abcd")
	for _, part := range []string{`subsystem == "com.apple.sandbox.reporting"`, `eventMessage CONTAINS "Sandbox:"`, `eventMessage CONTAINS "wrun-0123abcd" AND (`} {
		if !strings.Contains(pred, part) {
			t.Errorf("predicate %q lacks %q", pred, part)
		}
	}
	line, err := json.Marshal(map[string]any{
		"subsystem": "com.apple.sandbox.reporting", "category": "violation", "processID": 977,
		"processImagePath": "/usr/bin/git", "timestamp": "2026-09-05 23:01:34.988314-0500",
		"eventMessage": "deny(1) file-write-data /Users/u/proj/.git/config\nwrun-0123abcd",
	})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := ParseLogLine(line)
	want := sandbox.Denial{PID: 977, Program: "git", Op: "open", Path: "/Users/u/proj/.git/config", Right: "write_file", Exact: true, Count: 1, Time: "2026-09-06T04:01:34.988314Z"}
	if !ok || r.Denial != want || r.Message != "wrun-0123abcd" {
		t.Errorf("reporting line: ok=%v %+v %q", ok, r.Denial, r.Message)
	}
	// The control: the same text from any other subsystem is not a report.
	other := strings.Replace(string(line), "com.apple.sandbox.reporting", "com.example", 1)
	if r, ok := ParseLogLine([]byte(other)); ok {
		t.Errorf("another subsystem's line parsed as %+v", r)
	}
}

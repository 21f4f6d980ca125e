package darwin

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// LogPredicate is the `log stream --predicate` that selects the sandbox's
// reports tagged for one run: the kernel's Sandbox reports, and those of
// the sandbox's reporting subsystem (com.apple.sandbox.reporting), whose
// text holds the tag (the profile's (with message "wrun-RUNID")).
func LogPredicate(runID string) string {
	return `eventMessage CONTAINS "` + Tag(runID) + `" AND (subsystem == "com.apple.sandbox.reporting" OR eventMessage CONTAINS "Sandbox:")`
}

// Tag is the message a profile for runID attaches to its denials.
func Tag(runID string) string { return "wrun-" + runID }

// logEvent is the part of a `log stream --style ndjson` line wrun reads.
// The kernel's reports name the offending process only inside
// eventMessage (processID is the reporter, 0); a report of the reporting
// subsystem may instead name it in processID and processImagePath.
type logEvent struct {
	EventMessage     string `json:"eventMessage"`
	Timestamp        string `json:"timestamp"`
	Subsystem        string `json:"subsystem"`
	ProcessID        int    `json:"processID"`
	ProcessImagePath string `json:"processImagePath"`
}

// report is "[N duplicate report(s) for ]Sandbox: COMM(PID) deny(K) OP [TARGET]".
var report = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:(\d+) duplicate reports? for )?Sandbox: (.*)\((\d+)\) deny\(\d+\) ([a-z0-9*-]+)(?: (.*))?$`)
})

// bareReport is "deny(K) OP [TARGET]": a report of the reporting
// subsystem that leaves the process to the event's own fields.
var bareReport = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^deny\(\d+\) ([a-z0-9*-]+)(?: (.*))?$`)
})

// reportingSubsystem is the sandbox's own reporting subsystem.
const reportingSubsystem = "com.apple.sandbox.reporting"

// Report is one denial report of the sandbox as the system log holds it.
type Report struct {
	Denial sandbox.Denial
	// Message is the profile's message on the rule that denied
	// ("wrun-RUNID"), "" when the report carries none.
	Message string
}

// ParseLogLine parses one line of `log stream --style ndjson`. It returns
// the report and true for a sandbox denial; any other line (the stream's
// header, another subsystem's message, a line cut short) gives false.
// The report's denial is exact (the kernel's own word) and its Count
// includes the duplicates the system folded into it.
func ParseLogLine(line []byte) (Report, bool) {
	var ev logEvent
	if err := json.Unmarshal(line, &ev); err != nil || ev.EventMessage == "" {
		return Report{}, false
	}
	if r, ok := parseMessage(ev.EventMessage, logTime(ev.Timestamp)); ok {
		return r, true
	}
	if ev.Subsystem == reportingSubsystem && ev.ProcessID > 0 {
		return parseBare(ev)
	}
	return Report{}, false
}

// parseBare parses a reporting subsystem's report whose text leaves out
// the process: the event names it.
func parseBare(ev logEvent) (Report, bool) {
	first, rest, _ := strings.Cut(ev.EventMessage, "\n")
	m := bareReport().FindStringSubmatch(first)
	if m == nil {
		return Report{}, false
	}
	d := sandbox.Denial{Time: logTime(ev.Timestamp), PID: ev.ProcessID, Program: filepath.Base(ev.ProcessImagePath), Exact: true, Count: 1}
	describe(&d, m[1], m[2])
	return Report{Denial: d, Message: tagLine(rest)}, true
}

// tagLine returns the first line of rest that is a profile's message.
func tagLine(rest string) string {
	for l := range strings.SplitSeq(rest, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "wrun-") {
			return l
		}
	}
	return ""
}

// parseMessage parses a report's text: its first line is the denial, and
// a line after it the profile's message, as the system writes them.
func parseMessage(text, when string) (Report, bool) {
	first, rest, _ := strings.Cut(text, "\n")
	m := report().FindStringSubmatch(first)
	if m == nil {
		return Report{}, false
	}
	pid, err := strconv.Atoi(m[3])
	if err != nil {
		return Report{}, false
	}
	count := 1
	if m[1] != "" {
		n, err := strconv.Atoi(m[1])
		if err != nil || n < 0 || n > 1<<30 {
			return Report{}, false
		}
		count += n
	}
	d := sandbox.Denial{Time: when, PID: pid, Program: m[2], Exact: true, Count: count}
	describe(&d, m[4], m[5])
	return Report{Denial: d, Message: tagLine(rest)}, true
}

// logTime turns the log's "2006-01-02 15:04:05.000000-0700" into RFC 3339.
func logTime(s string) string {
	t, err := time.Parse("2006-01-02 15:04:05.999999-0700", s)
	if err != nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// describe fills in d's operation, path or address and missing right from
// a Seatbelt operation and its target, in the terms the Linux side uses
// (access.Op*, policy.Access names), so that escalation works the same.
func describe(d *sandbox.Denial, op, target string) {
	// File operations name the path (the kernel writes it whole; a
	// report may come shortened). Network operations name a path only for
	// a UNIX socket.
	path := target
	if strings.HasPrefix(op, "network-") && !strings.HasPrefix(target, "/") {
		path = ""
	}
	file := func(kind string, right policy.Access) {
		d.Op, d.Path, d.Right = kind, path, right.String()
	}
	meta := func(kind string) { d.Op, d.Path, d.Right = kind, path, access.RightMetadata }
	switch op {
	case "file-read-data", "file-read-xattr", "file-read*":
		file(access.OpOpen, policy.ReadFile)
	case "file-write-data", "file-write*":
		file(access.OpOpen, policy.WriteFile)
	case "file-write-create":
		file(access.OpCreate, policy.MakeReg)
	case "file-write-unlink":
		file(access.OpUnlink, policy.RemoveFile)
	case "file-link":
		file(access.OpLink, policy.MakeReg)
	case "file-write-mode", "file-write-flags":
		meta(access.OpChmod)
	case "file-write-owner":
		meta(access.OpChown)
	case "file-write-times":
		meta(access.OpUtime)
	case "file-write-xattr":
		meta(access.OpXattr)
	case "process-exec", "process-exec*", "process-exec-interpreter", "file-map-executable":
		file(access.OpExec, policy.Execute)
	case "file-ioctl":
		file(access.OpIoctl, policy.IoctlDev)
	case "network-outbound", "network-bind", "network-inbound":
		kind, right := access.OpConnect, access.RightConnectTCP
		if op != "network-outbound" {
			kind, right = access.OpBind, access.RightBindTCP
		}
		addr := strings.TrimPrefix(strings.TrimPrefix(target, "remote:"), "local:")
		switch {
		case path != "":
			d.Addr = "unix:" + path
			right = access.RightConnectUnix
			if kind == access.OpBind {
				right = policy.MakeSock.String()
			}
		case strings.HasPrefix(addr, "unix-socket:"):
			d.Addr = "unix:" + strings.TrimPrefix(addr, "unix-socket:")
			right = access.RightConnectUnix
		case ipAddress(addr):
			d.Addr = addr
		default:
			// No address at all (getaddrinfo's connect to the netsrc
			// kernel control), or one that is not an IP address: not a
			// TCP connect, and network=on would not change it.
			d.Op, d.Right, d.Addr = op, op, target
			return
		}
		d.Op, d.Right = kind, right
	case "signal":
		d.Op, d.Addr, d.Right = access.OpSignal, target, access.RightSignal
	default:
		// mach-lookup, sysctl-write, iokit-open, ...: named as Seatbelt
		// names them; no file system right covers them.
		d.Op, d.Right = op, op
		if strings.HasPrefix(target, "/") {
			d.Path = target
		} else {
			d.Addr = target
		}
	}
}

// ipAddress reports whether addr is HOST:PORT as the sandbox writes an IP
// address ("*:443", "192.0.2.1:443", "[::1]:80", "localhost:8080").
func ipAddress(addr string) bool {
	i := strings.LastIndexByte(addr, ':')
	if i <= 0 || i == len(addr)-1 {
		return false
	}
	port := addr[i+1:]
	if port != "*" {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return false
		}
	}
	host := addr[:i]
	return !strings.ContainsAny(host, " /")
}

// Uncanonical maps a path the sandbox reported (/private/tmp/x) back onto
// the name the policy gives it (/tmp/x), when a policy path was
// canonicalised into it; otherwise the path is returned as it is.
func Uncanonical(path string, policyPaths []string, canon func(string) string) string {
	best, bestC := "", ""
	for _, p := range policyPaths {
		c := Canonical(p, canon)
		if c == p || !policy.Within(path, c) || len(c) <= len(bestC) {
			continue
		}
		best, bestC = p, c
	}
	if best == "" {
		return path
	}
	if path == bestC {
		return best
	}
	return best + strings.TrimPrefix(path, bestC)
}

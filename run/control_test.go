package run

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/sandbox"
)

const testRun = "20261203T120000Z-0123abcd"

func line(seq int, rest string) string {
	return fmt.Sprintf(`{"schema":%q,"version":1,"run_id":%q,"seq":%d,%s}`, ControlSchemaID, testRun, seq, rest)
}

func TestParseAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		last       uint64
		err        string // "" accepts
	}{
		{"approve", line(1, `"type":"approve","id":"q1","alternative":"d1.allow-write"`), 0, ""},
		{"deny", line(3, `"type":"deny","id":"q2"`), 2, ""},
		{"replayed", line(1, `"type":"deny","id":"q1"`), 1, "sequence number 1: want 2"},
		{"skipped", line(3, `"type":"deny","id":"q1"`), 1, "sequence number 3: want 2"},
		{"zero", line(0, `"type":"deny","id":"q1"`), 0, "sequence number 0"},
		{"wrong run", strings.Replace(line(1, `"type":"deny","id":"q1"`), testRun, "20261203T120000Z-ffffffff", 1), 0, "run id"},
		{"wrong schema", strings.Replace(line(1, `"type":"deny","id":"q1"`), "control.v1", "control.v9", 1), 0, "schema"},
		{"ask from the harness", line(1, `"type":"ask","id":"q1"`), 0, "type \"ask\""},
		{"decided from the harness", line(1, `"type":"decided","id":"q1"`), 0, "type \"decided\""},
		{"approve without alternative", line(1, `"type":"approve","id":"q1"`), 0, "names no alternative"},
		{"deny with alternative", line(1, `"type":"deny","id":"q1","alternative":"x"`), 0, "names an alternative"},
		{"no id", line(1, `"type":"deny","id":""`), 0, "no question id"},
		{"unknown member", line(1, `"type":"deny","id":"q1","scope":"session"`), 0, "unknown field"},
		{"wrun's member", line(1, `"type":"deny","id":"q1","approved":true`), 0, "only wrun sends"},
		{"two objects", line(1, `"type":"deny","id":"q1"`) + `{}`, 0, "more follows"},
		{"not json", `approve q1`, 0, "not a control message"},
		{"oversized", line(1, `"type":"deny","id":"q1","alternative":"`+strings.Repeat("x", MaxControlLine)+`"`), 0, "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseAnswer([]byte(tc.line), testRun, tc.last)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("got %v, want an error with %q", err, tc.err)
			}
		})
	}
}

// pipeRW is a control channel's far end in memory: what the harness
// writes is read by wrun; what wrun writes is kept.
type pipeRW struct {
	r     io.Reader
	mu    sync.Mutex
	wrote bytes.Buffer
}

func (p *pipeRW) Read(b []byte) (int, error) { return p.r.Read(b) }
func (p *pipeRW) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.wrote.Write(b)
}
func (p *pipeRW) Close() error { return nil }

// askOnce asks one question on a channel fed input, approving whatever
// the harness approves (decide accepts every alternative).
func askOnce(t testing.TB, input []byte) (string, bool) {
	c := NewControl(&pipeRW{r: bytes.NewReader(input)}, testRun, 200*time.Millisecond)
	c.decide = func(q *question, d escalate.Decision) (string, string, error) {
		alt := strings.Join(d.Alternatives, ",")
		if alt != "d1.allow-write" {
			return "", "", fmt.Errorf("no alternative %q", alt)
		}
		return "/tmp/approved", alt, nil
	}
	req := &escalate.Request{RunID: testRun}
	dir, ok := make(chan string, 1), make(chan bool, 1)
	go func() {
		d, o := c.ask(sandbox.Denial{Op: "create", Path: "/tmp/approved/f", Right: "make_reg"}, func() *escalate.Request { return req }, nil)
		dir <- d
		ok <- o
	}()
	// The question is asked before the answers are read.
	for deadline := time.Now().Add(time.Second); ; {
		c.mu.Lock()
		n := len(c.byID)
		c.mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	c.start()
	d, o := <-dir, <-ok
	return d, o
}

func TestControlAnswers(t *testing.T) {
	approve := line(1, `"type":"approve","id":"q1","alternative":"d1.allow-write"`) + "\n"
	for _, tc := range []struct {
		name, input string
		ok          bool
	}{
		{"approved", approve, true},
		{"denied", line(1, `"type":"deny","id":"q1"`) + "\n", false},
		{"closed", "", false},
		{"no newline", strings.TrimSuffix(approve, "\n"), false},
		{"unknown question", line(1, `"type":"approve","id":"q9","alternative":"d1.allow-write"`) + "\n", false},
		{"unknown alternative", line(1, `"type":"approve","id":"q1","alternative":"d1.grant"`) + "\n", false},
		{"unknown question before", line(1, `"type":"deny","id":"q7"`) + "\n" + line(1, `"type":"approve","id":"q1","alternative":"d1.allow-write"`) + "\n", false},
		{"oversized before", strings.Repeat("x", MaxControlLine+10) + "\n" + approve, false},
		{"garbage before", "{}\n" + approve, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, ok := askOnce(t, []byte(tc.input))
			if ok != tc.ok || ok && dir != "/tmp/approved" {
				t.Fatalf("got %q %v, want approved %v", dir, ok, tc.ok)
			}
		})
	}
}

// FuzzControlChannel feeds the reader hostile input: it never panics,
// and nothing but the one well-formed approve at seq 1 approves.
func FuzzControlChannel(f *testing.F) {
	f.Add([]byte(line(1, `"type":"approve","id":"q1","alternative":"d1.allow-write"`) + "\n"))
	f.Add([]byte(line(1, `"type":"deny","id":"q1"`) + "\n"))
	f.Add([]byte(line(2, `"type":"approve","id":"q1","alternative":"d1.allow-write"`) + "\n"))
	f.Add([]byte("{\n}\n\x00\xff"))
	f.Fuzz(func(t *testing.T, input []byte) {
		if _, err := ParseAnswer(input, testRun, 0); err == nil {
			// Whatever parses is one answer of this run at seq 1.
			m, _ := ParseAnswer(input, testRun, 0)
			if m.RunID != testRun || m.Seq != 1 {
				t.Fatalf("accepted %+v", m)
			}
		}
		_, ok := askOnce(t, input)
		if !ok {
			return
		}
		// Approved: the first line must be a valid approve of q1.
		first, _, _ := bytes.Cut(input, []byte("\n"))
		m, err := ParseAnswer(first, testRun, 0)
		if err != nil || m.Type != ControlApprove || m.ID != "q1" || m.Alternative != "d1.allow-write" {
			t.Fatalf("approved on %q", input)
		}
	})
}

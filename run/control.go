package run

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/internal/quote"
	"github.com/wrun-dev/wrun/sandbox"
)

// The control channel (--control-fd) of --on-denial=hold: one
// descriptor, read and written (a socket), JSON lines both ways. wrun
// asks (ask: a question id and the request for one denial); the harness
// answers each question once (approve with one alternative id, or deny);
// wrun says what it decided (decided). Every line names the schema, its
// version, the run id and a sequence number: each side numbers its own
// lines 1, 2, 3, ... and a line out of that order, of another run, too
// long, or not an answer to a question wrun asked ends the channel: every
// question waiting and every later one is then denied (fail closed).

// ControlSchemaID names the format of a control line: the $id of
// schema/control.v1.json; ControlVersion changes with its shape.
const (
	ControlSchemaID = "https://wrun.dev/schema/control.v1.json"
	ControlVersion  = 1
)

//go:embed schema/control.v1.json
var controlSchemaJSON []byte

// ControlSchema returns the published JSON Schema of one control line (a
// copy of schema/control.v1.json).
func ControlSchema() []byte { return bytes.Clone(controlSchemaJSON) }

// The values of ControlMessage.Type.
const (
	ControlAsk     = "ask"
	ControlApprove = "approve"
	ControlDeny    = "deny"
	ControlDecided = "decided"
)

// MaxControlLine bounds a line the harness sends, newline included.
const MaxControlLine = 16 << 10

// DefaultHoldTimeout is how long a held call waits for its answer.
const DefaultHoldTimeout = 60 * time.Second

// controlWriteTimeout bounds one write of wrun's to the control channel.
const controlWriteTimeout = 10 * time.Second

// maxQuestions bounds the questions of one run: beyond it a held call is
// denied without asking.
const maxQuestions = 256

// ControlMessage is one line of the control channel.
type ControlMessage struct {
	Schema  string `json:"schema"`
	Version int    `json:"version"`
	RunID   string `json:"run_id"`
	Seq     uint64 `json:"seq"`
	Type    string `json:"type"`
	// ID names the question (q1, q2, ...): ask, approve, deny, decided.
	ID string `json:"id"`
	// Alternative is the approved alternative's id: approve; decided
	// when approved.
	Alternative string `json:"alternative,omitempty"`
	// Request is the escalation request (escalate/schema/request.v3.json)
	// with the one denial asked about, its alternatives and the ceiling:
	// ask.
	Request *escalate.Request `json:"request,omitempty"`
	// TimeoutMS is how long wrun waits for the answer: ask.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Approved and Reason: decided.
	Approved *bool  `json:"approved,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// ParseAnswer reads one line the harness sent: an approve or a deny of
// run runID whose sequence number is last+1. Anything else is an error,
// which ends the channel.
func ParseAnswer(line []byte, runID string, last uint64) (ControlMessage, error) {
	if len(line) > MaxControlLine {
		return ControlMessage{}, fmt.Errorf("a line of more than %d bytes", MaxControlLine)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var m ControlMessage
	if err := dec.Decode(&m); err != nil {
		return ControlMessage{}, fmt.Errorf("not a control message: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ControlMessage{}, errors.New("more follows the JSON object on its line")
	}
	switch {
	case m.Schema != ControlSchemaID || m.Version != ControlVersion:
		return m, fmt.Errorf("schema %q version %d: want %q version %d", m.Schema, m.Version, ControlSchemaID, ControlVersion)
	case m.RunID != runID:
		return m, fmt.Errorf("run id %q: this run is %q", m.RunID, runID)
	case m.Seq != last+1:
		return m, fmt.Errorf("sequence number %d: want %d (replayed or out of order)", m.Seq, last+1)
	case m.Type != ControlApprove && m.Type != ControlDeny:
		return m, fmt.Errorf("type %q: the harness sends approve or deny", m.Type)
	case m.ID == "":
		return m, errors.New("no question id")
	case m.Type == ControlApprove && m.Alternative == "":
		return m, errors.New("an approve names no alternative")
	case m.Type == ControlDeny && m.Alternative != "":
		return m, errors.New("a deny names an alternative")
	case m.Request != nil || m.TimeoutMS != 0 || m.Approved != nil || m.Reason != "":
		return m, errors.New("members only wrun sends")
	}
	return m, nil
}

// Control is wrun's side of the control channel of one run.
type Control struct {
	rw      io.ReadWriteCloser
	runID   string
	timeout time.Duration

	wmu  sync.Mutex // one line at a time, in seq order
	wseq uint64

	mu      sync.Mutex
	asked   int
	byID    map[string]*question
	byKey   map[string]*question
	broken  string // why the channel ended, once it has
	started bool
	// approver, when set, answers each question in place of a harness
	// on rw (NewApproverControl).
	approver Approver
	// hooks, set by the run: decide checks an approval of a question;
	// answered tells the events stream.
	decide   func(q *question, d escalate.Decision) (dir, alts string, err error)
	answered func(q *question)
}

// NewApproverControl makes a channel with no descriptor: each question
// is the request on an approver's stdin (--approver CMD,
// CommandApprover), its decision read as a rerun's is; an approval
// without ids takes the narrowest safe alternative (escalate.Narrowest).
// A held call waits timeout at most.
func NewApproverControl(approve Approver, runID string, timeout time.Duration) *Control {
	c := NewControl(nil, runID, timeout)
	c.approver = approve
	return c
}

// question is one ask.
type question struct {
	id   string
	key  string
	req  *escalate.Request
	op   string // the denial's operation
	path string
	done chan struct{}
	// Set once, before done closes.
	dir, alt, reason string
	ok               bool
}

// NewControl makes the control channel of run runID on rw; a held call
// waits timeout (DefaultHoldTimeout when 0) for its answer.
func NewControl(rw io.ReadWriteCloser, runID string, timeout time.Duration) *Control {
	if timeout <= 0 {
		timeout = DefaultHoldTimeout
	}
	return &Control{rw: rw, runID: runID, timeout: timeout, byID: map[string]*question{}, byKey: map[string]*question{}}
}

// start begins reading answers, once.
func (c *Control) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started || c.rw == nil {
		return
	}
	c.started = true
	go c.read()
}

// askApprover answers q with the approver's decision.
func (c *Control) askApprover(q *question) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	go func() {
		<-q.done // decided elsewhere (the timeout, the run's end): the approver is killed
		cancel()
	}()
	d, err := c.approver(ctx, q.req)
	if err != nil {
		c.settle(q, "", "", err.Error(), false)
		return
	}
	if d.Decision != escalate.DecisionApprove {
		c.settle(q, "", "", "the approver denied it", false)
		return
	}
	dir, alt, err := c.decide(q, d)
	if err != nil {
		c.settle(q, "", strings.Join(d.Alternatives, ","), err.Error(), false)
		return
	}
	c.settle(q, dir, alt, "", true)
}

// read reads answers until the channel ends.
func (c *Control) read() {
	r := bufio.NewReaderSize(c.rw, MaxControlLine)
	var last uint64
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			c.fail(fmt.Sprintf("the harness sent a line of more than %d bytes", MaxControlLine))
			return
		}
		if err != nil {
			if len(bytes.TrimSpace(line)) > 0 {
				c.fail("the harness's last line has no newline")
			} else {
				c.fail("the harness closed the control channel")
			}
			return
		}
		m, err := ParseAnswer(bytes.TrimSuffix(line, []byte("\n")), c.runID, last)
		if err != nil {
			c.fail("refused the harness's line " + strconv.FormatUint(last+1, 10) + ": " + err.Error())
			return
		}
		last = m.Seq
		if !c.answer(m) {
			c.fail(fmt.Sprintf("the harness answered question %q, which wrun did not ask", m.ID))
			return
		}
	}
}

// answer decides the question m answers; false when wrun asked no such
// question. An answer to a question already decided (timed out) is
// ignored.
func (c *Control) answer(m ControlMessage) bool {
	c.mu.Lock()
	q, ok := c.byID[m.ID]
	c.mu.Unlock()
	if !ok {
		return false
	}
	if m.Type == ControlDeny {
		c.settle(q, "", "", "the harness denied it", false)
		return true
	}
	dir, _, err := c.decide(q, escalate.Decision{Decision: escalate.DecisionApprove, Alternatives: []string{m.Alternative}, Scope: escalate.ScopeRun})
	if err != nil {
		c.settle(q, "", m.Alternative, err.Error(), false)
		return true
	}
	c.settle(q, dir, m.Alternative, "", true)
	return true
}

// settle decides q once: the first decision stands.
func (c *Control) settle(q *question, dir, alt, reason string, ok bool) {
	c.mu.Lock()
	select {
	case <-q.done:
		c.mu.Unlock()
		return
	default:
	}
	q.dir, q.alt, q.reason, q.ok = dir, alt, reason, ok
	close(q.done)
	c.mu.Unlock()
	approved := ok
	c.send(ControlMessage{Type: ControlDecided, ID: q.id, Alternative: alt, Approved: &approved, Reason: reason})
	if c.answered != nil {
		c.answered(q)
	}
}

// fail ends the channel: every question waiting, and every later one, is
// denied.
func (c *Control) fail(why string) {
	c.mu.Lock()
	if c.broken == "" {
		c.broken = why
	}
	var open []*question
	for _, q := range c.byID {
		open = append(open, q)
	}
	c.mu.Unlock()
	for _, q := range open {
		c.settle(q, "", "", "the control channel ended: "+why, false)
	}
}

// Broken says why the channel ended early ("" while it has not).
func (c *Control) Broken() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.broken
}

// send writes one line of wrun's, numbered.
func (c *Control) send(m ControlMessage) {
	if c.rw == nil {
		return // an approver's channel: nothing to write
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wseq++
	m.Schema, m.Version, m.RunID, m.Seq = ControlSchemaID, ControlVersion, c.runID, c.wseq
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(m) != nil {
		return
	}
	// A harness that stops reading ends the channel rather than holding
	// wrun's writes for good.
	if d, ok := c.rw.(interface{ SetWriteDeadline(time.Time) error }); ok {
		_ = d.SetWriteDeadline(time.Now().Add(controlWriteTimeout))
	}
	if _, err := c.rw.Write(quote.JSON(buf.Bytes())); err != nil {
		go c.fail("writing to the control channel: " + err.Error())
	}
}

// ask holds the caller until the question about d is decided (another
// call with the same denial waits for the same question; a denial
// decided before is not asked again): the approved directory, or false.
// req builds the request for d, id names the denial.
func (c *Control) ask(d sandbox.Denial, req func() *escalate.Request, held func(q *question)) (string, bool) {
	key := sandbox.DenialKey(d)
	c.mu.Lock()
	if c.broken != "" {
		c.mu.Unlock()
		return "", false
	}
	q, ok := c.byKey[key]
	if !ok {
		if c.asked >= maxQuestions {
			c.mu.Unlock()
			return "", false
		}
		c.asked++
		q = &question{id: "q" + strconv.Itoa(c.asked), key: key, req: req(), op: d.Op, path: filepath.Clean(d.Path), done: make(chan struct{})}
		if q.req == nil {
			c.mu.Unlock()
			return "", false
		}
		c.byKey[key], c.byID[q.id] = q, q
	}
	c.mu.Unlock()
	if !ok {
		if held != nil {
			held(q)
		}
		time.AfterFunc(c.timeout, func() { c.settle(q, "", "", fmt.Sprintf("no answer within %s", c.timeout), false) })
		c.send(ControlMessage{Type: ControlAsk, ID: q.id, Request: q.req, TimeoutMS: c.timeout.Milliseconds()})
		if c.approver != nil {
			go c.askApprover(q)
		}
	}
	<-q.done
	return q.dir, q.ok
}

// decision sums up the questions of the run for its summary and receipt
// (Summary.Decision): approved when any was, with the flags and ids of
// what was applied live; nil when nothing was asked.
func (c *Control) decision() *DecisionSummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.asked == 0 {
		return nil
	}
	d := &DecisionSummary{Scope: escalate.ScopeRun}
	for i := 1; i <= c.asked; i++ {
		q, ok := c.byID["q"+strconv.Itoa(i)]
		if !ok {
			continue
		}
		select {
		case <-q.done:
		default:
			continue
		}
		if !q.ok {
			d.Reason = q.id + ": " + q.reason
			continue
		}
		flag := "--allow-write"
		if q.op == "connect" {
			flag = "--allow-unix"
		}
		if !slices.Contains(d.Args, q.dir) {
			d.Args = append(d.Args, flag, q.dir)
		}
		d.IDs = append(d.IDs, strings.Split(q.alt, ",")...)
		d.Approved = true
	}
	if d.Approved {
		d.Reason = ""
	}
	return d
}

// Close ends the channel for wrun (its reader stops).
func (c *Control) Close() error {
	c.fail("the run ended")
	if c.rw == nil {
		return nil
	}
	return c.rw.Close()
}

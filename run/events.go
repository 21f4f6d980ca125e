package run

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/internal/quote"
)

// EventsSchemaID names the format of a line of the events stream
// (--events-fd): the $id of schema/events.v1.json. EventsVersion changes
// with any change of shape a reader must know of.
const (
	EventsSchemaID = "https://wrun.dev/schema/events.v1.json"
	EventsVersion  = 1
)

//go:embed schema/events.v1.json
var eventsSchemaJSON []byte

// EventsSchema returns the published JSON Schema of one event line (a
// copy of schema/events.v1.json).
func EventsSchema() []byte { return bytes.Clone(eventsSchemaJSON) }

// The values of Event.Event.
const (
	EventStarted = "started"
	EventDenial  = "denial"
	EventHeld    = "held"
	EventAnswer  = "answer"
	EventExited  = "exited"
)

// Event is one line of the events stream.
type Event struct {
	Schema  string `json:"schema"`
	Version int    `json:"version"`
	RunID   string `json:"run_id"`
	// Seq is 1 for the stream's first line and one more for each next;
	// a gap is lines wrun could not write in time (Dropped says how many).
	Seq   uint64 `json:"seq"`
	Event string `json:"event"`
	// Grant, Sandbox and Degraded: started (the effective grant).
	Grant    string `json:"grant,omitempty"`
	Sandbox  string `json:"sandbox,omitempty"`
	Degraded *bool  `json:"degraded,omitempty"`
	// Denial: denial and held, the request's denial object.
	Denial *escalate.DeniedAct `json:"denial,omitempty"`
	// Question names the control channel's question: held and answer.
	Question string `json:"question,omitempty"`
	// Approved, Alternative and Reason: answer.
	Approved    *bool  `json:"approved,omitempty"`
	Alternative string `json:"alternative,omitempty"`
	Reason      string `json:"reason,omitempty"`
	// Summary: exited, the summary as --json-fd writes it.
	Summary *Summary `json:"summary,omitempty"`
	// Dropped: exited, how many lines were not written.
	Dropped int `json:"dropped,omitempty"`
}

// maxQueuedEvents bounds the lines waiting to be written: a reader that
// does not keep up loses lines (counted), it never slows the command.
const maxQueuedEvents = 4096

// Events writes the events stream of one run: JSON lines, in order, from
// a goroutine of its own so that no caller waits for the reader.
type Events struct {
	runID string
	mu    sync.Mutex
	seq   uint64
	lost  int
	q     chan []byte
	done  chan struct{}
	shut  bool
}

// NewEvents starts the stream of run runID on w.
func NewEvents(w io.Writer, runID string) *Events {
	e := &Events{runID: runID, q: make(chan []byte, maxQueuedEvents), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		broken := false
		for b := range e.q {
			if !broken {
				_, err := w.Write(b)
				broken = err != nil
			}
		}
	}()
	return e
}

func (e *Events) emit(ev Event, wait bool) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.shut {
		return
	}
	e.seq++
	ev.Schema, ev.Version, ev.RunID, ev.Seq = EventsSchemaID, EventsVersion, e.runID, e.seq
	if ev.Event == EventExited {
		ev.Dropped = e.lost
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(ev) != nil {
		e.lost++
		return
	}
	b := quote.JSON(buf.Bytes())
	if wait {
		select {
		case e.q <- b:
		case <-time.After(5 * time.Second):
			e.lost++
		}
		return
	}
	select {
	case e.q <- b:
	default:
		e.lost++
	}
}

// Started says the command is about to start.
func (e *Events) Started(grant, sandbox string, degraded bool) {
	e.emit(Event{Event: EventStarted, Grant: grant, Sandbox: sandbox, Degraded: &degraded}, false)
}

// Denial says the sandbox refused act, as it happened.
func (e *Events) Denial(act escalate.DeniedAct) {
	e.emit(Event{Event: EventDenial, Denial: &act}, false)
}

// Held says a call waits for the answer to question q.
func (e *Events) Held(q string, act escalate.DeniedAct) {
	e.emit(Event{Event: EventHeld, Question: q, Denial: &act}, false)
}

// Answer says how question q was decided.
func (e *Events) Answer(q string, approved bool, alt, reason string) {
	e.emit(Event{Event: EventAnswer, Question: q, Approved: &approved, Alternative: alt, Reason: reason}, false)
}

// Exited ends the stream with the run's summary (stamped, as --json-fd
// writes it) and waits, a few seconds at most, for it to be written.
func (e *Events) Exited(s *Summary) {
	if e == nil {
		return
	}
	e.emit(Event{Event: EventExited, Summary: s}, true)
	e.Close()
}

// Close ends the stream without an exited line, waiting a few seconds at
// most for what is queued.
func (e *Events) Close() {
	if e == nil {
		return
	}
	e.mu.Lock()
	if !e.shut {
		e.shut = true
		close(e.q)
	}
	e.mu.Unlock()
	select {
	case <-e.done:
	case <-time.After(5 * time.Second):
	}
}

package run

import (
	"os"
	"sync"
)

// prestage is the part of a launch a platform starts before the policy
// exists, to overlap its start with the policy work (on Linux, the stage:
// a second start of this program). startPrestage starts it for a
// platform; adopt gives the plan that runs with it, and abandon ends it
// when no plan used it (after a run, it does nothing).
type prestage interface {
	adopt(Plan) Plan
	abandon()
}

// Early is a prestage started before Run, as soon as the program has
// checked its flags: the work before Run (reading the config, a few
// milliseconds) then overlaps the stage's own start too.
type Early struct {
	mu  sync.Mutex
	pre prestage
}

// StartEarly starts the stage for a run on the native platform whose
// command gets stdin, before Run (Config.Early).
func StartEarly(keepBackground bool, stdin *os.File) *Early {
	return &Early{pre: startPrestage(Native(), keepBackground, stdin)}
}

// take hands over the early prestage once; nil afterwards, and for a nil
// Early.
func (e *Early) take() prestage {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.pre
	e.pre = nil
	return p
}

// Abandon ends the early stage unless a run took it; it may be called
// any number of times, and on nil.
func (e *Early) Abandon() {
	if p := e.take(); p != nil {
		p.abandon()
	}
}

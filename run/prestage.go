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

// Early is a prestage started first thing in a program's main, before
// its flags and config are read: that work (a few milliseconds) then
// overlaps the stage's own start too.
type Early struct {
	mu  sync.Mutex
	pre prestage
}

// StartEarly starts the stage for a run on the native platform with the
// calling process's stdin, guessing keepBackground from the flags; the
// launch checks the guess (Config.Early).
func StartEarly(keepBackground bool) *Early {
	return &Early{pre: startPrestage(Native(), keepBackground, os.Stdin)}
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

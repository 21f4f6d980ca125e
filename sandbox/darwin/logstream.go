package darwin

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/wrun-dev/wrun/sandbox"
)

// logReader follows `log stream --style ndjson` for one run's reports. It
// is pure Go: run_darwin.go starts the stream and hands its output here.
type logReader struct {
	tag   string
	first chan struct{} // closed at the stream's first line
	done  chan struct{} // closed when the stream has ended

	mu      sync.Mutex
	reports []Report
	last    time.Time // when the last report of this run arrived
}

func newLogReader(tag string) *logReader {
	return &logReader{tag: tag, first: make(chan struct{}), done: make(chan struct{})}
}

// read consumes the stream until it ends. The first line `log stream`
// prints ("Filtering the log data using ...") comes once it is attached
// to the system log: a report made after it is shown.
func (lr *logReader) read(r io.Reader) {
	defer close(lr.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	started := false
	for sc.Scan() {
		if !started {
			started = true
			close(lr.first)
		}
		rep, ok := ParseLogLine(sc.Bytes())
		if !ok || rep.Message != lr.tag {
			continue
		}
		lr.mu.Lock()
		if len(lr.reports) < 4*sandbox.MaxDenials {
			lr.reports = append(lr.reports, rep)
		}
		lr.last = time.Now()
		lr.mu.Unlock()
	}
	// A line too long for the buffer ends the scan: the rest is not read,
	// but the stream must still be drained, or `log` blocks on its pipe.
	_, _ = io.Copy(io.Discard, r)
}

// ready waits until the stream shows its first line, at most within. An
// error says why denials will be inferred instead.
func (lr *logReader) ready(within time.Duration) error {
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-lr.first:
		return nil
	case <-lr.done:
		select {
		case <-lr.first:
			return nil
		default:
		}
		return errors.New("log stream ended before it printed anything (reading the system log may need privileges wrun lacks)")
	case <-t.C:
		return fmt.Errorf("log stream printed nothing within %s", within)
	}
}

// drain waits for the reports still on their way once the command has
// ended: until no report of this run has arrived for quiet, at most for
// limit. It returns false when it stopped at limit with reports still
// arriving.
func (lr *logReader) drain(quiet, limit time.Duration) bool {
	start := time.Now()
	for {
		lr.mu.Lock()
		last := lr.last
		lr.mu.Unlock()
		since := start
		if last.After(start) {
			since = last
		}
		wait := quiet - time.Since(since)
		if wait <= 0 {
			return true
		}
		if time.Since(start)+wait > limit {
			wait = limit - time.Since(start)
			if wait <= 0 {
				return false
			}
		}
		select {
		case <-lr.done:
			return true
		case <-time.After(wait):
		}
	}
}

// taken returns the reports read so far.
func (lr *logReader) taken() []Report {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return append([]Report(nil), lr.reports...)
}

package darwin

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Item 8: readiness is the stream's first line, with no probe run: ready
// returns once `log stream` prints its header; a stream that ends first,
// or prints nothing in time, is not ready (denials are then inferred).
func TestLogReady(t *testing.T) {
	pr, pw := io.Pipe()
	lr := newLogReader(Tag("R"))
	go lr.read(pr)
	go func() {
		time.Sleep(20 * time.Millisecond)
		_, _ = io.WriteString(pw, `Filtering the log data using "eventMessage CONTAINS \"wrun-R\""`+"\n")
	}()
	if err := lr.ready(2 * time.Second); err != nil {
		t.Errorf("after the header: %v", err)
	}
	_ = pw.Close()

	ended := newLogReader(Tag("R"))
	go ended.read(strings.NewReader(""))
	if err := ended.ready(2 * time.Second); err == nil || !strings.Contains(err.Error(), "ended") {
		t.Errorf("a stream that ends silently: %v", err)
	}

	pr2, pw2 := io.Pipe()
	defer pw2.Close()
	silent := newLogReader(Tag("R"))
	go silent.read(pr2)
	if err := silent.ready(30 * time.Millisecond); err == nil {
		t.Error("a silent stream is ready")
	}
}

// After the command, drain waits for reports still arriving, until the
// stream has been quiet, and keeps only this run's; it stops at its limit
// when they keep coming.
func TestLogDrain(t *testing.T) {
	pr, pw := io.Pipe()
	lr := newLogReader(Tag("R"))
	go lr.read(pr)
	line := func(tag string) string {
		return string(ndjson(t, "Sandbox: cat(7) deny(1) file-read-data /x\n"+tag)) + "\n"
	}
	_, _ = io.WriteString(pw, "header\n")
	if err := lr.ready(time.Second); err != nil {
		t.Fatal(err)
	}
	go func() {
		for i := 0; i < 3; i++ {
			time.Sleep(40 * time.Millisecond)
			_, _ = io.WriteString(pw, line("wrun-R"))
			_, _ = io.WriteString(pw, line("wrun-other"))
		}
	}()
	start := time.Now()
	if !lr.drain(100*time.Millisecond, 2*time.Second) {
		t.Error("drain stopped at its limit")
	}
	if got := len(lr.taken()); got != 3 {
		t.Errorf("%d reports after the drain, want the run's 3", got)
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Errorf("drain returned after %s, before the last report had been quiet for 100ms", time.Since(start))
	}
	// Reports that keep coming: drain gives up at its limit.
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				_, _ = io.WriteString(pw, line("wrun-R"))
			}
		}
	}()
	start = time.Now()
	if lr.drain(100*time.Millisecond, 300*time.Millisecond) {
		t.Error("drain says the stream was quiet while reports kept coming")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("drain took %s, past its limit", d)
	}
	close(stop)
	_ = pw.Close()
}

// Item 8: the compile check is kept per shape. Runs of one grant differ
// only in their tag, which the key leaves out; a different text or macOS
// build is a new shape. A record is a regular file in the state
// directory; nothing else counts as one.
func TestShapeKey(t *testing.T) {
	h := host(t, t.TempDir())
	p := compute(t, "write", h)
	a, err := Generate(Input{Policy: p, RunID: "aaaa"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(Input{Policy: p, RunID: "bbbb"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Text == b.Text {
		t.Fatal("the run id is not in the text: the test shows nothing")
	}
	ka, kb := ShapeKey(a.Text, "aaaa", "24A335"), ShapeKey(b.Text, "bbbb", "24A335")
	if ka != kb {
		t.Error("two runs of one shape have different keys")
	}
	if ka == ShapeKey(a.Text, "aaaa", "25A100") {
		t.Error("another macOS build has the same key")
	}
	other, err := Generate(Input{Policy: compute(t, "verify", h), RunID: "aaaa"})
	if err != nil {
		t.Fatal(err)
	}
	if ka == ShapeKey(other.Text, "aaaa", "24A335") {
		t.Error("another grant's profile has the same key")
	}

	state := t.TempDir()
	if compiledBefore(state, ka) || compiledBefore("", ka) {
		t.Error("a shape is recorded before any check")
	}
	if err := recordCompiled(state, ka); err != nil {
		t.Fatal(err)
	}
	if err := recordCompiled(state, ka); err != nil {
		t.Errorf("recording twice: %v", err)
	}
	if !compiledBefore(state, ka) || compiledBefore(state, kb+"x") {
		t.Error("the record is not found, or found for another key")
	}
	if err := recordCompiled("", ka); err != nil {
		t.Errorf("no state directory: %v", err)
	}
	// Anything but a regular file is no record: a directory, a link.
	kc := ShapeKey(other.Text, "aaaa", "24A335")
	if err := os.Mkdir(filepath.Join(shapeDir(state), kc), 0o700); err != nil {
		t.Fatal(err)
	}
	kd := ShapeKey(other.Text, "aaaa", "25A100")
	if err := os.Symlink(filepath.Join(shapeDir(state), ka), filepath.Join(shapeDir(state), kd)); err != nil {
		t.Fatal(err)
	}
	if compiledBefore(state, kc) || compiledBefore(state, kd) {
		t.Error("a directory or a link counts as a record")
	}
}

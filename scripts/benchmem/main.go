// Command benchmem measures the resident memory of wrun while it
// supervises a command: it starts N copies of a wrun command line at once
// (each running something that lasts, `sleep 1` say), samples
// /proc/PID/status of every wrun process until they exit, and prints a
// Markdown table: the peak resident set (VmHWM) of wrun, and its
// resident set and proportional set size (Pss, shared pages divided among
// the processes sharing them) halfway through the command.
//
//	benchmem -n 100 -mid 500ms -- wrun --grant inspect -- sleep 1
//
// It is run by scripts/bench.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// mem is what is known of one process, in kB.
type mem struct {
	hwm, rss, pss int
	seen          bool
}

// run is one wrun.
type run struct {
	wrun mem
	err  error
}

func main() {
	n := flag.Int("n", 1, "how many copies to run at once")
	mid := flag.Duration("mid", 500*time.Millisecond, "when, after the last start, to take the resident and proportional sizes")
	every := flag.Duration("every", 5*time.Millisecond, "how often to sample the peaks")
	label := flag.String("label", "", "a `name` for the table's rows")
	flag.Parse()
	argv := flag.Args()
	if len(argv) == 0 || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: benchmem [-n N] [-mid D] [-label NAME] -- COMMAND [ARGS...]")
		os.Exit(2)
	}
	runs := make([]run, *n)
	cmds := make([]*exec.Cmd, *n)
	for i := range cmds {
		c := exec.Command(argv[0], argv[1:]...)
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "benchmem:", err)
			os.Exit(1)
		}
		cmds[i] = c
	}
	var mu sync.Mutex
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.Wait()
			mu.Lock()
			runs[i].err = err
			mu.Unlock()
		}()
	}
	go func() { wg.Wait(); close(done) }()
	midAt := time.After(*mid)
	tick := time.NewTicker(*every)
	defer tick.Stop()
	sample := func(withPss bool) {
		mu.Lock()
		defer mu.Unlock()
		for i, c := range cmds {
			r := &runs[i]
			if r.err != nil || c.ProcessState != nil {
				continue
			}
			readInto(&r.wrun, c.Process.Pid, withPss)
		}
	}
loop:
	for {
		select {
		case <-done:
			break loop
		case <-midAt:
			sample(true)
		case <-tick.C:
			sample(false)
		}
	}
	failed := 0
	for _, r := range runs {
		if r.err != nil {
			failed++
		}
	}
	name := *label
	if name == "" {
		name = strings.Join(argv, " ")
	}
	col := func(get func(run) mem, f func(mem) int) (string, string) {
		var v []int
		for _, r := range runs {
			if m := get(r); m.seen && f(m) > 0 {
				v = append(v, f(m))
			}
		}
		if len(v) == 0 {
			return "n/a", "n/a"
		}
		slices.Sort(v)
		return mb(v[len(v)/2]), mb(v[len(v)-1])
	}
	wr := func(r run) mem { return r.wrun }
	hwm := func(m mem) int { return m.hwm }
	rss := func(m mem) int { return m.rss }
	pss := func(m mem) int { return m.pss }
	fmt.Printf("| %s | %d |", name, *n)
	for _, c := range [][2]any{{wr, hwm}, {wr, rss}, {wr, pss}} {
		med, mx := col(c[0].(func(run) mem), c[1].(func(mem) int))
		fmt.Printf(" %s / %s |", med, mx)
	}
	fmt.Printf(" %d |\n", failed)
}

// mb formats kB as MB with one decimal.
func mb(kb int) string { return fmt.Sprintf("%.1f", float64(kb)/1024) }

// readInto updates m from /proc/PID: the peak always, the resident and
// proportional sizes when withPss (halfway through).
func readInto(m *mem, pid int, withPss bool) {
	st := statusFields(filepath.Join("/proc", strconv.Itoa(pid), "status"), "VmHWM:", "VmRSS:")
	if st == nil {
		return
	}
	m.seen = true
	m.hwm = max(m.hwm, st["VmHWM:"])
	if withPss {
		m.rss = st["VmRSS:"]
		if p := statusFields(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"), "Pss:"); p != nil {
			m.pss = p["Pss:"]
		}
	}
}

// statusFields reads "Name: N kB" lines of a /proc file.
func statusFields(path string, names ...string) map[string]int {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 2 && slices.Contains(names, fs[0]) {
			if v, err := strconv.Atoi(fs[1]); err == nil {
				out[fs[0]] = v
			}
		}
	}
	return out
}

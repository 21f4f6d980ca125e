package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// reachHands reaches for the hands process (target "hands") or, the
// control, a dumpable child of the probe's own (target "own"): it opens
// the target's memory, its descriptor 3 through /proc and its environment,
// and takes descriptor 3 with pidfd_getfd. For the hands, a goroutine
// also races the hands' start: from before the first mediated call (a
// bind and connect in dir, which starts a lazily started hands) it tries
// the memory and descriptor of every new process as soon as it appears.
// It prints "reached=[...] refused=[...]": what worked and what did not.
func reachHands(dir, target string) error {
	var reached, refused []string
	try := func(what string, err error) {
		if err == nil {
			reached = append(reached, what)
			return
		}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			refused = append(refused, what+":"+errnoName(errno))
			return
		}
		refused = append(refused, what+":"+err.Error())
	}
	var pid int
	var raced []string
	switch target {
	case "own":
		c := exec.Command(os.Args[0], "block")
		c.Stdin, c.Stdout = os.Stdin, os.Stdout
		if err := c.Start(); err != nil {
			return err
		}
		defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
		pid = c.Process.Pid
		time.Sleep(200 * time.Millisecond) // past its exec
	case "hands":
		var stop atomic.Bool
		var wg sync.WaitGroup
		seen := map[int]bool{}
		for _, p := range procPids() {
			seen[p] = true
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				for _, p := range procPids() {
					if seen[p] {
						continue
					}
					seen[p] = true
					if fd, err := unix.Open("/proc/"+strconv.Itoa(p)+"/mem", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
						unix.Close(fd)
						raced = append(raced, "race-mem:"+strconv.Itoa(p))
					}
					if pfd, err := unix.PidfdOpen(p, 0); err == nil {
						if got, err := unix.PidfdGetfd(pfd, 3, 0); err == nil {
							unix.Close(got)
							raced = append(raced, "race-getfd:"+strconv.Itoa(p))
						}
						unix.Close(pfd)
					}
				}
			}
		}()
		err := unixSelf(dir)
		for i := 0; i < 100 && pid == 0; i++ {
			time.Sleep(10 * time.Millisecond)
			pid = handsPid()
		}
		stop.Store(true)
		wg.Wait()
		if err != nil {
			return fmt.Errorf("the first mediated call: %w", err)
		}
		if pid == 0 {
			return errors.New("no hands process")
		}
	default:
		return fmt.Errorf("reach-hands: target %q", target)
	}
	reached = append(reached, raced...)
	p := "/proc/" + strconv.Itoa(pid)
	fd, err := unix.Open(p+"/mem", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
	}
	try("mem", err)
	// Which file a descriptor is: readlink needs the access opening it
	// does (a socket cannot be opened through /proc, whoever asks).
	n := 3
	if target == "own" {
		n = 0
	}
	_, err = os.Readlink(p + "/fd/" + strconv.Itoa(n))
	try("fd", unwrap(err))
	_, err = os.ReadFile(p + "/environ")
	try("environ", unwrap(err))
	pfd, err := unix.PidfdOpen(pid, 0)
	if err == nil {
		var got int
		got, err = unix.PidfdGetfd(pfd, n, 0)
		if err == nil {
			unix.Close(got)
		}
		unix.Close(pfd)
	}
	try("getfd", err)
	fmt.Printf("reached=[%s] refused=[%s]\n", strings.Join(reached, " "), strings.Join(refused, " "))
	return nil
}

// procPids lists the processes /proc shows.
func procPids() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		if p, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// handsPid finds the hands process by its command line, or 0.
func handsPid() int {
	for _, p := range procPids() {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		if err == nil && bytes.HasPrefix(b, []byte("wrun:stage2\x00hands\x00")) {
			return p
		}
	}
	return 0
}

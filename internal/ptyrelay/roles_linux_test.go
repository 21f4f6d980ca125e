//go:build linux

package ptyrelay

// The test binary plays every process of an interactive run, chosen by
// PTYRELAY_ROLE: "shell", a job-control shell leading the session of a
// pseudo-terminal the test opens (the user's terminal); "launcher", which
// does what wrun does with a relay; "child", the command. The monitor is
// the binary run through Relay.Command, as wrun's would be. Each reports
// what it sees, one line at a time, on descriptor 3, a pipe to the test.

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	MaybeMonitor()
	switch os.Getenv("PTYRELAY_ROLE") {
	case "shell":
		shellRole()
	case "launcher":
		launcherRole()
		os.Exit(0)
	case "child":
		childRole(os.Args[1:])
	}
	os.Exit(m.Run())
}

// withEnv is env with key set to value (and no other entry for key).
func withEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

func report(format string, args ...any) {
	// One write per line: the roles share the pipe, and a line below
	// PIPE_BUF arrives whole.
	_, _ = unix.Write(3, []byte(fmt.Sprintf(format, args...)+"\n"))
}

func describe(ws syscall.WaitStatus) string {
	switch {
	case ws.Exited():
		return "exited " + strconv.Itoa(ws.ExitStatus())
	case ws.Signaled():
		return "signaled " + strconv.Itoa(int(ws.Signal()))
	case ws.Stopped():
		return "stopped " + strconv.Itoa(int(ws.StopSignal()))
	}
	return "status " + strconv.Itoa(int(ws))
}

// setForeground makes pgrp the foreground of the terminal on fd 0, as a
// shell does, with SIGTTOU blocked on this thread: the shell leads its
// session from an orphaned group, where SIGTTOU would make it EIO.
func setForeground(pgrp int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set, old unix.Sigset_t
	set.Val[(unix.SIGTTOU-1)/64] |= 1 << ((uint(unix.SIGTTOU) - 1) % 64)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old); err != nil {
		return err
	}
	defer func() { _ = unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil) }()
	return unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, pgrp)
}

// shellRole runs the launcher as a foreground job and does what a shell
// does: when the job stops, report and take the terminal back; on "fg"
// from the test (descriptor 4, at any time) give the job the terminal and
// SIGCONT, on "bg" only SIGCONT.
func shellRole() {
	runtime.LockOSThread()
	signal.Notify(make(chan os.Signal, 1), unix.SIGHUP) // outlive the terminal's hangup, to report
	self, err := os.Executable()
	if err != nil {
		report("shell error %v", err)
		os.Exit(1)
	}
	stdout := uintptr(1)
	if os.Getenv("PTYRELAY_STDOUT_PIPE") != "" {
		stdout = 5
	}
	pid, err := syscall.ForkExec(self, []string{self}, &syscall.ProcAttr{
		Env:   withEnv(os.Environ(), "PTYRELAY_ROLE", "launcher"),
		Files: []uintptr{0, stdout, 2, 3},
		Sys:   &syscall.SysProcAttr{Foreground: true, Ctty: 0, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		report("shell error %v", err)
		os.Exit(1)
	}
	report("shell launcher %d", pid)
	go func() {
		control := bufio.NewScanner(os.NewFile(4, "control"))
		for control.Scan() {
			if control.Text() == "fg" {
				if err := setForeground(pid); err != nil {
					report("shell error giving the terminal: %v", err)
				}
			}
			_ = unix.Kill(-pid, unix.SIGCONT)
		}
	}()
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil); err != nil {
			if err == syscall.EINTR {
				continue
			}
			report("shell error %v", err)
			os.Exit(1)
		}
		if !ws.Stopped() {
			report("shell %s", describe(ws))
			os.Exit(0)
		}
		if err := setForeground(unix.Getpgrp()); err != nil {
			report("shell error taking the terminal: %v", err)
		}
		report("shell %s", describe(ws))
	}
}

// launcherRole is a launcher as the package doc describes it, with
// PTYRELAY_MODE: "monitor" (Relay.Command), "direct" (the command leads
// the session itself), "norelay" (no relay: the command stays in the
// launcher's process group, as an interactive run did before), "panic"
// and "panic-nodefer" (the launcher panics while the command runs, with
// and without Close deferred). PTYRELAY_CHILD is the child's arguments.
func launcherRole() {
	runtime.LockOSThread()
	mode := os.Getenv("PTYRELAY_MODE")
	self, err := os.Executable()
	if err != nil {
		report("launcher error %v", err)
		os.Exit(1)
	}
	argv := append([]string{self}, strings.Fields(os.Getenv("PTYRELAY_CHILD"))...)
	env := withEnv(os.Environ(), "PTYRELAY_ROLE", "child")
	report("launcher ids pid=%d pgid=%d sid=%d", os.Getpid(), unix.Getpgrp(), mustSid(0))
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT)

	var r *Relay
	if mode != "norelay" {
		if r, err = Start(os.Stdin); err != nil || r == nil {
			report("launcher no relay: %v", err)
			os.Exit(1)
		}
		if mode != "panic-nodefer" {
			defer func() {
				report("launcher closed %v", r.Close())
			}()
		}
	}
	files := []uintptr{r.Replace(os.Stdin).Fd(), r.Replace(os.Stdout).Fd(), r.Replace(os.Stderr).Fd(), 3}
	path := self
	if mode != "direct" {
		path, argv = r.Command("/proc/self/exe", path, argv, len(files))
	}
	sys := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	r.Apply(sys)
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: env, Files: files, Sys: sys})
	if err != nil {
		report("launcher error %v", err)
		os.Exit(1)
	}
	r.Started(pid)
	report("launcher started %d", pid)
	if strings.HasPrefix(mode, "panic") {
		time.Sleep(300 * time.Millisecond)
		panic("launcher panics while the command runs")
	}
	go func() {
		for s := range sigs {
			if os.Getenv("PTYRELAY_NOFORWARD") == "" {
				_ = unix.Kill(pid, s.(syscall.Signal))
			}
		}
	}()
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil); err != nil {
			if err == syscall.EINTR {
				continue
			}
			report("launcher error %v", err)
			return
		}
		if ws.Stopped() {
			report("launcher child %s", describe(ws))
			r.Stopped(ws.StopSignal())
			r.Continued()
			report("launcher continued")
			continue
		}
		// The raw getpriority answers 20 - nice.
		prio, _ := unix.Getpriority(unix.PRIO_PROCESS, 0)
		var ru unix.Rusage
		_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		report("launcher child %s hwm=%skB cpu=%v nice=%d", describe(ws), peakRSS(), cpu.Round(time.Millisecond), 20-prio)
		return
	}
}

// peakRSS is this process's peak resident size (VmHWM), in kB.
func peakRSS() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strings.TrimSuffix(strings.TrimSpace(v), " kB")
		}
	}
	return "?"
}

func mustSid(pid int) int {
	sid, err := unix.Getsid(pid)
	if err != nil {
		return -1
	}
	return sid
}

// childRole is the command, doing each of args in turn.
func childRole(args []string) {
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "ids":
			var tty [3]int
			for fd := range tty {
				if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
					tty[fd] = 1
				}
			}
			fg, _ := unix.IoctlGetInt(0, unix.TIOCGPGRP)
			dev, _ := unix.IoctlGetUint32(0, unix.TIOCGDEV)
			verase := -1
			if t, err := unix.IoctlGetTermios(0, unix.TCGETS); err == nil {
				verase = int(t.Cc[unix.VERASE])
			}
			report("child ids pid=%d pgid=%d sid=%d tty=%d%d%d fg=%d dev=%d verase=%d", os.Getpid(), unix.Getpgrp(), mustSid(0), tty[0], tty[1], tty[2], fg, dev, verase)
		case "stdout":
			fmt.Println("to-stdout")
		case "winch":
			c := make(chan os.Signal, 8)
			signal.Notify(c, unix.SIGWINCH)
			size := func() {
				if ws, err := unix.IoctlGetWinsize(0, unix.TIOCGWINSZ); err == nil {
					report("child size %d %d", ws.Row, ws.Col)
				}
			}
			size()
			go func() {
				for range c {
					size()
				}
			}()
		case "kill0":
			report("child kill0")
			_ = unix.Kill(0, unix.SIGKILL)
			time.Sleep(10 * time.Second)
		case "prio":
			report("child prio %v", unix.Setpriority(unix.PRIO_PGRP, 0, 19))
		case "flood":
			i++
			n, _ := strconv.Atoi(args[i])
			buf := []byte(strings.Repeat("x", 64<<10))
			for n > 0 {
				k := min(n, len(buf))
				if _, err := os.Stdout.Write(buf[:k]); err != nil {
					report("child flood %v", err)
					os.Exit(1)
				}
				n -= k
			}
		case "hup":
			c := make(chan os.Signal, 1)
			signal.Notify(c, unix.SIGHUP)
			go func() {
				<-c
				report("child sighup")
				os.Exit(0)
			}()
		case "echo":
			report("child ready")
			in := bufio.NewScanner(os.Stdin)
			for in.Scan() {
				line := strings.TrimRight(in.Text(), "\r")
				fmt.Printf("got %s\n", line)
				if line == "quit" {
					os.Exit(0)
				}
			}
			report("child eof %v", in.Err())
			time.Sleep(2 * time.Second)
		}
	}
	os.Exit(0)
}

// Command probe performs one operation and reports its outcome, so that
// integration tests can assert exactly which errno the sandbox produced.
//
//	probe OP ARGS...
//
// It prints "ok" or "err ERRNO-NAME: message" and exits 0 or 1.
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Println("usage: probe OP ARGS...")
		os.Exit(2)
	}
	err := do(os.Args[1], os.Args[2:])
	if err != nil {
		name := "?"
		var errno syscall.Errno
		if errors.As(err, &errno) {
			name = errnoName(errno)
		}
		fmt.Printf("err %s: %v\n", name, err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.EPERM:
		return "EPERM"
	case syscall.EACCES:
		return "EACCES"
	case syscall.ENOENT:
		return "ENOENT"
	case syscall.EROFS:
		return "EROFS"
	case syscall.EBUSY:
		return "EBUSY"
	case syscall.EXDEV:
		return "EXDEV"
	case syscall.ECONNREFUSED:
		return "ECONNREFUSED"
	case syscall.EBADF:
		return "EBADF"
	case syscall.ENOSYS:
		return "ENOSYS"
	case syscall.ESRCH:
		return "ESRCH"
	}
	return fmt.Sprintf("errno%d", int(e))
}

func do(op string, args []string) error {
	if ok, err := doUnix(op, args); ok {
		return err
	}
	if ok, err := doRedteam4(op, args); ok {
		return err
	}
	if ok, err := doInet(op, args); ok {
		return err
	}
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch op {
	case "read":
		_, err := os.ReadFile(arg(0))
		return err
	case "write":
		return os.WriteFile(arg(0), []byte("probe\n"), 0o644)
	case "append":
		f, err := os.OpenFile(arg(0), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteString("probe\n")
		return err
	case "mkdir":
		return os.Mkdir(arg(0), 0o755)
	case "remove":
		return os.Remove(arg(0))
	case "rename":
		return os.Rename(arg(0), arg(1))
	case "truncate":
		return os.Truncate(arg(0), 0)
	case "exchange":
		// renameat2(RENAME_EXCHANGE): swap two existing paths atomically.
		return unix.Renameat2(unix.AT_FDCWD, arg(0), unix.AT_FDCWD, arg(1), unix.RENAME_EXCHANGE)
	case "writefd":
		fd, _ := strconv.Atoi(arg(0))
		_, err := syscall.Write(fd, []byte("leak\n"))
		return err
	case "tcp":
		c, err := net.Dial("tcp", arg(0))
		if err != nil {
			return unwrap(err)
		}
		return c.Close()
	case "unix":
		c, err := net.Dial("unix", arg(0))
		if err != nil {
			return unwrap(err)
		}
		return c.Close()
	case "abstract":
		// connect to the abstract UNIX socket named arg(0).
		c, err := net.Dial("unix", "@"+arg(0))
		if err != nil {
			return unwrap(err)
		}
		return c.Close()
	case "udp":
		// one datagram with an unconnected sendto to the IPv4 HOST:PORT arg(0).
		a, err := net.ResolveUDPAddr("udp4", arg(0))
		if err != nil {
			return err
		}
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM, 0)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		sa := &syscall.SockaddrInet4{Port: a.Port}
		copy(sa.Addr[:], a.IP.To4())
		return syscall.Sendto(fd, []byte("probe\n"), 0, sa)
	case "block":
		// Stay until killed: a Go program to signal.
		time.Sleep(time.Hour)
		return nil
	case "kill-pidfd":
		// SIGKILL, with pidfd_send_signal, the process whose /proc
		// directory is open on descriptor arg(0).
		fd, _ := strconv.Atoi(arg(0))
		return unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	case "stealfd":
		// Take descriptor arg(1) of thread arg(0) with pidfd_getfd and write
		// to it: what a child could do to a descriptor its parent holds.
		tid, _ := strconv.Atoi(arg(0))
		fd, _ := strconv.Atoi(arg(1))
		pfd, err := unix.PidfdOpen(tid, unix.PIDFD_THREAD)
		if err != nil {
			return err
		}
		defer unix.Close(pfd)
		got, err := unix.PidfdGetfd(pfd, fd, 0)
		if err != nil {
			return err
		}
		defer unix.Close(got)
		_, err = unix.Write(got, []byte("leak\n"))
		return err
	case "socket":
		fam := map[string]int{"inet": syscall.AF_INET, "inet6": syscall.AF_INET6, "unix": syscall.AF_UNIX, "netlink": syscall.AF_NETLINK}[arg(0)]
		fd, err := syscall.Socket(fam, syscall.SOCK_STREAM, 0)
		if fam == syscall.AF_NETLINK {
			fd, err = syscall.Socket(fam, syscall.SOCK_RAW, 0)
		}
		if err == nil {
			syscall.Close(fd)
		}
		return err
	case "socket-highbits":
		// AF_INET with high bits set in the 64-bit argument: the kernel
		// truncates to int; a filter comparing all 64 bits would miss it.
		r, _, e := syscall.RawSyscall(syscall.SYS_SOCKET, uintptr(syscall.AF_INET)|1<<32, syscall.SOCK_STREAM, 0)
		if e != 0 {
			return e
		}
		syscall.Close(int(r))
		return nil
	case "socketpair":
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err == nil {
			syscall.Close(fds[0])
			syscall.Close(fds[1])
		}
		return err
	case "kill0":
		pid, _ := strconv.Atoi(arg(0))
		return syscall.Kill(pid, 0)
	case "ptrace":
		pid, _ := strconv.Atoi(arg(0))
		_, _, e := syscall.RawSyscall(syscall.SYS_PTRACE, syscall.PTRACE_ATTACH, uintptr(pid), 0)
		if e != 0 {
			return e
		}
		return nil
	case "tiocsti":
		c := byte('x')
		_, _, e := syscall.Syscall(syscall.SYS_IOCTL, 0, syscall.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		if e != 0 {
			return e
		}
		return nil
	case "io_uring":
		var params [120]byte
		_, _, e := syscall.RawSyscall(425, 1, uintptr(unsafe.Pointer(&params[0])), 0) // io_uring_setup
		if e != 0 {
			return e
		}
		return nil
	case "bpf":
		_, _, e := syscall.RawSyscall(321, 0, 0, 0) // bpf(BPF_MAP_CREATE, NULL, 0)
		if e != 0 {
			return e
		}
		return nil
	case "mount":
		return syscall.Mount("none", arg(0), "tmpfs", 0, "")
	case "exec":
		return syscall.Exec(arg(0), args, os.Environ())
	case "env":
		fmt.Println(os.Getenv(arg(0)))
		return nil
	case "sigqueue":
		// SIGKILL with rt_sigqueueinfo to the number arg(0) (a thread's
		// number reaches its whole process).
		pid, _ := strconv.Atoi(arg(0))
		var info unix.Siginfo
		info.Signo = int32(unix.SIGKILL)
		info.Code = -1 // SI_QUEUE
		_, _, e := unix.Syscall(unix.SYS_RT_SIGQUEUEINFO, uintptr(pid), uintptr(unix.SIGKILL), uintptr(unsafe.Pointer(&info)))
		if e != 0 {
			return e
		}
		return nil
	case "tkill":
		tid, _ := strconv.Atoi(arg(0))
		_, _, e := unix.Syscall(unix.SYS_TKILL, uintptr(tid), uintptr(unix.SIGKILL), 0)
		if e != 0 {
			return e
		}
		return nil
	case "setown-ex":
		// Make thread arg(0) the owner of a pipe's I/O signals, with
		// SIGKILL as the signal, and make the pipe readable.
		tid, _ := strconv.Atoi(arg(0))
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			return err
		}
		// struct f_owner_ex: int type (F_OWNER_TID = 0), pid_t pid.
		owner := struct{ Type, Pid int32 }{0, int32(tid)}
		if _, _, e := unix.Syscall(unix.SYS_FCNTL, uintptr(p[0]), unix.F_SETOWN_EX, uintptr(unsafe.Pointer(&owner))); e != 0 {
			return e
		}
		if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETSIG, int(unix.SIGKILL)); err != nil {
			return err
		}
		fl, _ := unix.FcntlInt(uintptr(p[0]), unix.F_GETFL, 0)
		if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETFL, fl|unix.O_ASYNC); err != nil {
			return err
		}
		_, err := unix.Write(p[1], []byte("x"))
		time.Sleep(100 * time.Millisecond)
		return err
	case "setpriority":
		// setpriority(arg(0): process|pgrp|user, arg(1), 19).
		which := map[string]int{"process": unix.PRIO_PROCESS, "pgrp": unix.PRIO_PGRP, "user": unix.PRIO_USER}[arg(0)]
		who, _ := strconv.Atoi(arg(1))
		return unix.Setpriority(which, who, 19)
	case "affinity":
		// Pin thread or process arg(0) to CPU 0.
		pid, _ := strconv.Atoi(arg(0))
		var set unix.CPUSet
		set.Set(0)
		return unix.SchedSetaffinity(pid, &set)
	case "prlimit":
		// Lower the open-files limit of process arg(0) to 7.
		pid, _ := strconv.Atoi(arg(0))
		lim := unix.Rlimit{Cur: 7, Max: 7}
		return unix.Prlimit(pid, unix.RLIMIT_NOFILE, &lim, nil)
	case "shmget":
		// Create (or open) the SysV shared memory segment with key arg(0),
		// world-writable, and write into it.
		key, _ := strconv.Atoi(arg(0))
		id, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|0o666)
		if err != nil {
			return err
		}
		b, err := unix.SysvShmAttach(id, 0, 0)
		if err != nil {
			return err
		}
		copy(b, "probe")
		return unix.SysvShmDetach(b)
	case "shmrm":
		key, _ := strconv.Atoi(arg(0))
		id, err := unix.SysvShmGet(key, 0, 0)
		if err != nil {
			return err
		}
		_, err = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
		return err
	case "msgget":
		key, _ := strconv.Atoi(arg(0))
		_, _, e := syscall.RawSyscall(syscall.SYS_MSGGET, uintptr(key), unix.IPC_CREAT|0o666, 0)
		if e != 0 {
			return e
		}
		return nil
	case "msgrm":
		key, _ := strconv.Atoi(arg(0))
		id, _, e := syscall.RawSyscall(syscall.SYS_MSGGET, uintptr(key), 0, 0)
		if e != 0 {
			return e
		}
		_, _, e = syscall.RawSyscall(syscall.SYS_MSGCTL, id, unix.IPC_RMID, 0)
		if e != 0 {
			return e
		}
		return nil
	case "mqopen", "mqcreate", "mqunlink":
		// POSIX message queue arg(0) (no slash): open an existing one,
		// create one, or remove one.
		name, err := unix.BytePtrFromString(arg(0))
		if err != nil {
			return err
		}
		if op == "mqunlink" {
			_, _, e := syscall.RawSyscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(name)), 0, 0)
			if e != 0 {
				return e
			}
			return nil
		}
		flags := uintptr(unix.O_RDWR)
		if op == "mqcreate" {
			flags |= unix.O_CREAT
		}
		fd, _, e := syscall.RawSyscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(name)), flags, 0o666, 0, 0, 0)
		if e != 0 {
			return e
		}
		syscall.Close(int(fd))
		return nil
	case "connect-badlen":
		// connect with a length of -1 as a full 64-bit register: the kernel
		// refuses it (EINVAL); an observer that sized a buffer by it would
		// crash.
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		var sa [16]byte
		sa[0] = syscall.AF_INET
		_, _, e := syscall.RawSyscall(syscall.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa[0])), ^uintptr(0))
		if e != 0 {
			return e
		}
		return nil
	case "userns":
		// A process in a user namespace of its own, where it holds every
		// capability (clone with CLONE_NEWUSER).
		c := exec.Command("/bin/true")
		c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
		return unwrap(c.Run())
	case "pty":
		return ptyRoundTrip()
	case "open-tty":
		// Open the terminal arg(0) for reading and writing, without making
		// it the controlling terminal and without blocking.
		fd, err := unix.Open(arg(0), unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		return unix.Close(fd)
	case "chmod", "fchmod":
		// Change arg(0)'s mode to the octal arg(1) (chmod by path, or
		// fchmod on a descriptor opened read-only), then check it.
		mode, err := strconv.ParseUint(arg(1), 8, 32)
		if err != nil {
			return err
		}
		if op == "chmod" {
			err = unix.Chmod(arg(0), uint32(mode))
		} else {
			fd, oerr := unix.Open(arg(0), unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if oerr != nil {
				return oerr
			}
			err = unix.Fchmod(fd, uint32(mode))
			unix.Close(fd)
		}
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Stat(arg(0), &st); err != nil {
			return err
		}
		if got := st.Mode & 0o7777; got != uint32(mode) {
			return fmt.Errorf("mode is %#o after chmod %#o", got, mode)
		}
		return nil
	case "rndgetentcnt":
		// Read the entropy count of arg(0) (/dev/random) with an ioctl.
		fd, err := unix.Open(arg(0), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.IoctlGetInt(fd, unix.RNDGETENTCNT)
		return err
	case "scm-creds":
		// Send this process's credentials (SCM_CREDENTIALS) over a stream
		// socketpair and check what arrives.
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
			return err
		}
		uc := unix.Ucred{Pid: int32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
		if err := unix.Sendmsg(fds[1], []byte{1}, unix.UnixCredentials(&uc), nil, 0); err != nil {
			return err
		}
		oob := make([]byte, 128)
		_, oobn, _, _, err := unix.Recvmsg(fds[0], make([]byte, 1), oob, 0)
		if err != nil {
			return err
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) == 0 {
			return fmt.Errorf("no credentials arrived (%v)", err)
		}
		got, err := unix.ParseUnixCredentials(&msgs[0])
		if err != nil {
			return err
		}
		if *got != uc {
			return fmt.Errorf("credentials %+v arrived, want %+v", *got, uc)
		}
		return nil
	case "openat2":
		// Open arg(0) read-only with openat2.
		fd, err := unix.Openat2(unix.AT_FDCWD, arg(0), &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC})
		if err != nil {
			return err
		}
		return unix.Close(fd)
	case "openat2-create":
		// Create arg(0) with openat2, mode arg(1) (octal).
		syscall.Umask(0)
		mode, _ := strconv.ParseUint(arg(1), 8, 32)
		fd, err := unix.Openat2(unix.AT_FDCWD, arg(0), &unix.OpenHow{Flags: unix.O_CREAT | unix.O_WRONLY | unix.O_EXCL | unix.O_CLOEXEC, Mode: mode})
		if err != nil {
			return err
		}
		return unix.Close(fd)
	case "creat-setid":
		// Create arg(0) with the setuid and setgid bits in one call.
		syscall.Umask(0)
		fd, err := unix.Open(arg(0), unix.O_CREAT|unix.O_WRONLY|unix.O_EXCL, 0o6755)
		if err != nil {
			return err
		}
		return unix.Close(fd)
	}
	return fmt.Errorf("unknown op %q", op)
}

func unwrap(err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return unwrap(oe.Err)
	}
	return err
}

package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The fourth red team's operations (integration/escape_redteam4_test.go).
// Each prints what it got on stdout before the verdict, so that the test
// can assert the effect from what reached it.

// doRedteam4 runs op if it is one of this file's; ok is false otherwise.
func doRedteam4(op string, args []string) (bool, error) {
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch op {
	case "openat2-cat":
		// Open arg(0) read-only with openat2 (no resolve flags) and copy
		// what it reads to stdout: what the descriptor wrun installed
		// reaches.
		fd, err := unix.Openat2(unix.AT_FDCWD, arg(0), &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC})
		if err != nil {
			return true, err
		}
		defer unix.Close(fd)
		buf := make([]byte, 1<<16)
		n, err := unix.Read(fd, buf)
		if err != nil {
			return true, err
		}
		os.Stdout.Write(buf[:n])
		fmt.Println()
		return true, nil
	case "openat2-write":
		// Open arg(0) for writing with openat2 and write arg(1) to it.
		fd, err := unix.Openat2(unix.AT_FDCWD, arg(0), &unix.OpenHow{Flags: unix.O_WRONLY | unix.O_CLOEXEC})
		if err != nil {
			return true, err
		}
		defer unix.Close(fd)
		_, err = unix.Write(fd, []byte(arg(1)))
		return true, err
	case "openat2-link":
		// Read the link the kernel gives the descriptor openat2 returns
		// for arg(0): which file it is.
		fd, err := unix.Openat2(unix.AT_FDCWD, arg(0), &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC})
		if err != nil {
			return true, err
		}
		defer unix.Close(fd)
		l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		fmt.Println(l)
		return true, err
	case "setown", "fiosetown":
		// Make the number arg(0) the owner of a pipe's (setown: F_SETOWN)
		// or a socket's (fiosetown: the FIOSETOWN ioctl) I/O signals, with
		// SIGKILL as the signal, and make it readable. F_SETOWN takes a
		// process, but the kernel finds any thread's number, and delivers
		// the signal to that thread's whole process.
		who, _ := strconv.Atoi(arg(0))
		var p [2]int
		if op == "setown" {
			if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
				return true, err
			}
			if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETOWN, who); err != nil {
				return true, err
			}
		} else {
			sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return true, err
			}
			p = sp
			if err := unix.IoctlSetPointerInt(p[0], 0x8901, who); err != nil { // FIOSETOWN
				return true, err
			}
		}
		if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETSIG, int(unix.SIGKILL)); err != nil {
			return true, err
		}
		fl, err := unix.FcntlInt(uintptr(p[0]), unix.F_GETFL, 0)
		if err != nil {
			return true, err
		}
		if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETFL, fl|unix.O_ASYNC); err != nil {
			return true, err
		}
		_, err = unix.Write(p[1], []byte("x"))
		time.Sleep(100 * time.Millisecond)
		return true, err
	case "setflags":
		// Add the no-dump flag (chattr +d) to arg(0), opened read-only,
		// with the FS_IOC_SETFLAGS ioctl: an inode's flags are metadata,
		// which only the file's owner may change, whatever the open mode.
		fd, err := unix.Open(arg(0), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return true, err
		}
		defer unix.Close(fd)
		flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
		if err != nil {
			return true, err
		}
		return true, unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|fsNodumpFL))
	case "file-setattr":
		// Add FS_XFLAG_NODUMP to arg(0) with file_setattr(2) (Linux
		// 6.17), which names the file by path.
		atFDCWD := unix.AT_FDCWD
		var fa [24]byte // struct file_attr, FILE_ATTR_SIZE_VER0
		p, err := unix.BytePtrFromString(arg(0))
		if err != nil {
			return true, err
		}
		if _, _, e := unix.Syscall6(sysFileGetattr, uintptr(atFDCWD), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&fa[0])), uintptr(len(fa)), 0, 0); e != 0 {
			return true, e
		}
		fa[0] |= fsXflagNodump
		if _, _, e := unix.Syscall6(sysFileSetattr, uintptr(atFDCWD), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&fa[0])), uintptr(len(fa)), 0, 0); e != 0 {
			return true, e
		}
		return true, nil
	case "ioprio-pgrp":
		// ioprio_set(IOPRIO_WHO_PGRP, 0, idle): the caller's own process
		// group, which the filter lets through by register.
		const whoPgrp, classIdle = 2, 3
		if _, _, e := unix.Syscall(unix.SYS_IOPRIO_SET, whoPgrp, 0, classIdle<<13); e != 0 {
			return true, e
		}
		return true, nil
	}
	return false, nil
}

// Kernel numbers x/sys does not have.
const (
	fsNodumpFL     = 0x40 // FS_NODUMP_FL
	fsXflagNodump  = 0x80 // FS_XFLAG_NODUMP
	sysFileGetattr = 468
	sysFileSetattr = 469
)

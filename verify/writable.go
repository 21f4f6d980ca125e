package verify

import "golang.org/x/sys/unix"

// dirWritable reports whether wrun (not the child) may create entries in dir.
func dirWritable(dir string) bool { return unix.Access(dir, unix.W_OK) == nil }

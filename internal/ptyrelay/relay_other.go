//go:build !linux

package ptyrelay

import (
	"os"
	"syscall"
)

// Relay is a run's pseudo-terminal relay; elsewhere than on Linux there is
// none yet, and a nil *Relay does nothing.
type Relay struct{}

// Start returns nil, nil: no relay here, the command runs as it would
// without one.
func Start(outer *os.File) (*Relay, error) { return nil, nil }

// Slave returns nil.
func (r *Relay) Slave() *os.File { return nil }

// Replace returns f.
func (r *Relay) Replace(f *os.File) *os.File { return f }

// Apply changes nothing.
func (r *Relay) Apply(sys *syscall.SysProcAttr) {}

// Command returns path and argv.
func (r *Relay) Command(self, path string, argv []string, nfiles int) (string, []string) {
	return path, argv
}

// Started does nothing.
func (r *Relay) Started(pid int) {}

// Stopped does nothing.
func (r *Relay) Stopped(sig syscall.Signal) {}

// Continued does nothing.
func (r *Relay) Continued() {}

// Close does nothing.
func (r *Relay) Close() error { return nil }

// MaybeMonitor returns at once: no monitor here.
func MaybeMonitor() {}

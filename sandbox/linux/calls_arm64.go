//go:build linux && arm64

package linux

// archCalls: arm64 has only the *at forms.
func archCalls() []callSpec { return nil }

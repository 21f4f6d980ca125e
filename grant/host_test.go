package grant

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseHost(t *testing.T) {
	tests := []struct {
		in, want string
		port     int
		needs    Network
		err      string
	}{
		{in: "crates.io", want: "crates.io", needs: NetworkHosts},
		{in: "Crates.IO.", want: "crates.io", needs: NetworkHosts},
		{in: "static.crates.io:443", want: "static.crates.io:443", port: 443, needs: NetworkHosts},
		{in: "*.example.com", want: "*.example.com", needs: NetworkHosts},
		{in: "*.example.com:8443", want: "*.example.com:8443", port: 8443, needs: NetworkHosts},
		{in: "127.0.0.1:5432", want: "127.0.0.1:5432", port: 5432, needs: NetworkLoopback},
		{in: "127.1.2.3", want: "127.1.2.3", needs: NetworkLoopback},
		{in: "localhost:6379", want: "localhost:6379", port: 6379, needs: NetworkLoopback},
		{in: "[::1]:5432", want: "[::1]:5432", port: 5432, needs: NetworkLoopback},
		{in: "[::ffff:127.0.0.1]:80", want: "127.0.0.1:80", port: 80, needs: NetworkLoopback},
		{in: "[2001:db8::1]", want: "[2001:db8::1]", needs: NetworkHosts},
		{in: "169.254.169.254", want: "169.254.169.254", needs: NetworkHosts},
		{in: "", err: "empty"},
		{in: "::1", err: "in brackets"},
		{in: "[::1", err: "lacks its ']'"},
		{in: "[::1]x", err: "only :PORT"},
		{in: "[example.com]:80", err: "not an IPv6 address"},
		{in: "crates.io:0", err: "the port"},
		{in: "crates.io:70000", err: "the port"},
		{in: "crates.io:", err: "the port"},
		{in: "crates.io:https", err: "the port"},
		{in: "*.com", err: "two labels"},
		{in: "*", err: "not a host name"},
		{in: "a*.example.com", err: "not a host name"},
		{in: "-x.example.com", err: "not a host name"},
		{in: "exa mple.com", err: "not a host name"},
		{in: "a..b", err: "not a host name"},
		{in: "[fe80::1%eth0]:22", err: "a zone"},
	}
	for _, tc := range tests {
		h, err := ParseHost(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseHost(%q) = %v, %v; want an error with %q", tc.in, h, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseHost(%q): %v", tc.in, err)
			continue
		}
		if h.String() != tc.want || h.Port != tc.port || h.Needs() != tc.needs {
			t.Errorf("ParseHost(%q) = %q port %d needs %s; want %q %d %s", tc.in, h, h.Port, h.Needs(), tc.want, tc.port, tc.needs)
		}
		if back, err := ParseHost(h.String()); err != nil || back != h {
			t.Errorf("%q does not read back: %v, %v", h, back, err)
		}
	}
}

func TestHostMatches(t *testing.T) {
	tests := []struct {
		entry, host string
		port        int
		want        bool
	}{
		{"crates.io", "crates.io", 443, true},
		{"crates.io", "CRATES.io.", 80, true},
		{"crates.io", "static.crates.io", 443, false},
		{"crates.io:443", "crates.io", 80, false},
		{"*.example.com", "a.example.com", 443, true},
		{"*.example.com", "a.b.example.com", 443, true},
		{"*.example.com", "example.com", 443, false},
		{"*.example.com", "badexample.com", 443, false},
		{"*.example.com:443", "a.example.com", 8443, false},
		{"127.0.0.1:5432", "127.0.0.1", 5432, true},
		{"127.0.0.1:5432", "::ffff:127.0.0.1", 5432, true},
		{"127.0.0.1:5432", "[::ffff:127.0.0.1]", 5432, true},
		{"[::1]", "::1", 22, true},
		{"[::1]", "127.0.0.1", 22, false},
	}
	for _, tc := range tests {
		h, err := ParseHost(tc.entry)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Matches(tc.host, tc.port); got != tc.want {
			t.Errorf("%s matches %s:%d = %v, want %v", tc.entry, tc.host, tc.port, got, tc.want)
		}
	}
	addrs := []struct {
		entry, addr string
		port        int
		want        bool
	}{
		{"127.0.0.1:5432", "127.0.0.1", 5432, true},
		{"127.0.0.1:5432", "::ffff:127.0.0.1", 5432, true},
		{"127.0.0.1:5432", "127.0.0.1", 5433, false},
		{"127.0.0.1:5432", "127.0.0.2", 5432, false},
		{"localhost:5432", "::1", 5432, true},
		{"localhost:5432", "127.0.0.1", 5432, true},
		{"localhost", "10.0.0.1", 5432, false},
		{"crates.io", "127.0.0.1", 443, false},
	}
	for _, tc := range addrs {
		h, _ := ParseHost(tc.entry)
		if got := h.MatchesAddr(netip.MustParseAddr(tc.addr), tc.port); got != tc.want {
			t.Errorf("%s matches address %s:%d = %v, want %v", tc.entry, tc.addr, tc.port, got, tc.want)
		}
	}
}

func TestHostsWithin(t *testing.T) {
	loop, _ := ParseHost("127.0.0.1:5432")
	name, _ := ParseHost("crates.io")
	hosts := []Host{loop, name}
	for n, want := range map[Network]int{NetworkOff: 2, NetworkLoopback: 1, NetworkHosts: 0, NetworkOn: 0} {
		if got := HostsWithin(hosts, n); len(got) != want {
			t.Errorf("under network=%s: %q, want %d", n, got, want)
		}
	}
	if got := HostsWithin([]Host{name}, NetworkLoopback); len(got) != 1 || !strings.Contains(got[0], "--allow-host crates.io needs network=hosts") {
		t.Errorf("words: %q", got)
	}
}

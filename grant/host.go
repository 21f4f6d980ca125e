package grant

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Host is one --allow-host entry: a host the child may reach, and
// optionally the one port. It is written HOST[:PORT]: a name
// ("crates.io"), a wildcard for the names beneath a domain
// ("*.example.com": a.example.com and a.b.example.com, not example.com
// itself), an IPv4 address or an IPv6 one in brackets ("[::1]:5432").
// Without a port every port of the host is allowed.
type Host struct {
	// Name is the host, lower case, without a trailing dot; an address
	// in its canonical form (IPv4-mapped IPv6 addresses as IPv4); a
	// wildcard keeps its "*." prefix.
	Name string
	// Port is the one port allowed, or 0 for every port.
	Port int
}

// ParseHost reads an --allow-host value.
func ParseHost(s string) (Host, error) {
	in := strings.TrimSpace(s)
	bad := func(why string) (Host, error) {
		return Host{}, fmt.Errorf("--allow-host %q: %s; write HOST[:PORT], e.g. crates.io, *.example.com:443, 127.0.0.1:5432 or [::1]:5432", s, why)
	}
	if in == "" {
		return bad("empty")
	}
	name, port := in, ""
	switch {
	case strings.HasPrefix(in, "["):
		end := strings.IndexByte(in, ']')
		if end < 0 {
			return bad("an IPv6 address in brackets lacks its ']'")
		}
		name, port = in[1:end], in[end+1:]
		if port != "" && !strings.HasPrefix(port, ":") {
			return bad("after ']' only :PORT may follow")
		}
		port = strings.TrimPrefix(port, ":")
		if _, err := netip.ParseAddr(name); err != nil {
			return bad("not an IPv6 address in brackets")
		}
	case strings.Count(in, ":") == 1:
		name, port, _ = strings.Cut(in, ":")
	case strings.Count(in, ":") > 1:
		return bad("an IPv6 address must be in brackets")
	}
	h := Host{}
	if port != "" || strings.HasSuffix(in, ":") {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return bad("the port is not a number from 1 to 65535")
		}
		h.Port = p
	}
	if a, err := netip.ParseAddr(name); err == nil {
		if a.Zone() != "" {
			return bad("an address with a zone names an interface, not a host")
		}
		h.Name = a.Unmap().String()
		return h, nil
	}
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	label := name
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		label = rest
		if !strings.Contains(rest, ".") {
			return bad("a wildcard names the hosts beneath a domain of at least two labels (*.example.com)")
		}
	}
	if !hostName(label) {
		return bad("not a host name")
	}
	h.Name = name
	return h, nil
}

// hostName reports whether s is a DNS host name: dot-separated labels of
// letters, digits, hyphens and underscores, none empty, none starting or
// ending with a hyphen, at most 253 bytes.
func hostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for l := range strings.SplitSeq(s, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// String renders the entry as ParseHost reads it back.
func (h Host) String() string {
	name := h.Name
	if strings.Contains(name, ":") {
		name = "[" + name + "]"
	}
	if h.Port == 0 {
		return name
	}
	return name + ":" + strconv.Itoa(h.Port)
}

// Addr is the entry's address when it names one, not a name.
func (h Host) Addr() (netip.Addr, bool) {
	a, err := netip.ParseAddr(h.Name)
	return a, err == nil
}

// Loopback reports whether the entry names a loopback address (127.0.0.0/8,
// ::1) or localhost: a service of this host, which network=loopback reaches
// only through such an entry.
func (h Host) Loopback() bool {
	if a, ok := h.Addr(); ok {
		return a.IsLoopback()
	}
	return h.Name == "localhost"
}

// Needs is the narrowest network value under which the entry means
// anything: loopback for a loopback address, hosts for any other host.
func (h Host) Needs() Network {
	if h.Loopback() {
		return NetworkLoopback
	}
	return NetworkHosts
}

// Matches reports whether the entry allows host (a name or an address, as
// a client asked for it) at port.
func (h Host) Matches(host string, port int) bool {
	if h.Port != 0 && h.Port != port {
		return false
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().String()
	}
	if rest, ok := strings.CutPrefix(h.Name, "*."); ok {
		return strings.HasSuffix(host, "."+rest)
	}
	return host == h.Name
}

// MatchesAddr reports whether the entry names the address a at port
// (an address entry, or localhost for a loopback address).
func (h Host) MatchesAddr(a netip.Addr, port int) bool {
	if h.Port != 0 && h.Port != port {
		return false
	}
	a = a.Unmap()
	if b, ok := h.Addr(); ok {
		return a == b
	}
	return h.Name == "localhost" && a.IsLoopback()
}

// HostsWithin reports, in words, each entry of hosts that network n does
// not reach: one naming a host beyond loopback under network=loopback,
// any under network=off. Under network=on every entry is redundant but
// allowed.
func HostsWithin(hosts []Host, n Network) []string {
	var out []string
	for _, h := range hosts {
		if n < h.Needs() {
			out = append(out, fmt.Sprintf("--allow-host %s needs network=%s or wider, and the grant has network=%s", h, h.Needs(), n))
		}
	}
	return out
}

// MarshalText renders the entry as String does (for JSON).
func (h Host) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText reads an entry as ParseHost does.
func (h *Host) UnmarshalText(b []byte) error {
	v, err := ParseHost(string(b))
	if err != nil {
		return err
	}
	*h = v
	return nil
}

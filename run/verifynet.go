package run

import (
	"strings"

	"github.com/wrun-dev/wrun/grant"
)

// hostsHolder is a platform that can say whether this machine holds
// network=hosts (Linux, on the rows of the support matrix that mediate
// connect). A platform without it (macOS, a test's) keeps verify's
// network on.
type hostsHolder interface {
	// RefusesHosts says why this machine cannot hold network=hosts for g,
	// or "" when it can.
	RefusesHosts(g grant.Grant) string
}

// verifyDefault is g with verify's default network: a spec naming the
// verify preset without a network field ("verify", "verify,shell=full")
// reaches the hosts the repository's remotes and the user's registries
// name (network=hosts, with the hosts policy.Host.NetHosts derives)
// rather than every host, where the platform holds that. An explicit
// network= (verify,network=on) is kept as given, and so is a network an
// enclosing wrun or a ceiling already narrowed. The note says why verify
// keeps the network on, when it does on a platform that could say.
func verifyDefault(spec string, g grant.Grant, pl Platform) (grant.Grant, string) {
	if g.Network != grant.NetworkOn || !verifyWithoutNetwork(spec) {
		return g, ""
	}
	h, ok := pl.(hostsHolder)
	if !ok {
		return g, ""
	}
	n := g
	n.Network = grant.NetworkHosts
	if why := h.RefusesHosts(n); why != "" {
		why, _, _ = strings.Cut(why, "; --best-effort")
		return g, "verify keeps network=on on this machine: network=hosts needs " + why
	}
	return n, ""
}

// verifyWithoutNetwork reports whether spec names the verify preset and
// sets no network field.
func verifyWithoutNetwork(spec string) bool {
	parts := strings.Split(spec, ",")
	if strings.TrimSpace(parts[0]) != "verify" {
		return false
	}
	for _, p := range parts[1:] {
		if k, _, _ := strings.Cut(p, "="); strings.TrimSpace(k) == "network" {
			return false
		}
	}
	return true
}

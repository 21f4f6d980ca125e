//go:build wrun_testhosts

package run

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"strings"

	"github.com/wrun-dev/wrun/proxy"
)

// testResolver, in a build for the integration tests only (-tags
// wrun_testhosts), resolves the names WRUN_TEST_HOSTS maps
// ("name=addr,name=addr") and no other, so that servers on 127.0.0.1 can
// stand for remote hosts. A release build has no such variable.
func testResolver() proxy.Resolver {
	m := map[string]netip.Addr{}
	for _, kv := range strings.Split(os.Getenv("WRUN_TEST_HOSTS"), ",") {
		name, addr, ok := strings.Cut(kv, "=")
		if a, err := netip.ParseAddr(addr); ok && err == nil {
			m[strings.ToLower(name)] = a
		}
	}
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		if a, ok := m[host]; ok {
			return []netip.Addr{a}, nil
		}
		return nil, errors.New("no such host (WRUN_TEST_HOSTS)")
	}
}

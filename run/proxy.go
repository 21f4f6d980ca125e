package run

import (
	"strings"
	"time"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/internal/envlist"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/proxy"
	"github.com/wrun-dev/wrun/sandbox"
)

// proxyVars are the variables through which HTTP clients (curl, git,
// cargo, go, npm, pip) find a proxy, in both cases; noProxyVars name what
// they reach directly: the loopback addresses network=loopback decides.
var (
	proxyVars   = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}
	noProxyVars = []string{"NO_PROXY", "no_proxy"}
)

// startProxy starts wrun's proxy for a network=hosts policy (nil for any
// other) and points the child's environment at it. The user's own proxy,
// named in env (the environment wrun was started in), is chained to.
func startProxy(p *policy.Policy, env []string) (*proxy.Proxy, error) {
	if !p.Network.Proxy {
		return nil, nil
	}
	up := proxy.UpstreamFromEnv(func(k string) string { v, _ := envlist.Lookup(env, k); return v })
	px, err := proxy.Start(proxy.Config{Hosts: p.Network.Hosts, Resolve: testResolver(), Upstream: up})
	if err != nil {
		return nil, err
	}
	url := "http://" + px.Addr().String()
	set := map[string]string{}
	for _, k := range proxyVars {
		set[k] = url
	}
	for _, k := range noProxyVars {
		set[k] = "localhost,127.0.0.1,::1"
	}
	p.Env = setEnv(p.Env, set)
	return px, nil
}

// setEnv replaces or adds each variable of set in env.
func setEnv(env []string, set map[string]string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range append(append([]string{}, proxyVars...), noProxyVars...) {
		if v, ok := set[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// proxyDenials are the hosts the proxy refused, as denials of the run.
func proxyDenials(ds []proxy.Denial) []sandbox.Denial {
	out := make([]sandbox.Denial, 0, len(ds))
	for _, d := range ds {
		out = append(out, sandbox.Denial{Time: d.Time.UTC().Format(time.RFC3339Nano), Op: escalate.OpConnectHost,
			Addr: d.Addr(), Right: escalate.RightConnectHost, Exact: true, Count: d.Count})
	}
	return out
}

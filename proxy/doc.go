// Package proxy is wrun's HTTP proxy for network=hosts: HTTP CONNECT (what
// git over HTTPS, cargo, go, npm and pip send through HTTPS_PROXY) and
// plain HTTP requests in absolute form (HTTP_PROXY), each decided on the
// host name the client asked for against the run's --allow-host entries,
// resolved by the proxy itself, dialled by address, and relayed without
// terminating TLS or following a redirect (a redirected host is a new
// request, decided anew).
//
// It serves one sandbox only: it accepts a connection only from a client
// address the sandbox's mediation announced (Expect) just before it made
// the command's connect, so no other process of the host, and no other
// run, reaches it. A refused host is a Denial, which the run reports as
// any other. Nothing of it outlives Close.
//
// The package makes no kernel call of its own beyond the standard
// library's sockets; the mediation that sends the command's connects
// here is sandbox/linux's.
package proxy

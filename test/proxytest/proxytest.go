// Package proxytest gives a failure test an in-process toxiproxy proxy
// (github.com/Shopify/toxiproxy/v2) in front of a server the test shares
// with others (PostgreSQL, RabbitMQ): clients are pointed at the proxy,
// and the test cuts the link there, never by touching the server.
// Cutting closes every open connection and refuses new ones, as a
// network partition or a crashed server looks to the client. The nemesis
// (skiload nemesis) drives the same library's proxies and toxics directly.
package proxytest

import (
	"errors"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Proxy forwards a loopback port to an upstream address.
type Proxy struct {
	p *toxiproxy.Proxy
	t testing.TB
}

// Start listens on a loopback port the kernel picks and forwards to
// upstream (host:port) until the test ends.
func Start(t testing.TB, upstream string) *Proxy {
	t.Helper()
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(server, t.Name(), "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("proxy to %s: %v", upstream, err)
	}
	t.Cleanup(p.Stop)
	return &Proxy{p: p, t: t}
}

// Addr is the proxy's address (host:port) for clients.
func (p *Proxy) Addr() string { return p.p.Listen }

// Cut closes every forwarded connection and refuses new ones until
// Restore.
func (p *Proxy) Cut() { p.p.Stop() }

// Restore forwards new connections again, on the same address; restoring
// a proxy that is not cut changes nothing.
func (p *Proxy) Restore() {
	p.t.Helper()
	if err := p.p.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
		p.t.Fatalf("restore the proxy on %s: %v", p.p.Listen, err)
	}
}

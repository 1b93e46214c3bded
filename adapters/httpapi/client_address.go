package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// RemoteAddress is the client as the connection shows it: the peer's IP.
func RemoteAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// ForwardedAddress is the client as the load balancer in front saw it: the
// last address of X-Forwarded-For, the one the load balancer appended
// (earlier ones are whatever the client claimed), or the peer's own when
// the header is absent. Use it only behind a load balancer that appends
// the header, and that is the only way in.
//
// The key is kept (the ingest limiter remembers thousands of clients), so
// it is the address in its own canonical spelling (netip's: IPv4-mapped
// IPv6 unmapped, any zone or port dropped), never a part of the header,
// which it would keep alive whatever its size. A last entry that is not an
// address is not the load balancer's: the peer's address stands in.
func ForwardedAddress(r *http.Request) string {
	values := r.Header.Values("X-Forwarded-For")
	if len(values) == 0 {
		return RemoteAddress(r)
	}
	last := values[len(values)-1]
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	last = strings.TrimSpace(last)
	addr, err := netip.ParseAddr(last)
	if err != nil {
		ap, perr := netip.ParseAddrPort(last)
		if perr != nil {
			return RemoteAddress(r)
		}
		addr = ap.Addr()
	}
	return addr.Unmap().WithZone("").String()
}

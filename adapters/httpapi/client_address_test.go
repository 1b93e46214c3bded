package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"unsafe"
)

// TestTheForwardedClientKeyHoldsOnlyTheAddress: the per-client key is kept
// by the ingest limiter's cache of 10,000 clients; as a substring of the
// X-Forwarded-For header it kept the whole header alive (200 requests with
// a 1 MB header grew the heap by 200 MB). The key is the address in its
// own canonical spelling, in memory of its own, and a last entry that is
// not an address falls back to the connection's address.
func TestTheForwardedClientKeyHoldsOnlyTheAddress(t *testing.T) {
	pad := strings.Repeat("a", 1<<20)
	for header, want := range map[string]string{
		pad + ", 198.51.100.7":             "198.51.100.7",
		"203.0.113.5, 198.51.100.7:4711":   "198.51.100.7",
		"::ffff:198.51.100.7":              "198.51.100.7",
		"2001:DB8::1":                      "2001:db8::1",
		"[2001:db8::1]:443":                "2001:db8::1",
		"fe80::1%" + pad:                   "fe80::1",
		"198.51.100.7, " + pad:             "10.0.0.9",
		"198.51.100.7, unknown":            "10.0.0.9",
		"198.51.100.7, 198.51.100.8 extra": "10.0.0.9",
	} {
		r := &http.Request{RemoteAddr: "10.0.0.9:5000", Header: http.Header{"X-Forwarded-For": {header}}}
		got := ForwardedAddress(r)
		short, key := header[max(0, len(header)-40):], got[:min(len(got), 40)]
		if got != want {
			t.Errorf("X-Forwarded-For ...%q: key %q (%d bytes); want %q", short, key, len(got), want)
		}
		start := uintptr(unsafe.Pointer(unsafe.StringData(header)))
		if p := uintptr(unsafe.Pointer(unsafe.StringData(got))); p >= start && p < start+uintptr(len(header)) {
			t.Errorf("X-Forwarded-For ...%q: the key %q is a part of the header, which it keeps alive", short, key)
		}
	}
}

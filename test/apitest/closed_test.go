package apitest

import (
	"net"
	"testing"
)

// TestClosedAddrRefusesAndKeepsItsPort: a connection to ClosedAddr is
// refused, and nothing else can listen on its port while the test runs.
func TestClosedAddrRefusesAndKeepsItsPort(t *testing.T) {
	addr := ClosedAddr(t)
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("a connection to %s was accepted; want it refused", addr)
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("a listener could take %s while the test holds it", addr)
	}
}

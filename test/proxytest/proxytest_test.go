package proxytest_test

import (
	"bufio"
	"net"
	"testing"

	"github.com/skidata/skidata/test/proxytest"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					if _, err := c.Write(append(sc.Bytes(), '\n')); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, line string) (string, error) {
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// dialEcho connects to addr and checks that line comes back; when says
// when, in a failure. The connection is closed when the test ends.
func dialEcho(t *testing.T, addr, line, when string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if got, err := roundTrip(c, line); err != nil || got != line+"\n" {
		t.Fatalf("%s: %q, %v; want the echo", when, got, err)
	}
	return c
}

func TestCutClosesConnectionsAndRestoreForwardsAgain(t *testing.T) {
	p := proxytest.Start(t, echoServer(t))
	c := dialEcho(t, p.Addr(), "hello", "through the proxy")
	p.Cut()
	if _, err := roundTrip(c, "again"); err == nil {
		t.Fatal("a connection open across Cut still works; want it closed")
	}
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		if _, err := roundTrip(c2, "new"); err == nil {
			t.Fatal("a connection made while cut works; want it closed")
		}
		c2.Close()
	}
	p.Restore()
	dialEcho(t, p.Addr(), "back", "after Restore")
}

package nemesis

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// serve accepts connections on a loopback port until the test ends and
// gives each to handle.
func serve(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
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
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

func echo(c net.Conn) { _, _ = io.Copy(c, c) }

func testLink(t *testing.T, upstream string) *link {
	t.Helper()
	l, err := newLink(proxies(), t.Name(), upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.heal(); l.proxy.Stop() })
	return l
}

// TestPartitionHoldsBytesThenDeliversThemInOrder: nothing crosses a
// partitioned link, either way; once it heals what was sent meanwhile
// arrives, in order, on the same connection.
func TestPartitionHoldsBytesThenDeliversThemInOrder(t *testing.T) {
	l := testLink(t, serve(t, echo))
	c, err := net.Dial("tcp", l.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrip := func(line string) (string, error) {
		if _, err := c.Write([]byte(line + "\n")); err != nil {
			return "", err
		}
		return r.ReadString('\n')
	}
	if got, err := roundTrip("before"); got != "before\n" || err != nil {
		t.Fatalf("before the partition: %q, %v", got, err)
	}
	if err := l.partition(); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"one\n", "two\n", "three\n"} {
		if _, err := c.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if got, err := r.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read through the partition: %q, %v; want nothing", got, err)
	}
	l.heal()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var got strings.Builder
	for range 3 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("after the heal: %q then %v", got.String(), err)
		}
		got.WriteString(line)
	}
	if got.String() != "one\ntwo\nthree\n" {
		t.Errorf("after the heal: %q; want what was sent during the partition, in order", got.String())
	}
}

// TestSlowLinkDelaysBothWays: a round trip over a link slowed by 200 ms
// each way takes at least 400 ms, and the bytes come back whole.
func TestSlowLinkDelaysBothWays(t *testing.T) {
	l := testLink(t, serve(t, echo))
	if err := l.slow(200*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", l.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := c.Write([]byte("slow\n")); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if took := time.Since(start); got != "slow\n" || err != nil || took < 400*time.Millisecond {
		t.Errorf("round trip %q, %v in %s; want the line back after at least 400ms", got, err, took)
	}
}

// TestHealReturnsWhileAConnectionThroughTheFaultDies: a server streams to
// a client through a partitioned or slowed link, the client goes away,
// and the link is healed: the heal returns at once rather than forwarding
// what the link holds, chunk by chunk, to a connection nobody reads
// (toxiproxy's own latency toxic waits five seconds on each of up to 1024
// chunks there: Shopify/toxiproxy#558).
func TestHealReturnsWhileAConnectionThroughTheFaultDies(t *testing.T) {
	chatty := func(c net.Conn) {
		chunk := []byte(strings.Repeat("x", 100))
		for {
			if _, err := c.Write(chunk); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	for name, fault := range map[string]func(*link) error{
		"partition": (*link).partition,
		"slow":      func(l *link) error { return l.slow(time.Hour, 0) },
	} {
		t.Run(name, func(t *testing.T) {
			l := testLink(t, serve(t, chatty))
			c, err := net.Dial("tcp", l.addr())
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 1000)
			if _, err := io.ReadFull(c, buf); err != nil {
				t.Fatalf("read from the server before the fault: %v", err)
			}
			if err := fault(l); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond) // the server keeps writing: the link fills
			c.Close()
			healed := make(chan struct{})
			go func() { l.heal(); close(healed) }()
			select {
			case <-healed:
			case <-time.After(20 * time.Second):
				t.Fatal("the heal still runs 20s after the client went away")
			}
		})
	}
}

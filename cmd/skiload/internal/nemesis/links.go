package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// link is the one way a process reaches a server: an in-process toxiproxy
// proxy on a port of its own, so that a fault on it touches that process's
// connections to that server and nothing else.
type link struct {
	name  string // "api→postgres"
	proxy *toxiproxy.Proxy
}

// proxies is the toxiproxy server every link of a run belongs to (toxiproxy
// needs one; its HTTP API is never started).
func proxies() *toxiproxy.ApiServer {
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
}

// newLink starts a proxy from a free loopback port to upstream. A port
// found free can be taken by another program before the proxy binds it;
// then it tries another.
func newLink(server *toxiproxy.ApiServer, name, upstream string) (*link, error) {
	var err error
	for range 10 {
		var port int
		if port, err = freePort(0); err != nil {
			return nil, err
		}
		p := toxiproxy.NewProxy(server, name, fmt.Sprintf("127.0.0.1:%d", port), upstream)
		if err = p.Start(); err == nil {
			return &link{name: name, proxy: p}, nil
		}
	}
	return nil, fmt.Errorf("proxy %s: %w", name, err)
}

// addr is where the process is told the server is.
func (l *link) addr() string { return l.proxy.Listen }

// toxic adds a toxic of the given type to both directions.
func (l *link) toxic(kind, attributes string) error {
	for _, stream := range []string{"upstream", "downstream"} {
		js := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"attributes":%s}`, kind+"_"+stream, kind, stream, attributes)
		if _, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			return fmt.Errorf("%s on %s: %w", kind, l.name, err)
		}
	}
	return nil
}

// heal removes every toxic: bytes held are delivered, in order.
func (l *link) heal() { l.proxy.Toxics.ResetToxics(context.Background()) }

// partition holds every byte in both directions (new connections are
// accepted by the proxy, and stall the same way) until heal, which lets
// them through: a partition shorter than TCP's retransmission timeout,
// seen from both ends. Dropping the bytes instead and resuming would be
// no network's behaviour (TCP delivers in order or breaks the
// connection) and would desynchronise the protocols on top.
func (l *link) partition() error { return l.toxic(holdToxicType, "{}") }

// slow adds latency ± jitter to every byte each way.
func (l *link) slow(latency, jitter time.Duration) error {
	return l.toxic(slowToxicType, fmt.Sprintf(`{"latency":%d,"jitter":%d}`, latency.Milliseconds(), jitter.Milliseconds()))
}

// cut closes every connection and refuses new ones until restore: a
// connection reset by the network, or a server gone, seen from the
// process.
func (l *link) cut() { l.proxy.Stop() }

// restore listens again on the same port.
func (l *link) restore() error {
	var err error
	for range 20 { // the port was free a moment ago; another program may hold it briefly
		if err = l.proxy.Start(); err == nil || errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("restore %s: %w", l.name, err)
}

// handedOut are the ports freePort has returned: a process, a proxy or
// a server given one may not have bound it yet when the next is asked
// for, and none is handed out twice (runs of several modes at once
// share them).
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// freePort finds a loopback port that is free now and was never handed
// out before, together with port+offset (RabbitMQ's distribution port)
// when offset > 0. Ports are drawn from 10000 to 19999: below Linux's
// ephemeral range (32768 and up), from which the kernel hands out the
// ports of outgoing connections and of listeners on port 0, so that a
// port a server or proxy gives up for a moment and takes back (a restart,
// a cut) is unlikely to be taken meanwhile; and below the AMQP ports the
// cluster tests of test/e2e draw for their nodes (from 20000).
func freePort(offset int) (int, error) {
	free := func(p int) bool {
		if handedOut.ports[p] {
			return false
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			return false
		}
		ln.Close()
		return true
	}
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	for range 1000 {
		p := 10000 + rand.IntN(10000)
		if free(p) && free(p+1) && (offset == 0 || free(p+offset)) {
			handedOut.ports[p], handedOut.ports[p+1] = true, true
			if offset > 0 {
				handedOut.ports[p+offset] = true
			}
			return p, nil
		}
	}
	return 0, errors.New("no free loopback port found between 10000 and 20000")
}

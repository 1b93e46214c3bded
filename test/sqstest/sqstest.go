// Package sqstest runs the SQS stand-in (adapters/sqs/sqssim: fauxqs
// behind the strict proxy) for the tests: there is no Docker on the
// machines, and fauxqs is pinned in test/sqs/package.json (install: npm
// ci --prefix test/sqs).
//
// A test binary starts one server in TestMain (Main), or uses the fauxqs
// SKIDATA_TEST_SQS_ENDPOINT names; each test case then makes queues of its
// own under a unique name (QueueName), so runs never see each other's
// messages. The static credentials and the region here are for tests only.
//
// Under -short (test/needs) Main starts nothing and every test that asks
// for the server skips, naming it; the package's other tests still run.
package sqstest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/skidata/skidata/adapters/sqs/sqssim"
	"github.com/skidata/skidata/test/needs"
)

// Server is what a test that asks for the server needs, as -short's skip
// message names it.
const Server = "fauxqs (SQS stand-in, on Node.js)"

// EnvEndpoint names an already running fauxqs to use instead of starting
// one.
const EnvEndpoint = "SKIDATA_TEST_SQS_ENDPOINT"

// Region is the region the tests' clients sign for.
const Region = sqssim.Region

var (
	endpoint string // the strict proxy every test client goes through
	upstream string // fauxqs itself
)

// Main starts fauxqs (unless EnvEndpoint is set) behind a strict proxy,
// runs the tests and stops it. When fauxqs cannot be started it prints why
// and how to fix it and returns a failing exit code: the tests skip only
// under -short.
// It gives the SDK's credential chain static test credentials when the
// environment has none, so the adapter under test finds them as it would
// on an instance.
//
//	func TestMain(m *testing.M) { os.Exit(sqstest.Main(m)) }
func Main(m *testing.M) int {
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_EC2_METADATA_DISABLED": "true"} {
		if os.Getenv(k) == "" {
			os.Setenv(k, v)
		}
	}
	if !flag.Parsed() {
		flag.Parse() // testing.Short reads the flags, which m.Run has not parsed yet
	}
	if testing.Short() {
		return m.Run() // whatever asks for the server skips
	}
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		px, err := sqssim.StartProxy(ep, sqssim.Options{})
		if err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
			return 1
		}
		defer px.Close()
		endpoint, upstream = px.URL, ep
		return m.Run()
	}
	srv, err := sqssim.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: no SQS test server (fauxqs): %v\n", err)
		return 1
	}
	defer srv.Stop()
	endpoint, upstream = srv.Endpoint, srv.Upstream
	return m.Run()
}

// Endpoint is the strict proxy in front of the fauxqs Main started or was
// given; it fails the test when Main was not called.
func Endpoint(t testing.TB) string {
	t.Helper()
	needs.Server(t, Server)
	if endpoint == "" {
		t.Fatal("no SQS test server: call sqstest.Main from TestMain")
	}
	return endpoint
}

// Upstream is fauxqs itself, with no proxy in front: for tests of what
// fauxqs does on its own.
func Upstream(t testing.TB) string {
	t.Helper()
	needs.Server(t, Server)
	if upstream == "" {
		t.Fatal("no SQS test server: call sqstest.Main from TestMain")
	}
	return upstream
}

// started is the fauxqs EndpointOrStart started for a binary without Main.
var started struct {
	once      sync.Once
	srv       *sqssim.Server
	proxyOnly *sqssim.Proxy // the proxy in front of EnvEndpoint's server
	err       error
}

// EndpointOrStart is for tests in a binary without Main (end-to-end tests
// beside many that need no SQS): the strict proxy in front of the fauxqs
// Main started or EnvEndpoint names, else in front of one started at the
// first call and shared by every later one. Call StopStarted from
// TestMain. Unlike Main it sets no credentials: a test gives the service
// its own, as an operator would.
func EndpointOrStart(t testing.TB) string {
	t.Helper()
	needs.Server(t, Server)
	if endpoint != "" {
		return endpoint
	}
	return startOnce(t).Endpoint
}

// UpstreamOrStart is fauxqs itself, as EndpointOrStart finds or starts it:
// for a proxy of the test's own in front of it.
func UpstreamOrStart(t testing.TB) string {
	t.Helper()
	needs.Server(t, Server)
	if upstream != "" {
		return upstream
	}
	return startOnce(t).Upstream
}

func startOnce(t testing.TB) *sqssim.Server {
	t.Helper()
	started.once.Do(func() {
		if ep := os.Getenv(EnvEndpoint); ep != "" {
			px, err := sqssim.StartProxy(ep, sqssim.Options{})
			if err != nil {
				started.err = err
				return
			}
			started.proxyOnly = px
			started.srv = &sqssim.Server{Endpoint: px.URL, Upstream: ep, Proxy: px}
			return
		}
		started.srv, started.err = sqssim.Start()
	})
	if started.err != nil {
		t.Fatalf("no SQS test server (fauxqs): %v", started.err)
	}
	return started.srv
}

// StopStarted stops what EndpointOrStart started, if anything.
func StopStarted() {
	switch {
	case started.proxyOnly != nil: // EnvEndpoint's: only the proxy is ours
		started.proxyOnly.Close()
	case started.srv != nil:
		started.srv.Stop()
	}
}

// NewProxyOf starts a strict proxy with opts in front of upstream (as
// UpstreamOrStart gives it) and stops it when the test ends.
func NewProxyOf(t testing.TB, upstream string, opts sqssim.Options) *sqssim.Proxy {
	t.Helper()
	needs.Server(t, Server)
	px, err := sqssim.StartProxy(upstream, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	return px
}

// NewProxy starts a strict proxy with opts of the test's own in front of
// the fauxqs Main started (to inject faults, count one test's requests or
// lower the in-flight limit) and stops it when the test ends.
func NewProxy(t testing.TB, opts sqssim.Options) *sqssim.Proxy {
	t.Helper()
	needs.Server(t, Server)
	if upstream == "" {
		t.Fatal("no SQS test server: call sqstest.Main from TestMain")
	}
	return NewProxyOf(t, upstream, opts)
}

var seq atomic.Int64

// QueueName returns a queue name no other test in any run uses: SQS allows
// 80 characters of letters, digits, hyphens and underscores, and the
// dead-letter queue's name adds "-dlq".
func QueueName(t testing.TB) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, t.Name())
	suffix := fmt.Sprintf("-%d-%d-%d", time.Now().UnixNano()%1e9, os.Getpid(), seq.Add(1))
	return name[:min(len(name), 80-len("-dlq")-len(suffix))] + suffix
}

// Context returns a context that ends with the test.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// DeleteQueuesAtEnd deletes the named queues through endpoint when the test
// ends, so a long run does not pile queues up in fauxqs.
func DeleteQueuesAtEnd(t testing.TB, endpoint string, names ...string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c := sqssim.Client(endpoint)
		for _, name := range names {
			if u, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)}); err == nil {
				_, _ = c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: u.QueueUrl})
			}
		}
	})
}

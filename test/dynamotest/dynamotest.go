// Package dynamotest runs dynalite, a DynamoDB-compatible server on Node.js,
// for the dynamo adapter's tests: there is no Docker on the machines, and
// dynalite is pinned in test/dynamodb/package.json
// (install: npm ci --prefix test/dynamodb).
//
// A test binary starts one server in TestMain (Main), or uses the one named
// by SKIDATA_TEST_DYNAMODB_ENDPOINT; each test case then creates its own
// tables under a unique prefix (Prefix), so runs never see each other's
// items. The static credentials and the region here are for tests only.
//
// Under -short (test/needs) Main starts nothing and every test that asks
// for the server skips, naming it; the package's other tests still run.
package dynamotest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/skidata/skidata/adapters/dynamo/dynamosim"
	"github.com/skidata/skidata/test/needs"
	"github.com/skidata/skidata/test/poll"
)

// Server is what a test that asks for the server needs, as -short's skip
// message names it.
const Server = "dynalite (DynamoDB stand-in, on Node.js)"

// EnvEndpoint names an already running DynamoDB-compatible server to use
// instead of starting dynalite.
const EnvEndpoint = "SKIDATA_TEST_DYNAMODB_ENDPOINT"

// Region is the region the tests' clients sign for.
const Region = dynamosim.Region

var (
	endpoint string // the strictness proxy every test client goes through
	upstream string // dynalite itself
)

// quickTables makes dynalite's tables active (and gone) as soon as they are
// created (deleted): by default it holds each in CREATING for 500 ms, and
// the test packages create a fresh set of tables for nearly every test. A
// later flag in Main's args overrides it. EndpointOrStart and
// UpstreamOrStart keep dynalite's delay, so the end-to-end tests still see
// the service wait for new tables to become active.
var quickTables = []string{"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0"}

// Main starts dynalite (unless EnvEndpoint is set), runs the tests and stops
// it. When the server cannot be started it prints why and how to fix it and
// returns a failing exit code: the tests skip only under -short.
//
//	func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }
func Main(m *testing.M, args ...string) int {
	if !flag.Parsed() {
		flag.Parse() // testing.Short reads the flags, which m.Run has not parsed yet
	}
	if testing.Short() {
		return m.Run() // whatever asks for the server skips
	}
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		px, err := dynamosim.StartProxy(ep, dynamosim.Options{})
		if err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
			return 1
		}
		defer px.Close()
		endpoint, upstream = px.URL, ep
		return m.Run()
	}
	srv, err := dynamosim.Start(append(quickTables, args...)...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: no DynamoDB test server: %v\n", err)
		return 1
	}
	defer srv.Stop()
	endpoint, upstream = srv.Endpoint, srv.Upstream
	return m.Run()
}

// Endpoint is the server Main started or was given; it fails the test when
// Main was not called.
func Endpoint(t testing.TB) string {
	t.Helper()
	needs.Server(t, Server)
	if endpoint == "" {
		t.Fatal("no DynamoDB test server: call dynamotest.Main from TestMain")
	}
	return endpoint
}

// Upstream is dynalite itself, which Main started or was given, with no
// proxy in front: for tests of what dynalite accepts on its own.
func Upstream(t testing.TB) string {
	t.Helper()
	needs.Server(t, Server)
	if upstream == "" {
		t.Fatal("no DynamoDB test server: call dynamotest.Main from TestMain")
	}
	return upstream
}

// Client returns a client for the test server with static dummy
// credentials.
func Client(t testing.TB) *dynamodb.Client {
	return dynamosim.ClientFor(Endpoint(t))
}

var seq atomic.Int64

// Prefix returns a table prefix no other test in any run uses.
func Prefix(t testing.TB) string {
	return fmt.Sprintf("t%d_%d_%d_", time.Now().UnixNano(), os.Getpid(), seq.Add(1))
}

// Context returns a context that ends with the test.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// EndpointOrStart is for tests in a binary without Main (an end-to-end test
// beside tests that need no DynamoDB): the server EnvEndpoint names, or a
// dynalite started for this test and stopped when it ends.
func EndpointOrStart(t testing.TB) string {
	t.Helper()
	needs.Server(t, Server)
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		px, err := dynamosim.StartProxy(ep, dynamosim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(px.Close)
		return px.URL
	}
	srv, err := dynamosim.Start()
	if err != nil {
		t.Fatalf("no DynamoDB test server: %v", err)
	}
	t.Cleanup(srv.Stop)
	return srv.Endpoint
}

// NewProxy starts a proxy with opts in front of the dynalite Main started
// (for the throughput model, or per-key accounting of one test's writes)
// and stops it when the test ends.
func NewProxy(t testing.TB, opts dynamosim.Options) *dynamosim.Proxy {
	t.Helper()
	needs.Server(t, Server)
	if upstream == "" {
		t.Fatal("no DynamoDB test server: call dynamotest.Main from TestMain")
	}
	px, err := dynamosim.StartProxy(upstream, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	return px
}

// UpstreamOrStart is dynalite itself, with no proxy in front, for a test
// that puts a Proxy of its own there: the server EnvEndpoint names, or a
// dynalite started for this test and stopped when it ends.
func UpstreamOrStart(t testing.TB) string {
	t.Helper()
	needs.Server(t, Server)
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		return ep
	}
	srv, err := dynamosim.Start()
	if err != nil {
		t.Fatalf("no DynamoDB test server: %v", err)
	}
	t.Cleanup(srv.Stop)
	return srv.Upstream
}

// PollDeadline bounds Eventually: long enough for a lag model's delay
// (seconds) on a loaded machine, short enough to fail a test that would
// never see its result.
const PollDeadline = 30 * time.Second

// Eventually calls check until it returns "" (the awaited state) and fails
// the test with what check last said once PollDeadline has passed: the way
// to wait for an asynchronous result without sleeping to assert.
func Eventually(t testing.TB, what string, check func() string) {
	t.Helper()
	poll.Until(t, PollDeadline, what, check)
}

// WithinLag fails the test unless less than lag has passed since start,
// the moment before a write was sent: only a read that came back within
// the lag model's delay of its write can show that it misses that write.
// (A test failing here ran on a machine too slow for its lag.)
func WithinLag(t testing.TB, start time.Time, lag time.Duration) {
	t.Helper()
	if took := time.Since(start); took >= lag {
		t.Fatalf("the read came back %v after its write was sent, not within the lag (%v): it cannot show the lag; raise the test's lag", took, lag)
	}
}

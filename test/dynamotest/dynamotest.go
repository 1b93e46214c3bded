// Package dynamotest runs dynalite, a DynamoDB-compatible server on Node.js,
// for the dynamo adapter's tests: there is no Docker on the machines, and
// dynalite is pinned in test/dynamodb/package.json
// (install: npm ci --prefix test/dynamodb).
//
// A test binary starts one server in TestMain (Main), or uses the one named
// by SKIDATA_TEST_DYNAMODB_ENDPOINT; each test case then creates its own
// tables under a unique prefix (Prefix), so runs never see each other's
// items. The static credentials and the region here are for tests only.
package dynamotest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// EnvEndpoint names an already running DynamoDB-compatible server to use
// instead of starting dynalite.
const EnvEndpoint = "SKIDATA_TEST_DYNAMODB_ENDPOINT"

// Region is the region the tests' clients sign for.
const Region = "us-west-2"

const installHint = "run `npm ci --prefix test/dynamodb` from the repository root"

var (
	endpoint string // the strictness proxy every test client goes through
	upstream string // dynalite itself
)

// Main starts dynalite (unless EnvEndpoint is set), runs the tests and stops
// it. When the server cannot be started it prints why and how to fix it and
// returns a failing exit code: the tests never skip.
//
//	func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }
func Main(m *testing.M, args ...string) int {
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		px, err := StartProxy(ep, Options{})
		if err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
			return 1
		}
		defer px.Close()
		endpoint, upstream = px.URL, ep
		return m.Run()
	}
	srv, err := Start(args...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: no DynamoDB test server: %v\n", err)
		return 1
	}
	defer srv.Stop()
	endpoint, upstream = srv.Endpoint, srv.Upstream
	return m.Run()
}

// Server is a running dynalite behind a strictness proxy.
type Server struct {
	// Endpoint is the strictness proxy's URL: what clients use, so that
	// dynalite is held to what AWS accepts (proxy.go).
	Endpoint string
	// Upstream is dynalite's own URL, for another Proxy in front of it
	// (with other Options) or a test of dynalite itself.
	Upstream string
	// Proxy is the strictness proxy at Endpoint.
	Proxy *Proxy
	cmd   *exec.Cmd
	done  chan struct{}
}

// Start runs dynalite on a free loopback port with the extra command-line
// args (e.g. "--maxItemSizeKb", "4") and waits until it answers.
func Start(args ...string) (*Server, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node (Node.js) is not installed, and dynalite needs it: install nodejs, then %s", installHint)
	}
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	cli := filepath.Join(root, "test", "dynamodb", "node_modules", "dynalite", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		return nil, fmt.Errorf("dynalite is not installed (%s missing): %s", cli, installHint)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	argv := append([]string{cli, "--host", "127.0.0.1", "--port", strconv.Itoa(port)}, args...)
	cmd := exec.Command(node, argv...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start dynalite: %w", err)
	}
	s := &Server{Upstream: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, done: make(chan struct{})}
	var exitErr atomic.Value
	go func() {
		if err := cmd.Wait(); err != nil {
			exitErr.Store(err)
		}
		close(s.done)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-s.done:
			return nil, fmt.Errorf("dynalite exited before answering (%v): %s", exitErr.Load(), stderr.String())
		default:
		}
		if answers(s.Upstream) {
			px, err := StartProxy(s.Upstream, Options{})
			if err != nil {
				s.Stop()
				return nil, err
			}
			s.Proxy, s.Endpoint = px, px.URL
			return s, nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("dynalite did not answer on %s within 30s: %s", s.Upstream, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop ends the server and waits for it to exit.
func (s *Server) Stop() {
	if s.Proxy != nil {
		s.Proxy.Close()
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

// answers reports whether anything speaks HTTP at the endpoint (dynalite
// answers an unsigned request with an error, which is enough).
func answers(url string) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run the tests inside the repository")
		}
		dir = parent
	}
}

// Endpoint is the server Main started or was given; it fails the test when
// Main was not called.
func Endpoint(t testing.TB) string {
	t.Helper()
	if endpoint == "" {
		t.Fatal("no DynamoDB test server: call dynamotest.Main from TestMain")
	}
	return endpoint
}

// Client returns a client for the test server with static dummy
// credentials.
func Client(t testing.TB) *dynamodb.Client {
	return ClientFor(Endpoint(t))
}

// ClientFor returns a test client for the given endpoint.
func ClientFor(url string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       Region,
		BaseEndpoint: aws.String(url),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	}, optFns...)
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
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		px, err := StartProxy(ep, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(px.Close)
		return px.URL
	}
	srv, err := Start()
	if err != nil {
		t.Fatalf("no DynamoDB test server: %v", err)
	}
	t.Cleanup(srv.Stop)
	return srv.Endpoint
}

// NewProxy starts a proxy with opts in front of the dynalite Main started
// (for the throughput model, or per-key accounting of one test's writes)
// and stops it when the test ends.
func NewProxy(t testing.TB, opts Options) *Proxy {
	t.Helper()
	if upstream == "" {
		t.Fatal("no DynamoDB test server: call dynamotest.Main from TestMain")
	}
	px, err := StartProxy(upstream, opts)
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
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		return ep
	}
	srv, err := Start()
	if err != nil {
		t.Fatalf("no DynamoDB test server: %v", err)
	}
	t.Cleanup(srv.Stop)
	return srv.Upstream
}

// Package dynamosim is DynamoDB as AWS runs it, simulated in front of
// dynalite (a DynamoDB-compatible server on Node.js, pinned in
// test/dynamodb): a proxy that refuses what AWS refuses and dynalite
// accepts (strict.go), accounts capacity units per partition key value as
// AWS bills them, optionally throttles a partition past AWS's
// per-partition limits (throughput.go), and optionally makes global
// secondary index reads and eventually consistent reads lag behind the
// writes as they can on AWS, where dynalite shows every write at once
// (lag.go, Options.Lag; off by default). The tests (test/dynamotest) and
// skibench's data-model lab both run through it; it is a lab instrument,
// not part of the service.
package dynamosim

import (
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
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Region is the region the simulation's clients sign for.
const Region = "us-west-2"

const installHint = "run `npm ci --prefix test/dynamodb` from the repository root"

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

// ClientFor returns a test client for the given endpoint.
func ClientFor(url string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       Region,
		BaseEndpoint: aws.String(url),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	}, optFns...)
}

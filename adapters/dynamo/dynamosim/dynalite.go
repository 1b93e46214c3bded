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
	"bufio"
	"errors"
	"fmt"
	"io"
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
	Proxy   *Proxy
	cmd     *exec.Cmd
	done    chan struct{} // closed once dynalite has exited
	exitErr atomic.Value  // how it exited, if not cleanly
}

// Start runs dynalite on a loopback port the kernel picks, with the extra
// command-line args as --name value pairs (e.g. "--maxItemSizeKb", "4"),
// and returns once it listens. The launcher (test/dynamodb/listen.js)
// listens on port 0 and prints the port it got: picking a free port here
// and handing it over would leave a moment in which another process could
// take it.
func Start(args ...string) (*Server, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node (Node.js) is not installed, and dynalite needs it: install nodejs, then %s", installHint)
	}
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(root, "test", "dynamodb", "node_modules", "dynalite")); err != nil {
		return nil, fmt.Errorf("dynalite is not installed (%v): %s", err, installHint)
	}
	cmd := exec.Command(node, append([]string{filepath.Join(root, "test", "dynamodb", "listen.js")}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start dynalite: %w", err)
	}
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start dynalite: %w", err)
	}
	s := &Server{cmd: cmd, done: make(chan struct{})}
	ports := make(chan int, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if p, ok := strings.CutPrefix(lines.Text(), listeningOn); ok {
				if n, err := strconv.Atoi(p); err == nil {
					ports <- n
					break
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout) // dynalite's later output, until it exits
		if err := cmd.Wait(); err != nil {
			s.exitErr.Store(err)
		}
		close(s.done)
	}()
	select {
	case port := <-ports:
		s.Upstream = fmt.Sprintf("http://127.0.0.1:%d", port)
	case <-s.done:
		return nil, fmt.Errorf("dynalite exited before listening (%v): %s", s.exitErr.Load(), stderr.String())
	case <-time.After(30 * time.Second):
		s.Stop()
		return nil, fmt.Errorf("dynalite did not listen within 30s: %s", stderr.String())
	}
	px, err := StartProxy(s.Upstream, Options{})
	if err != nil {
		s.Stop()
		return nil, err
	}
	s.Proxy, s.Endpoint = px, px.URL
	return s, nil
}

// listeningOn starts the line listen.js prints once dynalite listens; the
// port follows it.
const listeningOn = "dynalite listening on port "

// Stop ends the server and waits for it to exit.
func (s *Server) Stop() {
	if s.Proxy != nil {
		s.Proxy.Close()
	}
	_ = s.cmd.Process.Kill()
	<-s.done
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

// Package sqssim is Amazon SQS as the tests and the nemesis run it:
// fauxqs, a local SQS on Node.js pinned in test/sqs (install: npm ci
// --prefix test/sqs), behind a strict proxy (Proxy) that refuses what SQS
// refuses and fauxqs accepts, models SQS's in-flight quota, and injects
// on demand what SQS does and fauxqs never does: throttling, failed batch
// entries, a message delivered twice. docs/sqs.md says what is and is not
// modelled. test/sqstest runs it for the tests and `skiload nemesis` for
// its SQS modes; like adapters/dynamo/dynamosim it is a lab instrument,
// not part of the service. The static credentials and the region here
// are for the stand-in only.
package sqssim

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
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Region is the region the stand-in's clients sign for.
const Region = "us-east-1"

// Client returns a client for endpoint with the stand-in's static
// credentials.
func Client(endpoint string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
}

// InstallHint is how to install fauxqs, for every message that finds it
// missing.
const InstallHint = "run `npm ci --prefix test/sqs` from the repository root (scripts/services.sh does it)"

// Server is a running fauxqs behind a strict proxy (Proxy).
type Server struct {
	// Endpoint is the strict proxy's URL: what clients use, so that fauxqs
	// is held to what SQS accepts.
	Endpoint string
	// Upstream is fauxqs's own URL, for another Proxy in front of it (with
	// other Options) or a test of fauxqs itself.
	Upstream string
	// Proxy is the strict proxy at Endpoint.
	Proxy   *Proxy
	cmd     *exec.Cmd
	done    chan struct{} // closed once fauxqs has exited
	exitErr atomic.Value  // how it exited, if not cleanly
}

// listeningOn starts the line test/sqs/listen.mjs prints once fauxqs
// listens; the port follows it.
const listeningOn = "fauxqs listening on port "

// Start runs fauxqs on a loopback port the kernel picks, puts a strict
// proxy with default Options in front of it, and returns once both listen.
// Call Stop when done.
func Start() (*Server, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node (Node.js) is not installed, and fauxqs needs it: install nodejs, then %s", InstallHint)
	}
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "test", "sqs")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "fauxqs", "package.json")); err != nil {
		return nil, fmt.Errorf("fauxqs is not installed (%v): %s", err, InstallHint)
	}
	cmd := exec.Command(node, filepath.Join(dir, "listen.mjs"))
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start fauxqs: %w", err)
	}
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start fauxqs: %w", err)
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
		_, _ = io.Copy(io.Discard, stdout) // later output, until it exits
		if err := cmd.Wait(); err != nil {
			s.exitErr.Store(err)
		}
		close(s.done)
	}()
	select {
	case port := <-ports:
		s.Upstream = fmt.Sprintf("http://127.0.0.1:%d", port)
	case <-s.done:
		return nil, fmt.Errorf("fauxqs exited before listening (%v): %s", s.exitErr.Load(), stderr.String())
	case <-time.After(30 * time.Second):
		s.Stop()
		return nil, fmt.Errorf("fauxqs did not listen within 30s: %s", stderr.String())
	}
	px, err := StartProxy(s.Upstream, Options{})
	if err != nil {
		s.Stop()
		return nil, err
	}
	s.Proxy, s.Endpoint = px, px.URL
	return s, nil
}

// Stop ends the proxy and fauxqs and waits for fauxqs to exit. Every queue
// and message in it is gone: fauxqs keeps nothing on disk.
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

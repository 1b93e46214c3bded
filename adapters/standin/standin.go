// Package standin starts the local stand-ins on Node.js that the lab
// instruments put behind their strict proxies: dynalite for
// adapters/dynamo/dynamosim and fauxqs for adapters/sqs/sqssim, each
// pinned by npm in a directory of test/. It is not an adapter but the one
// launcher both share, as adapters/redact is the one secret-masking helper.
package standin

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Spec says how to start one stand-in.
type Spec struct {
	Name   string // the npm package, as messages name it: "dynalite"
	Dir    string // its directory in the repository: "test/dynamodb"
	Script string // the launcher in Dir, which listens on 127.0.0.1 on a port the kernel picks
	// Listening begins the line the launcher prints once it listens; the
	// port follows it. The port is the launcher's: picking a free one here
	// and handing it over would leave a moment in which another process
	// could take it.
	Listening string
	Hint      string // how to install it, for every message that finds it missing
}

// Process is a running stand-in.
type Process struct {
	URL     string // http://127.0.0.1:PORT
	cmd     *exec.Cmd
	done    chan struct{}
	exitErr atomic.Value // how it exited, if not cleanly
}

// Start runs spec's launcher with args from the repository that holds the
// working directory and returns once it listens. Call Stop when done.
func Start(spec Spec, args ...string) (*Process, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node (Node.js) is not installed, and %s needs it: install nodejs, then %s", spec.Name, spec.Hint)
	}
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, filepath.FromSlash(spec.Dir))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", spec.Name, "package.json")); err != nil {
		return nil, fmt.Errorf("%s is not installed (%v): %s", spec.Name, err, spec.Hint)
	}
	cmd := exec.Command(node, append([]string{filepath.Join(dir, spec.Script)}, args...)...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	ports := make(chan int, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if s, ok := strings.CutPrefix(lines.Text(), spec.Listening); ok {
				if n, err := strconv.Atoi(s); err == nil {
					ports <- n
					break
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout) // later output, until it exits
		if err := cmd.Wait(); err != nil {
			p.exitErr.Store(err)
		}
		close(p.done)
	}()
	select {
	case port := <-ports:
		p.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before listening (%v): %s", spec.Name, p.exitErr.Load(), stderr.String())
	case <-time.After(30 * time.Second):
		p.Stop()
		return nil, fmt.Errorf("%s did not listen within 30s: %s", spec.Name, stderr.String())
	}
}

// Stop kills the stand-in and waits for it to exit. It keeps nothing on
// disk: every table or queue it held is gone.
func (p *Process) Stop() {
	_ = p.cmd.Process.Kill()
	<-p.done
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

// Forward sends body to the stand-in at upstream with r's method, path,
// query and headers, and returns its answer. The stand-ins check no
// signature, so a body a proxy rewrote is still accepted.
func Forward(httpc *http.Client, upstream string, r *http.Request, body []byte) (int, []byte, http.Header, error) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	for k, vs := range r.Header {
		if k == "Accept-Encoding" || k == "Content-Length" {
			continue
		}
		out.Header[k] = vs
	}
	resp, err := httpc.Do(out)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("forward to %s: %w", upstream, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header, err
}

package nemesis

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one skiapi role (all, api or consumer), supervised as
// systemd supervises the service's units: whenever it exits, planned or
// not, it is started again after the restart delay, on the same port, so
// that clients find it where it was (unless another program took the
// port meanwhile: then on another).
type process struct {
	name  string
	bin   string
	args  []string // after --listen and --log-format
	env   []string // beyond serviceEnv
	delay time.Duration
	log   io.Writer // every incarnation's output, one after the other
	since func() time.Duration
	exits func(Exit)

	mu      sync.Mutex
	port    int
	taken   bool // the last incarnation could not bind port
	cmd     *exec.Cmd
	inc     int           // the current (or last) incarnation, from 1
	serving int           // the last incarnation that logged it serves
	alive   bool          // the current incarnation has not exited
	planned int           // the incarnation the nemesis is ending on purpose
	changed chan struct{} // closed, and replaced, at every change above
	exited  chan struct{} // closed when the current incarnation has exited
	crash   string        // the first Go panic or fatal error any incarnation logged
}

func newProcess(name, bin string, args, env []string, delay time.Duration, log io.Writer, since func() time.Duration, exits func(Exit)) *process {
	return &process{name: name, bin: bin, args: args, env: env, delay: delay, log: log, since: since, exits: exits, changed: make(chan struct{})}
}

// url is where the process serves: http://127.0.0.1:port.
func (p *process) url() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("http://127.0.0.1:%d", p.port)
}

// notify wakes every waiter; p.mu is held.
func (p *process) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// supervise runs incarnation after incarnation until ctx ends. It returns
// an error only when the executable cannot be started at all.
func (p *process) supervise(ctx context.Context) error {
	for {
		exited, err := p.start()
		if err != nil {
			return err
		}
		select {
		case <-exited:
		case <-ctx.Done():
			return nil // the run stops the last incarnation itself
		}
		select {
		case <-time.After(p.delay):
		case <-ctx.Done():
			return nil
		}
	}
}

// start runs the next incarnation and returns a channel closed when it
// has exited.
func (p *process) start() (<-chan struct{}, error) {
	p.mu.Lock()
	if p.port == 0 || p.taken {
		port, err := freePort(0)
		if err != nil {
			p.mu.Unlock()
			return nil, err
		}
		p.port, p.taken = port, false
	}
	args := append([]string{"--listen", fmt.Sprintf("127.0.0.1:%d", p.port), "--log-format", "json"}, p.args...)
	p.mu.Unlock()
	cmd := exec.Command(p.bin, args...)
	cmd.Env = append(serviceEnv(), p.env...)
	out, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = cmd.Stderr
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", p.name, err)
	}
	p.inc++
	p.cmd, p.alive = cmd, true
	p.exited = make(chan struct{})
	inc, exited := p.inc, p.exited
	fmt.Fprintf(p.log, "=== %s incarnation %d started at %.3fs: %s %s\n", p.name, inc, p.since().Seconds(), p.bin, strings.Join(args, " "))
	p.notify()
	go p.watch(cmd, inc, out, exited)
	return exited, nil
}

// watch copies an incarnation's output to the log, notes when it serves
// and whether it crashed, and records its exit.
func (p *process) watch(cmd *exec.Cmd, inc int, out io.Reader, exited chan struct{}) {
	var tail []string
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		tail = append(tail, line)
		if len(tail) > 30 {
			tail = tail[1:]
		}
		p.mu.Lock()
		fmt.Fprintln(p.log, line)
		var rec struct{ Msg string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "skidata serving" {
			p.serving = inc
			p.notify()
		}
		if p.serving < inc && strings.Contains(line, "bind: address already in use") {
			p.taken = true
		}
		if p.crash == "" && (strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ")) {
			p.crash = fmt.Sprintf("incarnation %d: %s", inc, line)
		}
		p.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, out)
	err := cmd.Wait()
	status := "exit status 0"
	if err != nil {
		status = err.Error()
	}
	p.mu.Lock()
	planned := p.planned == inc
	p.alive = false
	fmt.Fprintf(p.log, "=== %s incarnation %d ended at %.3fs: %s\n", p.name, inc, p.since().Seconds(), status)
	p.notify()
	p.mu.Unlock()
	e := Exit{Process: p.name, At: p.since(), Incarnation: inc, Status: status, Planned: planned}
	if !planned {
		e.Tail = strings.Join(tail, "\n")
	}
	p.exits(e)
	close(exited)
}

// signal sends sig to the current incarnation; end says the nemesis means
// to end it (the exit it causes is planned). It returns the incarnation
// signalled and a channel closed once it has exited.
func (p *process) signal(sig syscall.Signal, end bool) (int, <-chan struct{}, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.alive {
		return 0, nil, fmt.Errorf("%s is not running (incarnation %d exited)", p.name, p.inc)
	}
	if end {
		p.planned = p.inc
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return 0, nil, fmt.Errorf("%s to %s: %w", sig, p.name, err)
	}
	return p.inc, p.exited, nil
}

// waitServing returns once an incarnation after the given one serves
// (after 0: any), or with an error when ctx ends first.
func (p *process) waitServing(ctx context.Context, after int) error {
	for {
		p.mu.Lock()
		ok := p.serving > after && p.serving == p.inc && p.alive
		ch, inc := p.changed, p.inc
		p.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%s not serving again (incarnation %d): %w", p.name, inc, context.Cause(ctx))
		}
	}
}

// terminate ends the current incarnation as systemd stops a unit: SIGTERM,
// and SIGKILL if it has not exited within budget. It reports whether it
// exited by itself in time.
func (p *process) terminate(budget time.Duration) (bool, error) {
	_, exited, err := p.signal(syscall.SIGTERM, true)
	if err != nil {
		return true, err
	}
	select {
	case <-exited:
		return true, nil
	case <-time.After(budget):
	}
	if _, exited, err := p.signal(syscall.SIGKILL, true); err == nil {
		<-exited
	}
	return false, nil
}

// ready reports whether the current incarnation answers /readyz with 200,
// and its queue depth.
func (p *process) ready(ctx context.Context, client *http.Client) (bool, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url()+"/readyz", nil)
	if err != nil {
		return false, 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, 0, err
	}
	defer resp.Body.Close()
	var r struct {
		QueueDepth int64 `json:"queueDepth"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return false, 0, fmt.Errorf("%s /readyz: status %d, body: %w", p.name, resp.StatusCode, err)
	}
	return resp.StatusCode == http.StatusOK, r.QueueDepth, nil
}

// crashed is the first Go panic or fatal error any incarnation logged.
func (p *process) crashed() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.crash
}

// serviceEnv is this process's environment without the SKI_ variables
// skiapi would read as flags: a run's processes get their settings from
// the run alone.
func serviceEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKI_") {
			env = append(env, kv)
		}
	}
	return env
}

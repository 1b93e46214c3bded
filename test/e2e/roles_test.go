package e2e

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/httpapi"
	"github.com/skidata/skidata/test/apitest"
)

// The tests here run skiapi as an operator would: one process with --role
// api and one with --role consumer, sharing a RabbitMQ prefix and a
// PostgreSQL schema of their own.

// proc is one running skiapi.
type proc struct {
	name string
	cmd  *exec.Cmd
	base string     // http://127.0.0.1:port
	done chan error // cmd.Wait's result, once
	// exited is set (by the test's goroutine) once done was received.
	exited bool
	mu     sync.Mutex
	logs   strings.Builder
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// startSkiapi runs bin with args on a loopback port the kernel picks, and
// learns the port from the "skidata serving" log line (JSON logs), so no
// port is guessed. The process is killed at the end of the test if still
// running.
func startSkiapi(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	return startSkiapiWith(t, name, bin, nil, args...)
}

// startSkiapiWith is startSkiapi with env added to the process's
// environment.
func startSkiapiWith(t *testing.T, name, bin string, env []string, args ...string) *proc {
	t.Helper()
	args = append([]string{"--listen", "127.0.0.1:0", "--log-format", "json"}, args...)
	p := &proc{name: name, cmd: exec.Command(bin, args...), done: make(chan error, 1)}
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.logs.WriteString(line + "\n")
			p.mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "skidata serving" {
				select {
				case addr <- rec.Addr:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		if !p.exited {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s logs:\n%s", name, p.log())
		}
	})
	select {
	case a := <-addr:
		p.base = "http://" + a
	case err := <-p.done:
		p.done <- err
		t.Fatalf("%s exited before serving (%v):\n%s", name, err, p.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not log its address within 30s:\n%s", name, p.log())
	}
	return p
}

// terminate sends SIGTERM and requires exit status 0 within the shutdown
// timeout.
func (p *proc) terminate(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM %s: %v", p.name, err)
	}
	select {
	case err := <-p.done:
		p.exited = true
		if err != nil {
			t.Errorf("%s after SIGTERM: %v; want exit status 0\n%s", p.name, err, p.log())
		}
	case <-time.After(45 * time.Second):
		t.Fatalf("%s did not exit within 45s of SIGTERM", p.name)
	}
}

// kill9 kills the process with no chance to clean up.
func (p *proc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill -9 %s: %v", p.name, err)
	}
	<-p.done
	p.exited = true
}

// rolesSetup is the flags both roles share: a fresh PostgreSQL schema and a
// RabbitMQ prefix of the test's own, both removed when it ends (after the
// processes: cleanups run in reverse).
func rolesSetup(t *testing.T) []string {
	t.Helper()
	cfg, _ := postgresConfig(t)
	url, prefix := rabbitTopology(t, "roles")
	return []string{
		"--queue", "rabbitmq", "--amqp-url", url, "--amqp-prefix", prefix,
		"--store", "postgres", "--database-url", cfg.Postgres.URL, "--db-schema", cfg.Postgres.Schema,
		"--shutdown-timeout", "30s",
	}
}

// rolesRide is the i-th ride of these tests: five skiers on one day, each
// ride its own time.
type rolesRide struct{ skier, time, lift int }

func rolesRides(n int) []rolesRide {
	rs := make([]rolesRide, n)
	for i := range rs {
		// time is a minute of the day (0..1439): distinct per skier while
		// n < 5 × 1440
		rs[i] = rolesRide{skier: 7100 + i%5, time: (i / 5) % 1440, lift: 1 + i%40}
	}
	return rs
}

func postRide(base string, r rolesRide) (int, error) {
	return postRideOnDay(http.DefaultClient, base, 20, r)
}

// postRideOnDay posts r for resort 1, season 2025, the day given, and
// returns the answer's status.
func postRideOnDay(c *http.Client, base string, day int, r rolesRide) (int, error) {
	req, err := newRide(base, 1, "2025", int32(day), int32(r.skier), int32(r.time), int32(r.lift))
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// storedRides reads every ride of the test's skiers back through the API
// process's GET, duplicates included.
func storedRides(t *testing.T, base string, skiers []int) ([]rolesRide, error) {
	var out []rolesRide
	for _, s := range skiers {
		req, err := httpapi.NewGetSkierDayRidesRequest(httpapi.ServerURL(base), "2025", "20", int32(s))
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		var body struct {
			Rides []struct{ Time, LiftID int }
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			continue
		}
		if resp.StatusCode != http.StatusOK || err != nil {
			return nil, fmt.Errorf("GET rides of skier %d: status %d, %v", s, resp.StatusCode, err)
		}
		for _, r := range body.Rides {
			out = append(out, rolesRide{skier: s, time: r.Time, lift: r.LiftID})
		}
	}
	return out, nil
}

func sortRides(rs []rolesRide) []rolesRide {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b rolesRide) int { return cmp.Or(a.time-b.time, a.skier-b.skier, a.lift-b.lift) })
	return rs
}

// waitStoredExactly polls the API process until the stored rides are
// exactly want (each once), failing with the difference at the deadline.
func waitStoredExactly(t *testing.T, base string, want []rolesRide) {
	t.Helper()
	skiers := []int{7100, 7101, 7102, 7103, 7104}
	want = sortRides(want)
	apitest.Eventually(t, fmt.Sprintf("all %d accepted rides stored exactly once", len(want)), func() string {
		got, err := storedRides(t, base, skiers)
		if err != nil {
			return err.Error()
		}
		got = sortRides(got)
		if !slices.Equal(got, want) {
			return fmt.Sprintf("%d rides stored (want %d)", len(got), len(want))
		}
		return ""
	})
}

// TestRolesAsSeparateProcessesOverRabbitMQ: rides posted to the API
// process are stored by the consumer process, each once (a ride posted twice
// too), and both exit 0 on SIGTERM.
func TestRolesAsSeparateProcessesOverRabbitMQ(t *testing.T) {
	t.Parallel()
	bin := buildSkiapi(t)
	flags := rolesSetup(t)
	api := startSkiapi(t, "api", bin, append([]string{"--role", "api"}, flags...)...)
	consumer := startSkiapi(t, "consumer", bin, append([]string{"--role", "consumer"}, flags...)...)
	if r := apitest.Send(t, apitest.Req(httpapi.NewGetHealthzRequest(httpapi.ServerURL(consumer.base)))); r.Status != http.StatusOK {
		t.Errorf("consumer /healthz: %d; want 200", r.Status)
	}

	rides := rolesRides(100)
	for _, r := range append(rides, rides[0]) { // the first ride twice
		if code, err := postRide(api.base, r); err != nil || code != http.StatusCreated {
			t.Fatalf("POST %+v: %d, %v; want 201", r, code, err)
		}
	}
	waitStoredExactly(t, api.base, rides)

	api.terminate(t)
	consumer.terminate(t)
}

// TestConsumerKilledMidRunLosesNothing: the consumer process is killed with
// SIGKILL while rides are being posted and stored; a new consumer takes
// over, and every ride answered 201 is stored exactly once.
func TestConsumerKilledMidRunLosesNothing(t *testing.T) {
	t.Parallel()
	bin := buildSkiapi(t)
	flags := rolesSetup(t)
	api := startSkiapi(t, "api", bin, append([]string{"--role", "api"}, flags...)...)
	// Small batches, so the consumer is mid-way through the rides when
	// it is killed.
	consumerFlags := append([]string{"--role", "consumer", "--batch-size", "10", "--amqp-prefetch", "50"}, flags...)
	first := startSkiapi(t, "consumer 1", bin, consumerFlags...)

	rides := rolesRides(400)
	var (
		mu       sync.Mutex
		accepted []rolesRide
		refused  []string
		posted   = make(chan struct{})
	)
	go func() {
		defer close(posted)
		for _, r := range rides {
			code, err := postRide(api.base, r)
			mu.Lock()
			if err == nil && code == http.StatusCreated {
				accepted = append(accepted, r)
			} else {
				refused = append(refused, fmt.Sprintf("%+v: %d %v", r, code, err))
			}
			mu.Unlock()
		}
	}()

	// Kill as soon as some rides are stored, while the rest stream in.
	storedBefore := 0
	apitest.Eventually(t, "the first consumer stores some rides", func() string {
		got, err := storedRides(t, api.base, []int{7100, 7101, 7102, 7103, 7104})
		if err != nil {
			return err.Error()
		}
		if storedBefore = len(got); storedBefore == 0 {
			return "no ride stored"
		}
		return ""
	})
	first.kill9(t)
	t.Logf("consumer 1 killed with %d of %d rides seen stored", storedBefore, len(rides))
	second := startSkiapi(t, "consumer 2", bin, consumerFlags...)

	select {
	case <-posted:
	case <-time.After(apitest.Deadline):
		t.Fatal("posting the rides did not finish")
	}
	mu.Lock()
	if len(refused) > 0 {
		t.Errorf("%d rides refused; want every one accepted (the broker holds them while no consumer runs): %v", len(refused), refused)
	}
	want := slices.Clone(accepted)
	mu.Unlock()
	waitStoredExactly(t, api.base, want)

	api.terminate(t)
	second.terminate(t)
}

// TestConsumerRoleRefusesRides: a consumer process persists rides but takes
// none: a POST (or any API route) is answered 404 naming the role, while
// health, readiness and metrics answer as on an API process.
func TestConsumerRoleRefusesRides(t *testing.T) {
	bin := buildSkiapi(t)
	flags := rolesSetup(t)
	consumer := startSkiapi(t, "consumer", bin, append([]string{"--role", "consumer"}, flags...)...)

	code, err := postRide(consumer.base, rolesRide{skier: 7100, time: 1, lift: 2})
	if err != nil || code != http.StatusNotFound {
		t.Errorf("POST a ride to the consumer: %d, %v; want 404", code, err)
	}
	for _, path := range []string{"/resorts", "/skiers/seasons/2025/days/20/skiers/7100", "/statistics"} {
		r := apitest.Call(t, "GET", consumer.base+path, "")
		if r.Status != http.StatusNotFound || !strings.Contains(string(r.Body), "--role consumer") {
			t.Errorf("GET %s on the consumer: %d %s; want 404 naming the role", path, r.Status, r.Body)
		}
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if r := apitest.Call(t, "GET", consumer.base+path, ""); r.Status != http.StatusOK {
			t.Errorf("GET %s on the consumer: %d %s; want 200", path, r.Status, r.Body)
		}
	}
	consumer.terminate(t)
}

// TestServingLineShowsTheGOMAXPROCSInEffect: an operator who sets
// GOMAXPROCS for a process sharing its box (docs/operations.md) sees the
// value the process runs with in its start-up line.
func TestServingLineShowsTheGOMAXPROCSInEffect(t *testing.T) {
	p := startSkiapiWith(t, "skiapi", buildSkiapi(t), []string{"GOMAXPROCS=1"})
	for _, line := range strings.Split(p.log(), "\n") {
		var rec struct {
			Msg        string
			Gomaxprocs *int
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "skidata serving" {
			continue
		}
		if rec.Gomaxprocs == nil || *rec.Gomaxprocs != 1 {
			t.Errorf("serving line %s; want gomaxprocs 1", line)
		}
		p.terminate(t)
		return
	}
	t.Fatalf("no serving line in:\n%s", p.log())
}

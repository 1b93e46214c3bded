package short

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skidata/skidata/test/needs"
)

// goEnv, set in the environment of this test binary run again by isolatedGo,
// is the go command it becomes once it has brought up loopback in its new
// network namespace.
const goEnv = "SKIDATA_SHORT_BECOME_GO"

func TestMain(m *testing.M) {
	if goBin := os.Getenv(goEnv); goBin != "" {
		os.Exit(becomeGo(goBin, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// becomeGo runs in a network namespace of its own, where nothing listens:
// it brings up loopback (the tests serve on 127.0.0.1) and execs the go
// command with args.
func becomeGo(goBin string, args []string) int {
	if err := loopbackUp(); err != nil {
		fmt.Fprintf(os.Stderr, "bring up loopback in the test's network namespace: %v\n", err)
		return 2
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, goEnv+"=") })
	err := syscall.Exec(goBin, append([]string{goBin}, args...), env)
	fmt.Fprintf(os.Stderr, "exec %s: %v\n", goBin, err)
	return 2
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// event is one line of go test -json.
type event struct {
	Action, Package, Test, Output string
}

// run is what go test -json reported: each test's and each package's
// final action and output.
type run struct {
	action map[string]string // "pkg" or "pkg TestName" -> pass, fail, skip
	output map[string]string
	took   time.Duration
}

func key(pkg, test string) string { return strings.TrimSpace(pkg + " " + test) }

// isolatedGo runs the go command with args from the repository's root as
// a machine with nothing but Go would: PATH holds only the go command's
// directory (no psql, rabbitmq-server, redis, node, promtool,
// rsvg-convert, systemd-nspawn, nor even bash), and it runs in a network
// namespace of its own, where no server's port is open (the machine's
// PostgreSQL, RabbitMQ and Redis are out of reach at their usual
// addresses). The build cache is the caller's, so what make test compiled
// is not compiled again; with no network, the modules come from the
// module cache (go mod download fills it first).
func isolatedGo(t *testing.T, args ...string) (run, error) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	download := exec.Command(goBin, "mod", "download")
	download.Dir = root
	if out, err := download.CombinedOutput(); err != nil {
		t.Fatalf("go mod download: %v\n%s", err, out)
	}
	goenv := exec.Command(goBin, "env", "GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS")
	goenv.Dir = root
	out, err := goenv.Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	vals := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(vals) != 4 {
		t.Fatalf("go env printed %q; want four lines", out)
	}
	env := []string{
		"PATH=" + filepath.Dir(goBin), "HOME=" + os.Getenv("HOME"),
		"GOCACHE=" + vals[0], "GOMODCACHE=" + vals[1], "GOPATH=" + vals[2], "GOFLAGS=" + vals[3],
		"GOPROXY=off", "GOTOOLCHAIN=local", goEnv + "=" + goBin,
	}
	if tmp := os.Getenv("TMPDIR"); tmp != "" {
		env = append(env, "TMPDIR="+tmp)
	}

	ctx := context.Background()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-time.Minute))
		defer cancel()
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, self, args...) // becomes go in TestMain
	cmd.Dir, cmd.Env = root, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := cmd.Run()
	r := run{action: map[string]string{}, output: map[string]string{}, took: time.Since(start)}
	if errors.Is(runErr, syscall.EPERM) {
		t.Fatalf("a network namespace of the test's own needs root (CAP_SYS_ADMIN): %v", runErr)
	}
	var exit *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exit) {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), runErr, stderr.String())
	}
	dec := json.NewDecoder(&stdout)
	for {
		var e event
		if err := dec.Decode(&e); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go %s printed what is not go test -json (%v); stderr:\n%s", strings.Join(args, " "), err, stderr.String())
		}
		k := key(e.Package, e.Test)
		switch e.Action {
		case "pass", "fail", "skip":
			r.action[k] = e.Action
		case "output", "build-output":
			r.output[k] += e.Output
		}
	}
	if runErr != nil && stderr.Len() > 0 {
		r.output[""] += stderr.String()
	}
	return r, runErr
}

const module = "github.com/skidata/skidata/"

// TestShortPassesWithNothingButGo: go test -short ./... passes with only
// the go command on PATH and no server's port open, runs the suites that
// need nothing else (the contract suites on memory and in-process, the API
// suite in memory mode), and every test it leaves out says, through
// test/needs, which server or program it needs.
func TestShortPassesWithNothingButGo(t *testing.T) {
	needs.Root(t, "a network namespace of its own, where no server's port is open; it runs go test -short ./... itself")
	r, err := isolatedGo(t, "test", "-short", "-count=1", "-json", "./...")
	if err != nil {
		var failed []string
		for k, a := range r.action {
			if a == "fail" {
				failed = append(failed, k)
			}
		}
		sort.Strings(failed)
		var b strings.Builder
		for _, k := range failed {
			fmt.Fprintf(&b, "--- %s\n%s\n", k, r.output[k])
		}
		t.Fatalf("go test -short ./... with nothing but Go failed (%v): %s\n%s%s", err, strings.Join(failed, ", "), b.String(), r.output[""])
	}
	t.Logf("go test -short ./... with nothing but Go passed in %s", r.took.Round(time.Second))

	var needed []string // what each skipped test said it needs
	for k, a := range r.action {
		if a != "skip" || !strings.Contains(k, " ") {
			continue
		}
		_, what, ok := strings.Cut(r.output[k], needs.SkipPrefix)
		if !ok {
			t.Errorf("%s skipped under -short without saying what it needs (test/needs):\n%s", k, r.output[k])
			continue
		}
		what, _, _ = strings.Cut(what, "\n")
		needed = append(needed, what)
	}
	for _, what := range []string{"PostgreSQL", "RabbitMQ", "Redis", "dynalite", "fauxqs", "rsvg-convert", "promtool", "systemd-nspawn", "root ("} {
		if !slices.ContainsFunc(needed, func(n string) bool { return strings.Contains(n, what) }) {
			t.Errorf("no test skipped under -short saying it needs %s: a test that needs it ran without it, or skipped saying something else", strings.TrimSuffix(what, " ("))
		}
	}
	t.Logf("%d tests skipped, each naming what it needs", len(needed))
	for _, k := range []string{
		module + "adapters/memory TestRideStoreContract",
		module + "adapters/inproc TestQueueContract",
		module + "test/e2e TestMemoryInprocEndToEnd",
	} {
		if r.action[k] != "pass" {
			t.Errorf("%s: %q under -short; want pass (it needs nothing but Go)", k, r.action[k])
		}
	}
}

// TestWithoutShortAMissingServerFailsNamingIt: the same harnesses, without
// -short and in the same isolation, fail (never skip), each naming the
// server or program it could not reach, so make test cannot pass on a
// machine that lacks one.
func TestWithoutShortAMissingServerFailsNamingIt(t *testing.T) {
	needs.Root(t, "a network namespace of its own, where no server's port is open")
	named := map[string]string{ // package: what its failure must name
		"adapters/postgres":            "PostgreSQL",
		"adapters/rabbitmq":            "RabbitMQ",
		"adapters/redis":               "Redis",
		"adapters/dynamo":              "dynalite",
		"adapters/sqs":                 "fauxqs",
		"cmd/skiload/internal/loadgen": "rsvg-convert",
	}
	args := []string{"test", "-count=1", "-json", "-run", "^(TestRideStoreContract|TestQueueContractQuorum|TestCacheContract|TestChartOfAShortRunDrawsLines)$"}
	for pkg := range named {
		args = append(args, "./"+pkg)
	}
	r, err := isolatedGo(t, args...)
	if err == nil {
		t.Fatal("go test without -short passed with no server reachable and nothing but Go on PATH; want it to fail")
	}
	for pkg, what := range named {
		all := ""
		for _, k := range slices.Sorted(maps.Keys(r.output)) {
			if k == module+pkg || strings.HasPrefix(k, module+pkg+" ") {
				all += r.output[k]
				if r.action[k] == "skip" && k != module+pkg {
					t.Errorf("%s skipped without -short; want it to fail naming %s:\n%s", k, what, r.output[k])
				}
			}
		}
		if r.action[module+pkg] != "fail" {
			t.Errorf("%s: %q without -short and without %s; want fail:\n%s", pkg, r.action[module+pkg], what, all)
		} else if !strings.Contains(all, what) {
			t.Errorf("%s failed without naming %s:\n%s", pkg, what, all)
		}
	}
}

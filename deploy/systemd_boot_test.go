package deploy

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/test/amqptest"
	"github.com/skidata/skidata/test/needs"
)

// TestSystemdUnitsBootUnderSystemd boots a Debian root (Debian's packages
// only, built once and cached by scripts/nspawn-root.sh) with
// systemd-nspawn --boot and installs deploy/systemd's units byte for byte
// the way the launch template's user-data does (useradd, daemon-reload,
// enable --now). The binary, the units and the environment file are
// read-only bind mounts and the root is a throw-away overlay
// (--volatile=overlay), so the cached root is never changed. The container
// shares the machine's network: skiapi listens on a loopback port the
// kernel picks (--listen 127.0.0.1:0), read from each main PID's "skidata
// serving" line in the journal, and uses the test RabbitMQ (127.0.0.1:5672
// or SKIDATA_TEST_AMQP_URL) on queues of its own, with the memory store.
//
// Each unit in turn (an instance runs one role), under its whole sandbox:
// the service becomes active and /readyz answers 200, running as skiapi
// with no new privileges, a seccomp filter and no capabilities; kill -9 of
// the main process is followed by a restart (Restart=always) with a new
// main PID that answers /readyz again; systemctl stop finishes within
// TimeoutStopSec without systemd resorting to SIGKILL, leaving no process
// behind.
func TestSystemdUnitsBootUnderSystemd(t *testing.T) {
	needs.Root(t, "systemd-nspawn boots the units in a container, against RabbitMQ")
	nspawn := needs.Program(t, "systemd-nspawn", "systemd-container")
	rootOut, err := exec.Command("../scripts/nspawn-root.sh").Output()
	if err != nil {
		t.Fatalf("scripts/nspawn-root.sh could not provide the Debian root: %v\n%s", err, stderrOf(err))
	}
	root := strings.TrimSpace(string(rootOut))

	dir := t.TempDir()
	bin := filepath.Join(dir, "skiapi")
	// Built as the other tests build it, so that the suite compiles skiapi
	// once: the root is the same Debian release as this machine, so a
	// binary linked against its C library runs there (`make release` builds
	// the static one and checks it runs).
	build := exec.Command("go", "build", "-o", bin, "../cmd/skiapi")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ../cmd/skiapi: %v\n%s", err, out)
	}

	prefix := amqptest.Prefix(t)
	amqptest.Open(t, rabbitmq.Config{URL: amqptest.URL(t), Prefix: prefix, MaxLength: compose.DefaultConfig().QueueCapacity})
	envFile := filepath.Join(dir, "skiapi.env")
	env := fmt.Sprintf("SKI_QUEUE=rabbitmq\nSKI_AMQP_URL=%s\nSKI_AMQP_PREFIX=%s\nSKI_LISTEN=127.0.0.1:0\n", amqptest.URL(t), prefix)
	if err := os.WriteFile(envFile, []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}

	mounts := []string{
		"--bind-ro=" + bin + ":/usr/local/bin/skiapi",
		"--bind-ro=" + envFile + ":/etc/skidata/skiapi.env",
	}
	for _, unit := range units {
		abs, err := filepath.Abs(unit)
		if err != nil {
			t.Fatal(err)
		}
		mounts = append(mounts, "--bind-ro="+abs+":/etc/systemd/system/"+filepath.Base(unit))
	}
	c := bootContainer(t, nspawn, root, mounts...)
	c.run(t, "useradd", "--system", "--no-create-home", "--shell", "/sbin/nologin", "skiapi")
	c.run(t, "systemctl", "daemon-reload")
	for _, unit := range units {
		name := filepath.Base(unit)
		t.Run(name, func(t *testing.T) { checkUnit(t, c, name) })
	}
}

// checkUnit enables and starts unit, kills its main process, stops it and
// checks systemd's and the service's answers at each step.
func checkUnit(t *testing.T, c *container, unit string) {
	c.run(t, "systemctl", "enable", "--now", unit)
	first, url := c.waitReady(t, unit, 0, 30*time.Second)
	t.Logf("active and ready at %s, main PID %d", url, first)

	// The sandbox is in force, not just written down: systemd inside a
	// container may drop a setting it cannot apply with only a warning.
	status, err := c.output("cat", fmt.Sprintf("/proc/%d/status", first))
	if err != nil {
		t.Fatalf("read the main process's status: %v\n%s", err, status)
	}
	for _, want := range []string{"NoNewPrivs:\t1", "Seccomp:\t2", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000"} {
		if !strings.Contains(status, "\n"+want+"\n") {
			t.Errorf("the main process's /proc/%d/status lacks %q:\n%s", first, want, status)
		}
	}
	if user, _ := c.output("stat", "-c", "%U", fmt.Sprintf("/proc/%d", first)); strings.TrimSpace(user) != "skiapi" {
		t.Errorf("the main process runs as %q, want skiapi", strings.TrimSpace(user))
	}

	// kill -9 of the main process: systemd starts it again after RestartSec.
	restartSec := c.duration(t, unit, "RestartUSec")
	c.run(t, "sh", "-c", fmt.Sprintf("kill -9 %d", first))
	second, readyz := c.waitReady(t, unit, first, restartSec+30*time.Second)
	if n := c.show(t, unit, "NRestarts"); n == "0" {
		t.Errorf("main PID changed from %d to %d but NRestarts is 0", first, second)
	}
	t.Logf("restarted after kill -9: main PID %d -> %d (RestartSec %s)", first, second, restartSec)

	// systemctl stop within the unit's budget, by SIGTERM alone.
	budget := c.duration(t, unit, "TimeoutStopUSec")
	cgroup := c.show(t, unit, "ControlGroup")
	start := time.Now()
	c.run(t, "systemctl", "stop", unit)
	took := time.Since(start)
	t.Logf("systemctl stop took %s (TimeoutStopSec %s)", took.Round(time.Millisecond), budget)
	if took > budget {
		t.Errorf("systemctl stop took %s, more than TimeoutStopSec %s", took, budget)
	}
	if s := c.show(t, unit, "ActiveState"); s != "inactive" {
		t.Errorf("after stop the unit is %q, want inactive", s)
	}
	if r := c.show(t, unit, "Result"); r != "success" {
		t.Errorf("after stop the unit's result is %q, want success (a timeout means systemd had to SIGKILL it)", r)
	}
	if p := c.show(t, unit, "MainPID"); p != "0" {
		t.Errorf("after stop MainPID is %s, want 0", p)
	}
	if out, err := c.output("sh", "-c", fmt.Sprintf("test ! -e /proc/%d", second)); err != nil {
		t.Errorf("process %d still exists after stop: %v %s", second, err, out)
	}
	if cgroup != "" {
		// systemd removes the unit's cgroup once it is empty; where it is
		// depends on the hierarchy the container got (unified or hybrid).
		var files []string
		for _, h := range []string{"", "/unified", "/systemd"} {
			files = append(files, "/sys/fs/cgroup"+h+cgroup+"/cgroup.procs")
		}
		if procs, _ := c.output("sh", "-c", "cat "+strings.Join(files, " ")+" 2>/dev/null"); strings.TrimSpace(procs) != "" {
			t.Errorf("processes left in the unit's cgroup %s after stop: %s", cgroup, procs)
		}
	}
	if resp, err := http.Get(readyz); err == nil {
		resp.Body.Close()
		t.Errorf("%s still answers (%d) after stop", readyz, resp.StatusCode)
	}
	c.run(t, "systemctl", "disable", unit)
	if t.Failed() {
		out, _ := c.output("journalctl", "--no-pager", "-u", unit)
		t.Logf("journal of %s:\n%s", unit, out)
	}
}

// container is a root booted by systemd-nspawn; leader is the host PID of
// its systemd (PID 1 inside), through which commands run with nsenter.
type container struct {
	leader int
}

// bootContainer starts systemd-nspawn --boot on root and waits until the
// container's systemd has finished booting. The machine's PID 1 is not
// necessarily systemd, so nspawn neither registers with machined nor asks
// for a scope (--register=no --keep-unit). The container is powered off
// (SIGTERM to nspawn, which halts the container's systemd) when the test
// ends, and killed by PID if that takes too long.
func bootContainer(t *testing.T, nspawn, root string, extra ...string) *container {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "nspawn.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("skidata-boot-%d", os.Getpid())
	args := append([]string{"--boot", "--register=no", "--keep-unit", "--volatile=overlay",
		"--machine=" + name, "--console=passive", "-D", root}, extra...)
	cmd := exec.Command(nspawn, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// If the test binary dies, nspawn is told to power the container off.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("systemd-nspawn: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	c := &container{}
	t.Cleanup(func() {
		defer logFile.Close()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			t.Errorf("the container did not power off within 60 s; killing systemd-nspawn (PID %d) and the container's init", cmd.Process.Pid)
			_ = cmd.Process.Kill()
			if c.leader > 0 {
				_ = syscall.Kill(c.leader, syscall.SIGKILL)
			}
			<-exited
		}
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("systemd-nspawn output:\n%s", out)
		}
	})

	// The container's init is the child of nspawn that runs systemd.
	deadline := time.Now().Add(30 * time.Second)
	for c.leader == 0 {
		select {
		case err := <-exited:
			out, _ := os.ReadFile(logPath)
			t.Fatalf("systemd-nspawn exited while booting (%v):\n%s", err, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no systemd started under systemd-nspawn (PID %d) within 30 s", cmd.Process.Pid)
		}
		c.leader = systemdChild(cmd.Process.Pid)
		time.Sleep(100 * time.Millisecond)
	}

	// is-system-running --wait returns when boot is over: "running", or
	// "degraded" when some unit of the base system failed (not ours).
	deadline = time.Now().Add(60 * time.Second)
	for {
		out, _ := c.output("systemctl", "is-system-running", "--wait")
		state := strings.TrimSpace(out)
		if state == "running" || state == "degraded" {
			if state == "degraded" {
				failed, _ := c.output("systemctl", "--failed", "--no-pager")
				t.Logf("the container booted degraded:\n%s", failed)
			}
			return c
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			t.Fatalf("the container did not finish booting within 60 s (state %q):\n%s", state, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// systemdChild is the PID of the child of pid whose command is systemd, or 0.
func systemdChild(pid int) int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, task := range tasks {
		raw, _ := os.ReadFile(task)
		for _, f := range strings.Fields(string(raw)) {
			child, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", child))
			if strings.TrimSpace(string(comm)) == "systemd" {
				return child
			}
		}
	}
	return 0
}

// output runs a command inside the container (all its namespaces).
func (c *container) output(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	full := append([]string{"-t", strconv.Itoa(c.leader), "-a"}, args...)
	out, err := exec.CommandContext(ctx, "nsenter", full...).CombinedOutput()
	return string(out), err
}

func (c *container) run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := c.output(args...); err != nil {
		t.Fatalf("in the container, %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// show is one property of unit.
func (c *container) show(t *testing.T, unit, prop string) string {
	t.Helper()
	out, err := c.output("systemctl", "show", "-p", prop, "--value", unit)
	if err != nil {
		t.Fatalf("systemctl show -p %s: %v\n%s", prop, err, out)
	}
	return strings.TrimSpace(out)
}

// duration is a time property of the unit ("45s", "5s", "1min 30s").
func (c *container) duration(t *testing.T, unit, prop string) time.Duration {
	t.Helper()
	v := c.show(t, unit, prop)
	d, err := time.ParseDuration(strings.NewReplacer("min", "m", " ", "").Replace(v))
	if err != nil {
		t.Fatalf("systemctl show -p %s = %q: %v", prop, v, err)
	}
	return d
}

// waitReady polls until unit is active with a main PID other than notPID
// that has logged the address it serves on and answers 200 to /readyz
// there; it returns that main PID and its /readyz URL.
func (c *container) waitReady(t *testing.T, unit string, notPID int, within time.Duration) (int, string) {
	t.Helper()
	deadline := time.Now().Add(within)
	client := &http.Client{Timeout: 2 * time.Second}
	var last string
	for {
		state := c.show(t, unit, "ActiveState")
		pid, _ := strconv.Atoi(c.show(t, unit, "MainPID"))
		if state == "active" && pid != 0 && pid != notPID {
			log, _ := c.output("journalctl", "--no-pager", "-o", "cat", "_PID="+strconv.Itoa(pid))
			if m := servingLine.FindStringSubmatch(log); m == nil {
				last = fmt.Sprintf("main PID %d has not logged where it serves", pid)
			} else {
				url := "http://" + m[1] + "/readyz"
				resp, err := client.Get(url)
				if err == nil {
					var body bytes.Buffer
					_, _ = body.ReadFrom(resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						return pid, url
					}
					last = fmt.Sprintf("%s answered %d: %s", url, resp.StatusCode, body.String())
				} else {
					last = err.Error()
				}
			}
		} else {
			last = fmt.Sprintf("unit %s, main PID %d", state, pid)
		}
		if time.Now().After(deadline) {
			out, _ := c.output("journalctl", "--no-pager", "-u", unit)
			t.Fatalf("%s not ready within %s (last: %s); journal:\n%s", unit, within, last, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// servingLine is skiapi's log line (the text format, the units' default)
// naming the address it listens on.
var servingLine = regexp.MustCompile(`msg="skidata serving" addr=(127\.0\.0\.1:\d+)`)

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

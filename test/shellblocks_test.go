package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"golang.org/x/sys/unix"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/test/amqptest"
	"github.com/skidata/skidata/test/needs"
	"github.com/skidata/skidata/test/pgtest"
	"github.com/skidata/skidata/test/poll"
)

// pagesNotRun are the pages whose sh blocks TestDocsShellBlocksRunAsPasted
// does not run, and why.
var pagesNotRun = map[string]string{
	"docs/benchmarks.md":  "its blocks are the recorded runs, minutes to hours each",
	"docs/reliability.md": "its blocks are make soak, minutes a mode (make test runs the short run as TestShortRunHoldsInEveryMode)",
	"docs/operations.md":  "its blocks run against AWS (the first day runs on a local stack in deploy/runbook_test.go)",
}

// notRunMarker opens a block that needs more than make test starts (an AWS
// account, minutes of load); the rest of its first line says what.
const notRunMarker = "# needs "

// examplePorts are the ports the pages' examples use, each replaced by a free
// one in the test: a page may start a server on each.
var examplePorts = []string{"8080", "8081", "4567"}

// TestDocsShellBlocksRunAsPasted runs the sh blocks of the README and of
// docs/, page by page, as a reader pastes them into one terminal: in bash
// with job control (kill %1 stops a job's whole process group, as in an
// interactive shell), one after another, with whatever the README's install
// block puts on PATH. The README runs first (it installs the programs with
// go install, here into a directory of the test's, which is on PATH); the
// other pages then run side by side, each in a shell of its own.
//
// The test changes what it must so that runs and other tests cannot meet:
// the example ports (8080, 8081, 4567) become free ones, in the text and
// as SKI_LISTEN; /tmp/ becomes a directory of the page's own; SKI_DB_SCHEMA
// and SKI_AMQP_PREFIX name a schema and queues of the page's own, removed
// afterwards. No other SKI_ or AWS_ variable reaches the shell, so a block
// that leans on an earlier page's exports fails.
//
// A block must exit 0 (bash -e), every command whose comment is a JSON
// value must print that value, a "Sample output of `CMD`" block must have
// the shape of what CMD printed, every process a page started must be gone
// once its last block ends, and the pages must leave the repository's files
// as they were.
func TestDocsShellBlocksRunAsPasted(t *testing.T) {
	needs.Server(t, "PostgreSQL, RabbitMQ, Node.js (dynalite, fauxqs), and bash, curl and git: the pages' blocks use them as pasted")
	needs.Programs(t, "bash", "curl", "git", "node:nodejs")
	root := repoRoot(t)
	before := gitStatus(t, root)
	gobin := t.TempDir()
	pages := docPages(t)
	t.Run("README.md", func(t *testing.T) { runPage(t, root, "README.md", gobin) })
	if _, err := os.Stat(filepath.Join(gobin, "skiapi")); err != nil {
		t.Fatalf("the README's blocks did not install skiapi into GOBIN (%s): the other pages call it by name", gobin)
	}
	t.Run("docs", func(t *testing.T) {
		for _, page := range pages[1:] {
			t.Run(filepath.Base(page), func(t *testing.T) {
				t.Parallel()
				runPage(t, root, page, gobin)
			})
		}
	})
	if after := gitStatus(t, root); after != before {
		t.Errorf("the pages' blocks changed the repository's files; git status --porcelain before:\n%s\nafter:\n%s", before, after)
	}
}

// gitStatus is `git status --porcelain` of the repository.
func gitStatus(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.Command("git", "status", "--porcelain")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git status: %v", err)
	}
	return string(out)
}

// A command is one logical line of a block (continuation lines joined),
// the expected answer its comment states (JSON), and where it is.
type command struct {
	id, text, want string
}

// commentJSON is the comment of a line when it is a JSON value (201, 260,
// {...}): what the command prints.
func commentJSON(line string) string {
	_, comment, ok := strings.Cut(line, " # ")
	comment = strings.TrimSpace(comment)
	if !ok || !json.Valid([]byte(comment)) {
		return ""
	}
	return comment
}

// runPage runs page's sh blocks in one bash session, as described above.
func runPage(t *testing.T, root, page, gobin string) {
	if why, ok := pagesNotRun[page]; ok {
		t.Skipf("%s is not run: %s", page, why)
	}
	text := readDoc(t, page)
	blocks := fences(text)
	tmp := t.TempDir()
	replace := []string{"/tmp/", tmp + "/"}
	portOf := map[string]string{}
	for _, p := range examplePorts {
		portOf[p] = freePort(t)
		replace = append(replace, p, portOf[p])
	}
	swap := func(s string) string {
		for i := 0; i < len(replace); i += 2 {
			if strings.HasPrefix(replace[i], "/") {
				s = strings.ReplaceAll(s, replace[i], replace[i+1])
			} else {
				s = regexp.MustCompile(`\b`+replace[i]+`\b`).ReplaceAllString(s, replace[i+1])
			}
		}
		return s
	}

	var cmds []command
	var samples []fence
	for bi, f := range blocks {
		if f.info == "text" && strings.Contains(f.before, "Sample output of `") {
			samples = append(samples, f)
		}
		if f.info != "sh" {
			continue
		}
		if len(f.lines) > 0 && strings.HasPrefix(f.lines[0], notRunMarker) {
			t.Logf("%s: block %d not run: %s", page, bi+1, strings.TrimPrefix(f.lines[0], "# "))
			continue
		}
		for li := 0; li < len(f.lines); li++ {
			line, first := f.lines[li], li
			for strings.HasSuffix(line, `\`) && li+1 < len(f.lines) {
				li++
				line += "\n" + f.lines[li]
			}
			if strings.TrimSpace(line) == "" {
				continue
			}
			cmds = append(cmds, command{id: fmt.Sprintf("%d.%d", bi+1, first+1), text: line, want: commentJSON(line)})
		}
	}
	if len(cmds) == 0 {
		t.Skipf("%s has no sh block to run", page)
	}

	env := []string{
		"GOBIN=" + gobin,
		"PATH=" + gobin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"SKI_LISTEN=127.0.0.1:" + portOf["8080"],
		"SKI_DB_SCHEMA=" + pgtest.Schema(t, "docs"),
		"SKI_AMQP_PREFIX=" + amqpPrefixRemovedAtEnd(t),
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "SKI_") || strings.HasPrefix(name, "AWS_") || name == "GOBIN" || name == "PATH" {
			continue
		}
		env = append(env, kv)
	}

	var script strings.Builder
	for _, c := range cmds {
		fmt.Fprintf(&script, "printf '\\n@@%s\\n'\n%s\n", c.id, swap(c.text))
	}
	scriptFile := filepath.Join(tmp, "page.sh")
	if err := os.WriteFile(scriptFile, []byte(script.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, terminal, err := runInTerminal(t, root, env, scriptFile, 4*time.Minute)
	if err != nil {
		t.Fatalf("%s: the blocks failed: %v\nscript:\n%s\nstdout:\n%s\nterminal (stderr):\n%s", page, err, script.String(), stdout, terminal)
	}

	outputs := map[string]string{}
	for _, chunk := range strings.Split(stdout, "\n@@")[1:] {
		id, out, _ := strings.Cut(chunk, "\n")
		outputs[id] = strings.TrimSpace(out)
	}
	checked := 0
	for _, c := range cmds {
		if c.want == "" {
			continue
		}
		checked++
		if got := outputs[c.id]; !jsonEqual(got, c.want) {
			t.Errorf("%s, block line %s: %s\n printed %q\n want    %s\nterminal (stderr):\n%s", page, c.id, c.text, got, c.want, terminal)
		}
	}
	for _, s := range samples {
		_, cmdText, _ := strings.Cut(s.before, "Sample output of `")
		cmdText, _, _ = strings.Cut(cmdText, "`")
		found := false
		for _, c := range cmds {
			text, _, _ := strings.Cut(c.text, " # ")
			if strings.TrimSpace(text) == cmdText {
				found = true
				if got, want := outputShape(swap(outputs[c.id])), outputShape(swap(strings.Join(s.lines, "\n"))); !reflect.DeepEqual(got, want) {
					t.Errorf("%s: the sample output of `%s` is not what it prints today.\nits lines' labels: %q\ntoday's:           %q\ntoday's output:\n%s", page, cmdText, want, got, outputs[c.id])
				}
			}
		}
		if !found {
			t.Errorf("%s shows the sample output of `%s`, which none of its blocks runs", page, cmdText)
		}
	}
	t.Logf("%s: %d commands run, %d answers checked", page, len(cmds), checked)
}

// outputShape is what a sample output must keep from a real run: each
// line's label (the text before its first colon, or a "== ... ==" header,
// numbers replaced by #), so figures may differ but not the lines.
func outputShape(out string) []string {
	digits := regexp.MustCompile(`[0-9][0-9.,]*`)
	var shape []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "==") {
			line, _, _ = strings.Cut(line, ":")
		}
		shape = append(shape, digits.ReplaceAllString(line, "#"))
	}
	return shape
}

// freePort is a loopback port nothing listens on now. The pages' text
// names fixed ports, so one must be chosen before the page starts its
// server; another process could take it in between, which the kernel's
// choice of a fresh ephemeral port makes unlikely.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// amqpPrefixRemovedAtEnd is a RabbitMQ prefix of the test's own; the
// queues and exchange skiapi declares under it (one shard, the default)
// are deleted when the test ends.
func amqpPrefixRemovedAtEnd(t *testing.T) string {
	t.Helper()
	prefix, url := amqptest.Prefix(t), amqptest.URL(t)
	t.Cleanup(func() {
		conn, err := amqp.Dial(url)
		if err != nil {
			t.Errorf("delete the pages' queues %s.*: %v", prefix, err)
			return
		}
		defer conn.Close()
		ch, err := conn.Channel()
		if err != nil {
			t.Errorf("delete the pages' queues %s.*: %v", prefix, err)
			return
		}
		cfg := rabbitmq.Config{Prefix: prefix}
		for _, q := range []string{cfg.ShardQueue(0), cfg.DeadLetterQueue()} {
			if _, err := ch.QueueDelete(q, false, false, false); err != nil {
				t.Errorf("delete queue %s: %v", q, err)
				return
			}
		}
		if err := ch.ExchangeDelete(cfg.DeadLetterExchange(), false, false); err != nil {
			t.Errorf("delete exchange %s: %v", cfg.DeadLetterExchange(), err)
		}
	})
	return prefix
}

// runInTerminal runs `bash -e -m scriptFile` in dir as the leader of a
// session of its own whose controlling terminal is a new pseudo-terminal
// (so bash has job control, as in a reader's terminal): stdin and stderr
// are the terminal, stdout a pipe. It returns stdout and what reached the
// terminal. Every process of the session must be gone within 30 s of bash's
// exit (a job the blocks did not stop fails the test); whatever is left is
// killed.
func runInTerminal(t *testing.T, dir string, env []string, scriptFile string, limit time.Duration) (stdout, terminal string, err error) {
	t.Helper()
	ptmx, tty, err := openPTY()
	if err != nil {
		t.Fatalf("a pseudo-terminal for bash's job control: %v", err)
	}
	defer ptmx.Close()
	var term bytes.Buffer
	var termMu sync.Mutex
	termDone := make(chan struct{})
	go func() {
		defer close(termDone)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			termMu.Lock()
			term.Write(buf[:n])
			termMu.Unlock()
			if err != nil {
				return
			}
		}
	}()

	// stdout is a file, not a pipe: a job left running keeps its copy
	// open, and Wait would wait for it to close a pipe.
	out, err := os.Create(scriptFile + ".stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-m", scriptFile)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, out, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	cmd.Cancel = func() error { killSession(cmd.Process.Pid); return nil } // bash leads the session: its pid is the session's id
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		tty.Close()
		t.Fatalf("bash: %v", err)
	}
	tty.Close()
	sid := cmd.Process.Pid
	t.Cleanup(func() { killSession(sid) })
	runErr := cmd.Wait()
	if ctx.Err() != nil {
		runErr = fmt.Errorf("still running after %s: %w", limit, runErr)
	}
	if runErr == nil {
		var left []string
		poll.Until(t, 30*time.Second, "the processes the blocks started", func() string {
			if left = sessionProcesses(sid); len(left) > 0 {
				return fmt.Sprintf("running (%s)", strings.Join(left, ", "))
			}
			return ""
		})
	}
	killSession(sid)
	_ = ptmx.SetReadDeadline(time.Now().Add(2 * time.Second))
	<-termDone
	termMu.Lock()
	defer termMu.Unlock()
	stdoutText, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(stdoutText), strings.ReplaceAll(term.String(), "\r\n", "\n"), runErr
}

// openPTY opens a new pseudo-terminal pair: its master, and its slave as a
// file a child can take as its controlling terminal.
func openPTY() (ptmx, tty *os.File, err error) {
	ptmx, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(ptmx.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		ptmx.Close()
		return nil, nil, fmt.Errorf("unlockpt: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		ptmx.Close()
		return nil, nil, fmt.Errorf("ptsname: %w", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		ptmx.Close()
		return nil, nil, err
	}
	return ptmx, tty, nil
}

// sessionProcesses lists "pid command" of every process in session sid.
func sessionProcesses(sid int) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session ...; comm may hold spaces.
		end := bytes.LastIndexByte(stat, ')')
		if end < 0 {
			continue
		}
		fields := strings.Fields(string(stat[end+1:]))
		if len(fields) < 4 {
			continue
		}
		if s, _ := strconv.Atoi(fields[3]); s == sid && fields[0] != "Z" {
			start := bytes.IndexByte(stat, '(')
			out = append(out, fmt.Sprintf("%d %s", pid, stat[start+1:end]))
		}
	}
	return out
}

// killSession sends SIGKILL to every process of session sid.
func killSession(sid int) {
	for _, p := range sessionProcesses(sid) {
		pidText, _, _ := strings.Cut(p, " ")
		if pid, err := strconv.Atoi(pidText); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

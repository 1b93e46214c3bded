package test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skidata/skidata/app/compose"
)

// TestReadmeDocumentsEveryFlag keeps the front door honest: a flag added to
// the service without a row in the README's configuration table fails here.
func TestReadmeDocumentsEveryFlag(t *testing.T) {
	readme := readReadme(t)
	fs := flag.NewFlagSet("skiapi", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg := compose.DefaultConfig()
	cfg.RegisterFlags(fs)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if !strings.Contains(readme, "`--"+f.Name+"`") {
			t.Errorf("README.md does not document --%s (%s)", f.Name, f.Usage)
		}
	})
	if n < 10 {
		t.Fatalf("only %d flags registered; the test is not looking at the service's flags", n)
	}
}

// readReadme is README.md's text.
func readReadme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readmeBlock returns the first ```sh block after the heading in README.md.
func readmeBlock(t *testing.T, heading string) []string {
	t.Helper()
	readme := readReadme(t)
	_, section, ok := strings.Cut(readme, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q heading", heading)
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatalf("README.md's %q section has no ```sh block", heading)
	}
	block, _, ok = strings.Cut(block, "\n```")
	if !ok {
		t.Fatalf("README.md's %q block is not closed", heading)
	}
	return strings.Split(block, "\n")
}

// TestReadmeTryItWorksAsPasted runs the README's "Try it" block, read from
// README.md itself, in bash as a new user would paste it: skiapi (built
// from this tree) on PATH, the only change being the port (a free one
// instead of 8080, passed as SKI_LISTEN and substituted in the URLs). Every
// command whose comment is a JSON value (201, 260, {...}) must print exactly
// that; the block must exit 0 and leave no server behind.
func TestReadmeTryItWorksAsPasted(t *testing.T) {
	lines := readmeBlock(t, "## Try it")
	text := strings.Join(lines, "\n")
	if !strings.Contains(text, "localhost:8080") || !strings.HasPrefix(lines[0], "skiapi &") {
		t.Fatalf("the Try it block no longer starts `skiapi &` and talks to localhost:8080; update this test with it:\n%s", text)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin, "./cmd/skiapi")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/skiapi: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()

	// Mark each line's output so it can be matched with its comment.
	var script strings.Builder
	for i, l := range lines {
		if strings.HasSuffix(strings.TrimSpace(l), `\`) {
			t.Fatalf("line %d continues on the next; this test reads one command per line: %s", i+1, l)
		}
		fmt.Fprintf(&script, "printf '\\n@@%d\\n'\n%s\n", i, strings.ReplaceAll(l, "localhost:8080", "localhost:"+port))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", script.String())
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "SKI_LISTEN=127.0.0.1:"+port)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t.Cleanup(func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whatever the block left running
		}
	})
	if err := cmd.Run(); err != nil {
		t.Fatalf("the Try it block failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}

	outputs := map[int]string{}
	for _, chunk := range strings.Split(stdout.String(), "\n@@")[1:] {
		num, out, _ := strings.Cut(chunk, "\n")
		i, err := strconv.Atoi(num)
		if err != nil {
			t.Fatalf("unexpected marker %q in the output", num)
		}
		outputs[i] = strings.TrimSpace(out)
	}
	checked := 0
	for i, l := range lines {
		_, comment, ok := strings.Cut(l, " # ")
		comment = strings.TrimSpace(comment)
		if !ok || !json.Valid([]byte(comment)) {
			continue // prose, not an answer
		}
		checked++
		if !jsonEqual(outputs[i], comment) {
			t.Errorf("README line %q\n printed %q\n want    %q", l, outputs[i], comment)
		}
	}
	if checked < 6 {
		t.Errorf("only %d lines of the Try it block show an answer to check; want the POSTs' 201s, 260 and the JSON answers", checked)
	}
	// kill %1 at the end of the block stops the server: the port must close.
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("the server still listens on %s after the block's last line", port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

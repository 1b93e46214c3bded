package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/skidata/skidata/test/sqstest"
)

// skiapiBuild is cmd/skiapi compiled once for every test of the package
// (each link takes seconds), in a directory TestMain removes.
var skiapiBuild struct {
	once     sync.Once
	dir, bin string
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	sqstest.StopStarted()
	if skiapiBuild.dir != "" {
		_ = os.RemoveAll(skiapiBuild.dir)
	}
	os.Exit(code)
}

// buildSkiapi returns the path of cmd/skiapi, compiled on first use.
func buildSkiapi(t *testing.T) string {
	t.Helper()
	b := &skiapiBuild
	b.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			b.err = fmt.Errorf("the go command is needed to build skiapi for this test: %w", err)
			return
		}
		if b.dir, err = os.MkdirTemp("", "skidata-e2e-"); err != nil {
			b.err = err
			return
		}
		bin := filepath.Join(b.dir, "skiapi")
		if out, err := exec.Command(goBin, "build", "-o", bin, "github.com/skidata/skidata/cmd/skiapi").CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build skiapi: %w\n%s", err, out)
			return
		}
		b.bin = bin
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

package test

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skidata/skidata/app/compose"
)

// TestReadmeDocumentsEveryFlag keeps the front door honest: a flag added to
// the service without a row in the README's configuration table fails here.
func TestReadmeDocumentsEveryFlag(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("skiapi", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg := compose.DefaultConfig()
	cfg.RegisterFlags(fs)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if !strings.Contains(string(readme), "`--"+f.Name+"`") {
			t.Errorf("README.md does not document --%s (%s)", f.Name, f.Usage)
		}
	})
	if n < 10 {
		t.Fatalf("only %d flags registered; the test is not looking at the service's flags", n)
	}
}
